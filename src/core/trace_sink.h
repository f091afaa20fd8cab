// TraceSink: where formatted JSON lines go. The writer hands over one chunk
// of complete lines at a time; each chunk reaches the file with a single
// write(), so a crash leaves whole chunks and never half of one:
//   PlainSink  (.pfw)    the bytes as they are;
//   GzipSink   (.pfw.gz) one complete gzip member per chunk, plus one line
//              per member in `<file>.idx` ("offset size raw_size lines") so
//              readers can inflate members in parallel without scanning.
// A failed write (full disk, file system gone) warns once, marks the sink
// failed and the chunk's events as lost; the traced program goes on.
#ifndef DFTRACER_SRC_CORE_TRACE_SINK_H_
#define DFTRACER_SRC_CORE_TRACE_SINK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dftracer {

class TraceSink {
 public:
  virtual ~TraceSink();

  // Writes `len` bytes holding `lines` complete lines. False when the bytes
  // did not all reach the file.
  virtual bool write_chunk(const char* data, size_t len, uint64_t lines) = 0;

  // Closes the file (and index). Warns if the file was deleted meanwhile.
  void close();

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }
  bool failed() const { return failed_; }

 protected:
  TraceSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  // write() all of it, retrying on EINTR and short writes.
  bool write_all(int fd, const char* data, size_t len);
  void report_failure(int err);

  int fd_;
  std::string path_;
  uint64_t bytes_written_ = 0;
  bool failed_ = false;
  int extra_fd_ = -1;  // the index, for GzipSink
};

// Opens `path` for writing (created or truncated). On failure returns
// nullptr and sets *error to a one-line reason.
std::unique_ptr<TraceSink> open_trace_sink(const std::string& path, bool compress, int level,
                                           std::string* error);

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_TRACE_SINK_H_
