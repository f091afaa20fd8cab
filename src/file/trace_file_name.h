// The one place trace file names are built: "<prefix>-<app>-<pid>.pfw", or
// ".pfw.gz" when compressed, "<prefix>-<app>-rank<R>-<pid>.pfw[.gz]" in a
// process started with RANK set, and "<prefix>-<app>-<pid>-<n>.pfw[.gz]" for the
// n-th alternative when that name is taken (unique_trace_sink.h picks n).
// The session names its file with it, and the C API (dft_trace_file_name)
// and Python (_core.trace_file_name) expose it, so nothing re-derives a name
// or takes one apart: an app name may contain '-' ("my-app"), which no split
// on '-' can undo.
#ifndef DFTRACER_SRC_FILE_TRACE_FILE_NAME_H_
#define DFTRACER_SRC_FILE_TRACE_FILE_NAME_H_

#include <cstdint>
#include <string>

namespace dftracer {

// A prefix that names a directory (ends in '/', is empty, or is an existing
// directory) gets the base name "dftracer" inside it: "runs/" gives
// "runs/dftracer-<app>-<pid>.pfw.gz", never "runs/-<app>-<pid>.pfw.gz" (a
// hidden-looking name that starts with '-' and that shell tools take for an
// option). `n` > 0 appends "-<n>" after the pid. `rank` >= 0 (RANK in the
// environment at start) puts "rank<R>" before the pid:
// "<prefix>-<app>-rank<R>-<pid>.pfw.gz", so a job's files sort by rank and
// a glob such as "*-rank3-*" finds one rank's.
std::string trace_file_name(const std::string& prefix, const std::string& app, int64_t pid, bool compress,
                            unsigned n = 0, int64_t rank = -1);

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_TRACE_FILE_NAME_H_
