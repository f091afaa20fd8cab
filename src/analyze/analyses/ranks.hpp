// Cross-rank analysis: the ranks of a torchrun job, their time
// (self/total per rank from the self-time model), each collective matched
// across ranks, who arrived last and how long the others waited, per step.
//
// Input: the #16 trace contract (docs/analyzer.md, "Ranks"). Per process
// (file, pid), metadata events named `rank`, `local_rank`, `world_size`,
// `group_rank`, `hostname`, `clock_offset_ns`, `clock_offset_uncertainty_ns`
// (args.value); collectives and point-to-point calls as complete events of cat
// `comm` with args `group`, `seq` (and `peer` for send/recv), `bytes`,
// `group_size`, `step`.
//
// Matching: a collective is (group, name, seq) on every rank; a send/recv is
// (group, sender, receiver, seq), whatever side wrote it. Timestamps are put on
// rank 0's clock with each file's clock_offset_ns (absent: 0, and the output
// says so). For a collective: last arrival = the latest aligned `ts`; each
// rank's wait = last arrival - own arrival, clipped to its own duration (clock
// error can put the last arrival after a rank's own end), transfer = its
// duration - wait; so wait + transfer = the rank's time in the call.
//
// Steps come from the steps model (steps.hpp) per process; the k-th step of
// every rank is step k. A comm event is in the step whose interval holds its
// start, else the step its `step` arg names. A step's straggler is the rank
// whose late arrivals made the others wait longest in that step (the sum of
// their waits at collectives it arrived last at). A rank absent from a
// collective of the whole job that the others entered (it raised, exited or
// was killed first) never arrived: the others' whole time in that call is
// waiting it caused, so the rank that failed is the step's straggler, and
// it is listed as ended early -- never a healthy rank that merely arrived
// last at an earlier collective.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "self_time.hpp"
#include "steps.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

// One traced process: a rank when its metadata says so (rank -1: not said).
struct RankProcess {
  size_t file = 0;
  std::string pid;
  int64_t rank = -1, local_rank = -1, world_size = -1, group_rank = -1;
  std::string hostname;
  bool has_offset = false, has_uncertainty = false;
  int64_t clock_offset_ns = 0, uncertainty_ns = 0;
  bool ended = false;  // its `end` event was read: the file was finalized
  // A GPU track (its events are device work, event_category.hpp), not a
  // process: its device index (-1 for a process), the process it belongs to
  // (a device track of ours names it, format/device_track.hpp; "" in a Kineto
  // trace, whose GPU pid is the device index) and that process's rank. It has
  // no rank of its own and no share of the traced (thread) time.
  int64_t device = -1;
  std::string owner;
  int64_t owner_rank = -1;
  uint64_t complete = 0;
  int64_t self_ns = 0, total_ns = 0;
  // Matched collectives (those with a seq): wall time in them (overlapping
  // async calls merged as intervals), split into waiting and transfer.
  int64_t comm_ns = 0, wait_ns = 0, transfer_ns = 0;
  uint64_t comm_calls = 0, last_arrivals = 0;
  int64_t caused_wait_ns = 0;  // others' wall time waiting at collectives this rank arrived last at (per waiting rank: the union)
};

// One rank's part in one collective.
struct CollectiveRank {
  size_t process = 0;  // index into RankReport::processes
  int64_t step = -1;   // this rank's step (-1: outside every step)
  int64_t arrival_ns = 0, end_ns = 0;  // aligned to rank 0's clock
  int64_t dur_ns = 0, wait_ns = 0, transfer_ns = 0;
  double bytes = 0;
};

struct Collective {
  std::string group, name;
  int64_t seq = 0;
  int64_t src = -1, dst = -1;  // send/recv: sender and receiver ranks
  int64_t group_size = 0;      // from args.group_size (max seen), else the ranks seen
  int64_t step = -1;           // the step of its lowest-ranked participant
  std::vector<CollectiveRank> ranks;  // by rank
  size_t last = 0;                    // index into `ranks` of the last arrival
  int64_t spread_ns = 0;              // last arrival - first arrival: the longest wait
  int64_t waited_ns = 0;              // the others' waits summed
  bool complete() const { return static_cast<int64_t>(ranks.size()) >= group_size; }
};

// One cell of the step x rank table.
struct StepRankRow {
  int64_t step = 0;
  size_t process = 0;
  std::string label;
  double duration_us = 0, traced_us = 0;
  int64_t comm_ns = 0, wait_ns = 0, transfer_ns = 0, caused_wait_ns = 0;
  uint64_t last_arrivals = 0;
};

// One step across ranks: its straggler(s).
struct StepStraggler {
  int64_t step = 0;
  int64_t straggler = -1;       // the rank that made the others wait longest (-1: nobody waited)
  int64_t caused_wait_ns = 0;   // the others' waits it caused
  int64_t max_wait_ns = 0;      // the longest single wait in the step
  std::vector<int64_t> late_ranks;  // every rank that arrived last at some collective with a wait, worst first
  std::vector<int64_t> absent_ranks;  // ranks that never arrived at a collective of the whole job in this step
  double max_duration_us = 0, min_duration_us = 0;  // the step's duration on its slowest and fastest rank
};

constexpr int64_t kMaxWorldSize = int64_t{1} << 20;
constexpr int64_t kMaxClockOffsetNs = int64_t{86400} * 1000000000;  // one day

struct RankReport {
  std::vector<std::string> files;      // the inputs, indexed by RankProcess::file
  std::vector<RankProcess> processes;  // by rank (unknown ranks last, by file)
  std::vector<Collective> collectives;  // by step, group, seq
  std::vector<StepRankRow> step_rows;   // by step, then rank
  std::vector<StepStraggler> steps;
  int64_t world_size = -1;              // the largest plausible world_size any file states
  // Values no run can have, ignored (one line each in rank_problems_line):
  // a world_size above kMaxWorldSize (10^12 drove the missing-ranks list to
  // 16.8 GB), a clock offset or uncertainty beyond kMaxClockOffsetNs (+-9e18
  // overflowed every aligned timestamp). "<key> <value> in <file> ignored (<why>)".
  std::vector<std::string> ignored_values;
  std::vector<int64_t> missing_ranks;   // below world_size, no file
  std::vector<int64_t> incomplete_ranks;  // a file without its `end` event (cut short)
  std::vector<int64_t> ended_early;       // absent from collectives of the whole job that the others entered
  int64_t ended_early_step = -1;          // the first step one of them was absent from
  std::vector<int64_t> offsets_unknown;   // ranks without clock_offset_ns (taken as 0)
  int64_t max_uncertainty_ns = 0;         // of the offsets written
  uint64_t partial_collectives = 0;       // seen on fewer ranks than group_size
  uint64_t unmatched_comm = 0;            // comm events without a seq (annotations): not matched
  uint64_t duplicate_comm = 0;            // a second event of one rank with the same key: ignored
  double traced_us = 0;                   // every process's self time summed
  NestingStats nesting;
  ReadStats stats;
};

// Reads `files` (with_steps and two ranks or more: also the steps model's two passes).
RankReport analyze_ranks(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options = {},
                         bool with_steps = true);
// The ranks' metadata only (no self time, no matching): what `merge` needs.
RankReport scan_ranks(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options = {});

// "rank 3", or "pid 123 (file 2)" for a process without a rank.
std::string process_label(const RankProcess& p);
// The one line naming missing / incomplete ranks and the alignment ("" when all is well).
std::string rank_problems_line(const RankReport& r);
// What the alignment of the ranks' clocks is worth, in one sentence.
std::string alignment_note(const RankReport& r);

// `summary --by rank`: one row per process, in the order they were read; with
// `sort` ("self" or "total") by that time, descending (ties in read order), and
// with `top` (0: all) only the first `top` rows of that order ("" sorts by self).
void check_rank_sort(const std::string& sort);  // throws std::invalid_argument
void write_rank_summary_table(std::ostream& os, const RankReport& r, const std::string& sort = "", size_t top = 0);
void write_rank_summary_json(std::ostream& os, const RankReport& r, const std::string& sort = "", size_t top = 0);
void write_rank_summary_csv(std::ostream& os, const RankReport& r, const std::string& sort = "", size_t top = 0);

// `ranks`: every table as JSON; one as CSV (`table`: ranks, steps, stragglers,
// collectives, waits); all of them as text, the collectives cut to `top` (0: all).
inline constexpr const char* kRankTables[] = {"ranks", "steps", "stragglers", "collectives", "waits"};
void write_ranks_json(std::ostream& os, const RankReport& r);
// Only `tables` (names of kRankTables), with the run's fields: the report's data.
void write_ranks_json(std::ostream& os, const RankReport& r, const std::vector<std::string>& tables);
void write_ranks_csv(std::ostream& os, const RankReport& r, const std::string& table);
void write_ranks_text(std::ostream& os, const RankReport& r, size_t top);
// `ranks` on traces without rank metadata (no torchrun): instead of empty
// tables, one line ("no ranks: ...; 3 processes") or one JSON object
// {"ranks":0,"processes":3,"note":...,"events":...,"skipped":...}. False
// (nothing written) when some process has a rank.
bool write_no_ranks(std::ostream& os, const RankReport& r, const std::string& format);

}  // namespace dftracer::analyze
