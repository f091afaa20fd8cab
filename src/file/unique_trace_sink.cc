#include "unique_trace_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trace_file_name.h"

namespace dftracer {

std::unique_ptr<TraceSink> open_unique_trace_sink(const std::string& prefix, const std::string& app, int64_t pid,
                                                  bool compress, int level, std::string* error,
                                                  int64_t rank) {
  for (unsigned n = 0; n <= kMaxTraceNameAlternatives; ++n) {
    std::string path = trace_file_name(prefix, app, pid, compress, n, rank);
    bool taken = false;
    std::unique_ptr<TraceSink> sink = open_trace_sink(path, sink_kind_for(path), level, error, &taken);
    if (sink || !taken) return sink;
  }
  *error = "cannot create a trace file: " + trace_file_name(prefix, app, pid, compress, 0, rank) + " and its " +
           std::to_string(kMaxTraceNameAlternatives) + " alternatives (\"-1\" to \"-" +
           std::to_string(kMaxTraceNameAlternatives) + "\" after the pid) all exist";
  return nullptr;
}

std::string relink_trace_file(const std::string& old_path, const std::string& prefix, const std::string& app,
                              int64_t pid, bool compress, std::string* error, int64_t rank) {
  const std::string old_index = old_path + ".idx";
  const bool has_index = ::access(old_index.c_str(), F_OK) == 0;
  for (unsigned n = 0; n <= kMaxTraceNameAlternatives; ++n) {
    std::string path = trace_file_name(prefix, app, pid, compress, n, rank);
    if (path == old_path) return path;
    // link() claims a name as O_EXCL does: it never replaces a file or
    // follows a planted symlink at the new name.
    if (::link(old_path.c_str(), path.c_str()) != 0) {
      if (errno == EEXIST) continue;
      *error = "cannot move trace file " + old_path + " to " + path + ": " + std::strerror(errno);
      return "";
    }
    if (has_index && ::link(old_index.c_str(), (path + ".idx").c_str()) != 0) {
      int err = errno;
      ::unlink(path.c_str());
      if (err == EEXIST) continue;  // a stale index there: that name is not free
      *error = "cannot move trace index " + old_index + ": " + std::strerror(err);
      return "";
    }
    ::unlink(old_path.c_str());
    if (has_index) ::unlink(old_index.c_str());
    return path;
  }
  *error = "cannot move trace file " + old_path + ": " + trace_file_name(prefix, app, pid, compress, 0, rank) +
           " and its alternatives all exist";
  return "";
}

}  // namespace dftracer
