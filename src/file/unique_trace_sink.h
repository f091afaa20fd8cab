// Opening a session's trace file under a name no one else holds. The name
// is trace_file_name(prefix, app, pid, rank); when that is taken -- another
// process given the same process_id, a reused pid, a re-init in this
// process, a leftover file or a planted symlink -- the next free
// "<prefix>-<app>-<pid>-<n>" is used instead. Names are claimed with an
// exclusive create, so two processes racing for one name never share it, and
// an existing file is never truncated or written through.
#ifndef DFTRACER_SRC_FILE_UNIQUE_TRACE_SINK_H_
#define DFTRACER_SRC_FILE_UNIQUE_TRACE_SINK_H_

#include <cstdint>
#include <memory>
#include <string>

#include "trace_sink.h"

namespace dftracer {

// How many alternatives ("-1" .. "-N") are tried before giving up.
constexpr unsigned kMaxTraceNameAlternatives = 1000;

// The sink on the first free name (its path() says which), or nullptr with
// a one-line *error when none could be created.
std::unique_ptr<TraceSink> open_unique_trace_sink(const std::string& prefix, const std::string& app, int64_t pid,
                                                  bool compress, int level, std::string* error,
                                                  int64_t rank = -1);

// Gives the open trace file `old_path` (and its .idx, if any) the first free
// name built from `prefix` as above, by hard link then unlink, so the open
// descriptors go on writing into it and no event moves. Returns the new path,
// or "" with a one-line *error (another file system: EXDEV, say), the old
// name then untouched.
std::string relink_trace_file(const std::string& old_path, const std::string& prefix, const std::string& app,
                              int64_t pid, bool compress, std::string* error, int64_t rank = -1);

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_UNIQUE_TRACE_SINK_H_
