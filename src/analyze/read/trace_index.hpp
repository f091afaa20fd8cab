// Reading the `.idx` sidecar of a .pfw.gz: version 1 (one line per gzip
// member, "offset size raw_size lines") and versions 2 and 3, the write-time index
// (src/format/index_format.hpp has the format: per member its event counts, time
// range and per-name/per-category totals; at a clean finalize the whole
// file's summary cells). Checked against the trace before it is trusted:
// every line's CRC, members tiling the file from 0, a gzip header at each
// member and each member's gzip CRC (read from its trailer, no inflating),
// and for a finalized index the file's size and member count. Those checks
// catch a stale index, not damaged data: a member's bytes are vouched for
// only by version 3's CRC of them (member_vouched), and whatever answers
// without inflating -- counts, time ranges, members skipped for a window --
// answers only for members so vouched.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gzip_members.hpp"

namespace dftracer::analyze {

struct IndexedMember {
  GzipIndexEntry entry;
  uint64_t complete = 0, metadata = 0, other = 0;
  bool timed = false;  // min_ts/max_ts/max_end hold something
  int64_t min_ts = 0, max_ts = 0, max_end = 0;
  bool has_member_crc = false;  // version 3: the CRC-32 of the member's compressed bytes
  uint32_t member_crc = 0;
};

// One (name, cat, tid) cell of the whole file, as the writer counted it.
struct IndexedCell {
  uint32_t name = 0, cat = 0;
  std::string tid;
  uint64_t count = 0;
  int64_t total = 0, self = 0, min = 0, max = 0;
  uint64_t zeros = 0;
  std::vector<std::pair<int, uint64_t>> buckets;  // LogHistogram buckets
  // The `f` group (events that carried args.flops / args.bytes; zero without one).
  uint64_t with_flops = 0, with_bytes = 0;
  double flops = 0, bytes = 0;
  int64_t flops_ns = 0, bytes_ns = 0;
};

struct TraceIndex {
  int version = 0;  // 1, 2 or 3
  std::vector<IndexedMember> members;
  std::vector<std::string> names;  // by id, JSON-decoded
  // Version 2 or 3 and finalized (an F line): the whole file.
  bool finalized = false;
  bool exact = false;  // the cells give a full read's summary (flops/bytes sums included)
  std::vector<IndexedCell> cells;
  uint64_t complete = 0, metadata = 0, other = 0, approximated = 0, folded = 0;
  int64_t first_ts = 0, last_end = 0;
  std::string pid;
};

// Loads and checks `<gz_path>.idx` against the trace's bytes. Invalid sets
// *why to a short reason ("line 3: CRC mismatch", "member 2: stale (gzip CRC
// differs)", ...). Lines past the end of the file (a crash between the
// member's write and its index line) end the index there, as do lines after
// a damaged last line of a crashed run (not finalized).
IndexStatus load_trace_index(const std::string& gz_path, const uint8_t* data, size_t size, TraceIndex* out,
                             std::string* why);

// True when `m`'s bytes in `data` (the trace load_trace_index checked it
// against) are the ones the writer indexed: the CRC-32 of its compressed
// bytes matches the index's. False for a damaged member and for every member
// of a version-1 or -2 index, which carries no such CRC: those are inflated,
// and inflate's own checks find the damage.
bool member_vouched(const IndexedMember& m, const uint8_t* data);
// The first member of `index` not vouched for, or index.members.size() when
// all are (`why`, when not null, then names it).
size_t first_unvouched_member(const TraceIndex& index, const uint8_t* data, std::string* why = nullptr);

}  // namespace dftracer::analyze
