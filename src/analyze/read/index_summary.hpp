// `summary --by name|cat|pid|tid` (any of them, comma-joined) from the
// write-time indexes alone: no member is inflated. Each file must be a
// .pfw.gz with a version-3 index that was finalized, checks out against the
// trace (trace_index.hpp), vouches for every member's bytes (their CRC-32,
// computed here: far cheaper than inflating) and is exact (the writer could sum every
// args.flops / args.bytes as the analyzer reads them: member_index.h). Otherwise -- any other key, a
// time window, a plain .pfw, a crashed run, a bad index -- the summary reads
// the events as before, so the answer never depends on which path ran.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "summary.hpp"

namespace dftracer::analyze {

// The summary from the indexes, or nullopt with *why_not saying which file
// (or key) needs a full read. Prints nothing: a damaged or stale index is
// then counted by the full read, whose one line about skipped input names
// it ("1 mismatched .idx sidecar (scanned instead)").
std::optional<Summary> summary_from_indexes(const std::vector<std::string>& files, const std::vector<GroupKey>& keys,
                                            size_t top_n, SummarySort sort, std::string* why_not);

// The two halves of it, for callers that mix indexed and read files (the
// Dask workers' partial summaries, partial_summary.hpp). True when the index
// can answer `keys` at all (else *why_not).
bool keys_indexable(const std::vector<GroupKey>& keys, std::string* why_not);
// Adds `path`'s groups and totals from its index to `agg` and its read stats
// (counted in indexed_files) to *stats: true. False, adding nothing, when its
// index cannot answer exactly (*why_not says why): then it must be read.
bool add_file_from_index(const std::string& path, SummaryAggregator& agg, ReadStats* stats, std::string* why_not);
// True when `path`'s index could answer a summary (add_file_from_index would
// take it): the Dask client then hands a large file to one worker whole
// instead of splitting it into member ranges that must be read.
bool index_answers(const std::string& path);

}  // namespace dftracer::analyze
