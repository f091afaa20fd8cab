// Multi-member gzip support: the member index sidecar, scanning for member
// headers, and inflating one member as a stream.
//
// Our writer emits one gzip member per flushed chunk and (optionally) a sidecar
// `<file>.pfw.gz.idx` describing each member (trace_index.hpp reads both its
// versions: 1, "<offset> <size> <uncompressed_size> <num_lines>" a line, and
// 2, the write-time index). Members are independent, so with their offsets
// known they inflate in parallel.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dftracer::analyze {

struct GzipIndexEntry {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t uncompressed = 0;
  uint64_t lines = 0;
};

enum class IndexStatus { Absent, Usable, Invalid };

// A member's text is held until the member inflates to its checked end (its
// gzip CRC and length), up to this much: a damaged member then gives none of
// its lines -- a flipped byte can inflate to plausible lines with wrong
// values before the CRC check fails -- and is counted as one corrupt member.
// Past it (a huge single-member file) the text is handed on as it comes.
inline constexpr size_t kHeldMemberBytes = 16u << 20;

// One member's text while it is held (kHeldMemberBytes).
struct HeldMemberText {
  std::string text;
  bool handed_on = false;  // past the limit: the text goes on as it inflates

  void reset() {
    text.clear();
    handed_on = false;
  }
  // Holds p[0, n), or hands it (and what was held) to feed(p, n) once past the limit.
  template <class Feed>
  void add(const char* p, size_t n, Feed&& feed) {
    if (handed_on) return feed(p, n);
    text.append(p, n);
    if (text.size() < kHeldMemberBytes) return;
    handed_on = true;
    feed(text.data(), text.size());
    text.clear();
  }
};

// Where an index (entries sorted by offset, as load_gzip_index gives them)
// says members start. With one, every reader inflates a member within its
// own indexed bytes and, after a damaged member, goes on at the next indexed
// start: so a damaged member is one corrupt member, counted once by whichever
// piece of the file holds it, and a runaway inflate of damaged data never
// swallows the intact members after it (as resynchronising by scanning,
// from where the inflate stopped, could).
struct IndexedStarts {
  const std::vector<GzipIndexEntry>* index = nullptr;
  // The end of the member indexed as starting at `offset`, or `size` when none is.
  size_t member_end(size_t offset, size_t size) const;
  // The first indexed start after `offset`, or SIZE_MAX when there is none.
  size_t next_after(size_t offset) const;
};

// Loads `<gz_path>.idx` (trace_index.cpp; load_trace_index() gives the
// write-time statistics too). Usable only when the entries tile the file from offset 0
// without gaps and each starts with a gzip header; entries may stop short of the
// end of the file (members written after the index was), the reader then walks
// the rest. Anything else is Invalid and the reader falls back to scanning,
// including an .idx that is not a regular file (a FIFO, a device) or is larger
// than any index of this file could be (5x the file plus 4 KiB).
IndexStatus load_gzip_index(const std::string& gz_path, const uint8_t* data, size_t size,
                            std::vector<GzipIndexEntry>& out);

// True when `p` starts a plausible gzip member header (magic, deflate, no reserved flags).
bool is_gzip_header(const uint8_t* p, size_t avail);

// Offset of the first plausible member header at or after `from`, or `size`.
size_t find_gzip_header(const uint8_t* data, size_t size, size_t from);

enum class MemberEnd {
  Complete,   // stream end reached, CRC and length checked by zlib
  Truncated,  // input ended inside the member (a file cut short)
  Corrupt,    // zlib reported a data error (or the sink asked to stop)
};

struct MemberResult {
  MemberEnd end = MemberEnd::Corrupt;
  size_t next_offset = 0;  // one past the member (Complete) or where inflate stopped
  uint64_t produced = 0;   // inflated bytes handed to the sink
};

// The bytes of this thread's whole-member (libdeflate) output buffer that
// may be resident now: at most 2 MiB between members (0 without libdeflate).
size_t whole_inflate_buffer_bytes();

// Inflates members one at a time, reusing its zlib state and output window.
class MemberInflater {
 public:
  // Called with each inflated piece; return false to abandon the member.
  using Sink = std::function<bool(const char* data, size_t len)>;

  MemberInflater();
  ~MemberInflater();
  MemberInflater(const MemberInflater&) = delete;
  MemberInflater& operator=(const MemberInflater&) = delete;

  MemberResult inflate_member(const uint8_t* data, size_t size, size_t offset, const Sink& sink);

 private:
  z_stream zs_{};
  bool init_ = false;
  std::vector<char> window_;
};

}  // namespace dftracer::analyze
