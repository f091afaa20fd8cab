// Choosing and opening a sink: by kind, or by the file name (sink_kind_for).
#include "gzip_member_sink.h"
#include "plain_file_sink.h"
#include "trace_sink.h"

namespace dftracer {

SinkKind sink_kind_for(const std::string& path) {
  static const char kGz[] = ".gz";
  size_t n = sizeof kGz - 1;
  bool gz = path.size() >= n && path.compare(path.size() - n, n, kGz) == 0;
  return gz ? SinkKind::kGzipMembers : SinkKind::kPlainFile;
}

std::unique_ptr<TraceSink> open_trace_sink(const std::string& path, SinkKind kind, int level, std::string* error,
                                           bool* taken) {
  bool name_taken = false;
  std::unique_ptr<TraceSink> sink;
  switch (kind) {
    case SinkKind::kGzipMembers: sink = GzipMemberSink::open(path, level, error, &name_taken); break;
    case SinkKind::kPlainFile: sink = PlainFileSink::open(path, error, &name_taken); break;
  }
  if (taken != nullptr) *taken = name_taken;
  return sink;
}

}  // namespace dftracer
