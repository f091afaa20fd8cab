// GzipMemberSink: a .pfw.gz file made of one complete gzip member per chunk
// (any gzip reader inflates the concatenation), plus one line per member in
// `<file>.idx` (version 2, member_index.h: offsets and sizes, so readers can
// inflate members in parallel without scanning, and each member's event
// counts, times and per-name totals, plus the whole file's summary at
// finalize). The index is optional: if it cannot be written it is dropped
// and readers scan the members instead.
#ifndef DFTRACER_SRC_FILE_GZIP_MEMBER_SINK_H_
#define DFTRACER_SRC_FILE_GZIP_MEMBER_SINK_H_

#include <memory>
#include <string>
#include <vector>

#include "member_index.h"
#include "output_file.h"
#include "trace_sink.h"

namespace dftracer {

class MemberCompressor;

// The compressed member's bytes: grown to the compressor's bound, never
// zero-filled (a std::vector resized to the bound cleared up to a megabyte
// per chunk: ~3 % of the writer's time).
class MemberBytes {
 public:
  unsigned char* room(size_t n) {
    if (n > cap_) {
      buf_.reset(new unsigned char[n]);
      cap_ = n;
    }
    return buf_.get();
  }
  void set_size(size_t n) { size_ = n; }
  const unsigned char* data() const { return buf_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<unsigned char[]> buf_;
  size_t cap_ = 0, size_ = 0;
};

class GzipMemberSink final : public TraceSink {
 public:
  // nullptr (and *error) when `path` cannot be created; *taken when `path`
  // or `path`.idx exists already. `level`: 1-9.
  static std::unique_ptr<TraceSink> open(const std::string& path, int level, std::string* error, bool* taken);

  ~GzipMemberSink() override;
  bool write_chunk(const char* data, size_t len, uint64_t lines) override;
  void close() override;
  void descriptors(std::vector<int>* out) const override;
  void forget_descriptors() override;
  EventObserver* event_observer() override { return index_stats_.get(); }

 private:
  GzipMemberSink(const std::string& path, int level);
  void drop_index();  // the index file failed: stop writing it (readers then scan)

  OutputFile file_;
  OutputFile index_;
  std::unique_ptr<MemberCompressor> z_;
  MemberBytes member_;
  std::unique_ptr<MemberIndex> index_stats_;  // null when no index file was opened; kept when it is dropped
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_GZIP_MEMBER_SINK_H_
