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
