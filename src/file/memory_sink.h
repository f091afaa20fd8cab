// MemorySink: keeps every chunk's bytes in memory, for unit tests of the
// formatter and the writer that need no file. Can be told to fail, to test
// what happens when a write does.
#ifndef DFTRACER_SRC_FILE_MEMORY_SINK_H_
#define DFTRACER_SRC_FILE_MEMORY_SINK_H_

#include <cerrno>
#include <string>
#include <vector>

#include "trace_sink.h"

namespace dftracer {

class MemorySink final : public TraceSink {
 public:
  MemorySink() : TraceSink("<memory>") {}

  bool write_chunk(const char* data, size_t len, uint64_t lines) override {
    if (failed_ || fail_writes_) {
      report_failure(EIO);
      return false;
    }
    bytes_.append(data, len);
    chunk_lines_.push_back(lines);
    bytes_written_ += len;
    return true;
  }
  void close() override { closed_ = true; }

  const std::string& bytes() const { return bytes_; }
  // The `lines` of each chunk taken, in order.
  const std::vector<uint64_t>& chunk_lines() const { return chunk_lines_; }
  bool closed() const { return closed_; }
  void fail_writes(bool on) { fail_writes_ = on; }

 private:
  std::string bytes_;
  std::vector<uint64_t> chunk_lines_;
  bool closed_ = false;
  bool fail_writes_ = false;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_MEMORY_SINK_H_
