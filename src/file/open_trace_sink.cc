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

std::unique_ptr<TraceSink> open_trace_sink(const std::string& path, SinkKind kind, int level, std::string* error) {
  switch (kind) {
    case SinkKind::kGzipMembers: return GzipMemberSink::open(path, level, error);
    case SinkKind::kPlainFile: break;
  }
  return PlainFileSink::open(path, error);
}

}  // namespace dftracer
