// TraceSink: where the formatted bytes go. The writer hands over one chunk
// of complete lines at a time; a sink keeps chunks whole (a crash leaves
// whole chunks in a file, never half of one):
//   PlainFileSink   (.pfw)    the bytes as they are (plain_file_sink.h);
//   GzipMemberSink  (.pfw.gz) one gzip member per chunk plus a `.idx` line
//                             per member (gzip_member_sink.h);
//   MemorySink      the bytes kept in memory, for unit tests (memory_sink.h).
// The base holds no file descriptor: what a sink writes to is its own. A
// failed write (full disk, file system gone) warns once, marks the sink
// failed and the chunk's events as lost; the traced program goes on.
#ifndef DFTRACER_SRC_FILE_TRACE_SINK_H_
#define DFTRACER_SRC_FILE_TRACE_SINK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "event_observer.h"

namespace dftracer {

class TraceSink {
 public:
  virtual ~TraceSink() = default;

  // Takes `len` bytes holding `lines` complete lines. False when they did
  // not all arrive (the writer counts the lines as dropped).
  virtual bool write_chunk(const char* data, size_t len, uint64_t lines) = 0;
  // No more chunks: closes whatever the sink writes to. Idempotent.
  virtual void close() = 0;
  // The descriptors the sink writes to, appended to *out (none for sinks
  // without a file). The writer thread keeps them in a descriptor table of
  // its own (writer.cc); every other thread's copies are closed.
  virtual void descriptors(std::vector<int>* out) const { (void)out; }
  // Forgets those descriptors without closing them: in a forked child the
  // numbers name the child's own files, or nothing. Later close() and the
  // destructor then touch no descriptor.
  virtual void forget_descriptors() {}
  // The sink's index of what it writes, to be told about every line the
  // formatter writes from now on (TraceFormatter::set_observer), or null.
  virtual EventObserver* event_observer() { return nullptr; }

  // The file name (or a description for sinks without one).
  const std::string& path() const { return path_; }
  // Bytes that reached the destination (compressed bytes for gzip).
  uint64_t bytes_written() const { return bytes_written_; }
  bool failed() const { return failed_; }

 protected:
  explicit TraceSink(std::string path) : path_(std::move(path)) {}
  // Warns (once) that writing failed with errno `err`, and marks the sink
  // failed: later chunks are refused.
  void report_failure(int err);

  std::string path_;
  uint64_t bytes_written_ = 0;
  bool failed_ = false;
};

// The kinds of trace file a session can write.
enum class SinkKind {
  kPlainFile,    // .pfw
  kGzipMembers,  // .pfw.gz (+ .pfw.gz.idx)
};

// The kind a file name asks for: gzip members for a name ending in ".gz".
SinkKind sink_kind_for(const std::string& path);

// Opens a sink of `kind` writing the new file `path`: never an existing
// file, never through a symlink (OutputFile::create_new); `level` is the gzip
// level. On failure returns nullptr and sets *error to a one-line reason,
// and *taken (when given) to true when the only trouble is that the name is
// in use -- the file, or for gzip its ".idx" -- so another name may be tried
// (unique_trace_sink.h).
std::unique_ptr<TraceSink> open_trace_sink(const std::string& path, SinkKind kind, int level, std::string* error,
                                           bool* taken = nullptr);

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_TRACE_SINK_H_
