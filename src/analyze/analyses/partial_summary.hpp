// A summary split into parts that travel: the reading half of `summary` run
// on a piece of the input (some whole files, or one range of a .pfw.gz's gzip
// members) gives its aggregate as bytes -- groups with exact integer sums and
// mergeable histograms, event counts, read stats, and the self-time runs that
// may still nest with another piece's events (self_time.hpp) -- and the
// combine step merges any number of them into the same Summary a single read
// of all the input gives. dftracer.analyze's Dask path maps the first over the
// workers and runs the second on the client, so only aggregates travel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "summary.hpp"

namespace dftracer::analyze {

// A run of whole gzip members of one file: [begin, end) byte offsets, both on
// member starts (end = the file size for the last range).
struct MemberRange {
  uint64_t begin = 0, end = 0;
};

// The file's gzip members (from its .idx, else found by scanning headers)
// grouped into ranges of about `target_bytes` compressed bytes each. One range
// covering the whole file when it is not gzip, is smaller than the target, or
// its members cannot be told apart.
std::vector<MemberRange> gzip_member_ranges(const std::string& path, uint64_t target_bytes);

// Reads the lines of the members in `range` of `path` (inflating on this
// thread) into `consumer`. A line that a member boundary cuts is read whole by
// the range it starts in, so the ranges of a file read every line once.
ReadStats read_member_range(const std::string& path, MemberRange range, LineConsumer& consumer,
                            const ReadOptions& options = {});

// The partial aggregate of `files` (read on `threads` threads), their
// threads' nesting resolved (whole files: nothing else can nest with them).
// `file_ids` numbers them within the whole input (one per file): the
// self-time runs of a thread are keyed by it, so pieces of one file must use
// the same number. A category key takes options.runtime_files, else the
// runtime's files among these files' own (give the whole input's for a
// summary equal to one read of it).
std::string partial_summary(const std::vector<std::string>& files, const std::vector<size_t>& file_ids,
                            const std::vector<GroupKey>& keys, unsigned threads, const ReadOptions& options = {});
// The same for one range of members of one file. A category key needs
// options.runtime_files (runtime_files.hpp) for the whole input: the range
// may not hold its file's FH records; without it, all I/O is data there.
std::string partial_summary_range(const std::string& file, size_t file_id, MemberRange range,
                                  const std::vector<GroupKey>& keys, const ReadOptions& options = {});

// Merges partial aggregates (any order) into one aggregate, its nesting
// resolved, adding their read stats to *stats: what every combine step
// builds on (summary, diff: two of them, the module tree).
std::unique_ptr<SummaryAggregator> merge_partials(const std::vector<std::string>& parts,
                                                  const std::vector<GroupKey>& keys, ReadStats* stats);

// Merges partial aggregates (any order) into the summary of all of them;
// throws std::invalid_argument when a part is not one, or was made with other keys.
Summary combine_partials(const std::vector<std::string>& parts, const std::vector<GroupKey>& keys, size_t top_n,
                         SummarySort sort = SummarySort::self);

}  // namespace dftracer::analyze
