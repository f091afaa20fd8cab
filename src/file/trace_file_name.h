// The one place trace file names are built: "<prefix>-<app>-<pid>.pfw", or
// ".pfw.gz" when compressed. The session names its file with it, and the C
// API (dft_trace_file_name) and Python (_core.trace_file_name) expose it, so
// nothing re-derives a name or takes one apart: an app name may contain '-'
// ("my-app"), which no split on '-' can undo.
#ifndef DFTRACER_SRC_FILE_TRACE_FILE_NAME_H_
#define DFTRACER_SRC_FILE_TRACE_FILE_NAME_H_

#include <cstdint>
#include <string>

namespace dftracer {

std::string trace_file_name(const std::string& prefix, const std::string& app, int64_t pid, bool compress);

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_TRACE_FILE_NAME_H_
