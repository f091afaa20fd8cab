#include "plain_file_sink.h"

#include <cerrno>
#include <cstring>

namespace dftracer {

std::unique_ptr<TraceSink> PlainFileSink::open(const std::string& path, std::string* error, bool* taken) {
  std::unique_ptr<PlainFileSink> sink(new PlainFileSink(path));
  if (!sink->file_.create_new(path)) {
    *taken = errno == EEXIST;
    *error = "cannot create trace file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  return sink;
}

bool PlainFileSink::write_chunk(const char* data, size_t len, uint64_t) {
  if (failed_) return false;
  if (int err = file_.write_all(data, len)) {
    report_failure(err);
    return false;
  }
  bytes_written_ += len;
  return true;
}

}  // namespace dftracer
