#include "unique_trace_sink.h"

#include "trace_file_name.h"

namespace dftracer {

std::unique_ptr<TraceSink> open_unique_trace_sink(const std::string& prefix, const std::string& app, int64_t pid,
                                                  bool compress, int level, std::string* error) {
  for (unsigned n = 0; n <= kMaxTraceNameAlternatives; ++n) {
    std::string path = trace_file_name(prefix, app, pid, compress, n);
    bool taken = false;
    std::unique_ptr<TraceSink> sink = open_trace_sink(path, sink_kind_for(path), level, error, &taken);
    if (sink || !taken) return sink;
  }
  *error = "cannot create a trace file: " + trace_file_name(prefix, app, pid, compress) + " and its " +
           std::to_string(kMaxTraceNameAlternatives) + " alternatives (\"-1\" to \"-" +
           std::to_string(kMaxTraceNameAlternatives) + "\" after the pid) all exist";
  return nullptr;
}

}  // namespace dftracer
