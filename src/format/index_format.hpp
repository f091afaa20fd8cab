// The `.idx` sidecar of a .pfw.gz, version 3: the one definition of its
// layout, written by the file stage (src/file/member_index.*) and read by the
// analyzer (src/analyze/read/trace_index.*); docs/analyzer.md "The write-time
// index" describes it for users.
//
// Text, one record a line, each line ending in " *<crc32 of the text before
// it, 8 hex digits>" so a damaged line is detected, appended as members are
// written so a crashed run keeps an index up to its last member:
//   #dftracer-idx 3
//   N <id> "<name or category, JSON-escaped as in the trace>"   (interned once per file)
//   M <offset> <size> <raw_size> <lines> <gzip crc32> <member crc32> <complete> <metadata> <other>
//     <min_ts> <max_ts> <max_end> <k> {<name id> <count> <dur_ns>}x k <j> {<cat id> <count> <dur_ns>}x j
//   C <name id> <cat id> <tid> <count> <total_ns> <self_ns> <min_ns> <max_ns> <zeros> <b> {<bucket>:<n>}x b
//     [f <with_flops> <flops> <flops_ns> <with_bytes> <bytes> <bytes_ns>]
//   F <complete> <metadata> <other> <first_ts> <last_end> <approximated> <folded> <exact> <pid> <members> <bytes>
// M: one per member, times in ns (`-` when the member has no timed line).
// <gzip crc32> is the one in the member's trailer (of its text); <member
// crc32> is of the member's compressed bytes as written, header to trailer:
// what lets a reader vouch for a member's data without inflating it.
// C: at finalize, one per (name, cat, tid) cell: the whole file's counts,
// durations, self times (SelfTimeTracker, self_time.hpp, fed in write order)
// and duration histogram (LogHistogram buckets, log_histogram.hpp). F: last
// line, written only at a clean finalize: its presence says the C lines are
// whole. The `f` group, only on cells whose events carried args.flops /
// args.bytes: how many did, their sums (shortest round-trip decimal of the
// double) and those events' summed durations -- what the summary's gflops /
// gbps need. `exact` (IndexExact) says whether the C lines give a full
// read's summary.
//
// Version 2: the same without <member crc32>; still read, and used to split
// reads, but never to answer without reading (nothing vouches for the data).
// Version 1 (no header line): one line per gzip member, "offset size
// raw_size lines", no CRC; still read.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dftracer::format {

// The first line's first word, and the version after it.
inline constexpr std::string_view kIndexMagic = "#dftracer-idx";
inline constexpr std::string_view kIndexVersion = "3";
// The earlier version with a header line, still read.
inline constexpr std::string_view kIndexVersion2 = "2";

// A record's kind: the first word of its line.
inline constexpr std::string_view kNameRecord = "N";
inline constexpr std::string_view kMemberRecord = "M";
inline constexpr std::string_view kCellRecord = "C";
inline constexpr std::string_view kFinalRecord = "F";
// Opens a C line's flops/bytes group.
inline constexpr std::string_view kFlopsGroup = "f";
// A member's time when it has no timed line.
inline constexpr std::string_view kNoTime = "-";

// The F line's `exact`.
enum IndexExact : int {
  kIndexNotExact = 0,        // the file holds something the C lines cannot reproduce: read the events
  kIndexExact = 1,           // the C lines give a full read's summary
  kIndexExactWithFlops = 2,  // and some carry an `f` group (a reader that predates `f` reads the events)
};

// Each line ends in kLineCrcMark and kLineCrcDigits lowercase hex digits of
// index_line_crc(the text before the mark).
inline constexpr std::string_view kLineCrcMark = " *";
inline constexpr size_t kLineCrcDigits = 8;

inline uint32_t index_line_crc(std::string_view payload) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size())));
}

}  // namespace dftracer::format
