// `diff A B`: two runs compared group by group. Each side is
// summarized exactly as `summary` does (self_time.hpp's self times), then the
// groups are joined by key: a group found on one side only has zeros on the
// other. Rows are sorted by impact, the absolute change of self time. The
// command also reads each run's steps (steps.hpp) for a noise estimate: a row
// whose change is within the runs' step-to-step spread is marked (mark_noise).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "steps.hpp"
#include "summary.hpp"

namespace dftracer::analyze {

// The columns after the group key(s), in the CSV header, the JSON rows and the
// Python DataFrame. *_pct is the change relative to A (NaN / null where A is 0).
inline constexpr const char* kDiffColumns[] = {
    "count_a",  "count_b",  "count_delta", "self_a_us",       "self_b_us",       "self_delta_us", "self_delta_pct",
    "total_a_us", "total_b_us", "total_delta_us", "total_delta_pct"};

inline constexpr size_t kDiffFirstTime = 3;  // count_a, count_b, count_delta come first

struct DiffRow {
  std::vector<std::string> key;
  bool within_noise = false;  // |self delta %| within Diff::noise_pct (mark_noise)
  uint64_t count_a = 0, count_b = 0;
  double self_a_us = 0, self_b_us = 0, total_a_us = 0, total_b_us = 0;
  int64_t count_delta() const { return static_cast<int64_t>(count_b) - static_cast<int64_t>(count_a); }
  double self_delta_us() const { return self_b_us - self_a_us; }
  double total_delta_us() const { return total_b_us - total_a_us; }
  // The time columns, kDiffColumns[kDiffFirstTime...] in order.
  std::array<double, 8> times() const;
};

// A run's step-to-step spread, diff's noise estimate: the durations of the
// steps the steps model finds (steps.hpp), every process's, its outlier steps
// (the compile step, a stall) left out.
struct StepSpread {
  size_t steps = 0;        // steps used
  size_t outliers = 0;     // steps left out
  double median_us = 0;    // of the steps used
  double spread_pct = std::numeric_limits<double>::quiet_NaN();  // their coefficient of variation
                                                                 // (sample sd / mean), %; NaN under 2 steps
};
StepSpread step_spread(const StepReport& r);

// delta / a in percent; NaN when a is 0 (a group new in B).
double delta_pct(double a, double b);

// The order of diff's rows and of its top_n: by the absolute delta of self
// time (default), total time or count, descending; ties by |self delta|, then
// |total delta|, then key.
enum class DiffSort { self, total, count };
// "self", "total" or "count"; anything else throws std::invalid_argument.
DiffSort parse_diff_sort(const std::string& s);
const char* diff_sort_name(DiffSort s);

struct Diff {
  std::vector<GroupKey> keys;
  DiffSort sort = DiffSort::self;
  std::vector<DiffRow> rows;  // by |self delta| (or `sort`'s), descending; then |total delta|, then key
  uint64_t groups = 0;        // before --top
  // Each side's traced time (summed self time) and summed duration.
  double traced_a_us = 0, traced_b_us = 0, total_a_us = 0, total_b_us = 0;
  uint64_t events_a = 0, events_b = 0;  // complete events
  ReadStats stats_a, stats_b;
  // The noise estimate (mark_noise): each run's step spread; the larger one,
  // NaN when either run has fewer than two steps (then no row is marked).
  StepSpread spread_a, spread_b;
  double noise_pct = std::numeric_limits<double>::quiet_NaN();
};

// Sets the spreads and noise_pct = max(a.spread_pct, b.spread_pct), and marks
// each row whose self time changed by no more than that, in either direction
// (a group found in one run only is never noise): a change the runs' own
// step-to-step variation could make.
void mark_noise(Diff& d, const StepSpread& a, const StepSpread& b);

// Joins two whole summaries (built with top_n 0) on their keys; keeps the
// `top_n` rows first in `sort`'s order (0: all).
Diff diff_summaries(const Summary& a, const Summary& b, size_t top_n, DiffSort sort = DiffSort::self);
Diff diff_traces(const std::vector<std::string>& files_a, const std::vector<std::string>& files_b,
                 const std::vector<GroupKey>& keys, size_t top_n, unsigned threads, const ReadOptions& options = {},
                 DiffSort sort = DiffSort::self);

void write_diff_table(std::ostream& os, const Diff& d);
void write_diff_json(std::ostream& os, const Diff& d);
void write_diff_csv(std::ostream& os, const Diff& d);

}  // namespace dftracer::analyze
