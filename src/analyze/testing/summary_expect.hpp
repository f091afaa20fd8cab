// Test helper: two Summaries that must be the same answer (an index-only
// summary against a full read, combined partial summaries against one read).
// Header-only; included by the analyzer's test binaries only.
#ifndef DFTRACER_SRC_ANALYZE_SUMMARY_EXPECT_HPP_
#define DFTRACER_SRC_ANALYZE_SUMMARY_EXPECT_HPP_

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "summary.hpp"

namespace dftracer::analyze {

struct SameSummaryOptions {
  // The read statistics (events, files, JSON bytes) too: equal when both
  // read the same bytes, not when one was answered from an index.
  bool read_stats = false;
};

inline void expect_same_summary(const Summary& want, const Summary& got, const std::string& what,
                                SameSummaryOptions opt = {}) {
  SCOPED_TRACE(what);
  EXPECT_EQ(want.complete_events, got.complete_events);
  EXPECT_EQ(want.metadata_events, got.metadata_events);
  EXPECT_EQ(want.other_events, got.other_events);
  EXPECT_EQ(want.groups, got.groups);
  EXPECT_EQ(want.total_us, got.total_us);
  EXPECT_EQ(want.traced_us, got.traced_us);
  EXPECT_EQ(want.span_us, got.span_us);
  EXPECT_EQ(want.nesting.approximated, got.nesting.approximated);
  EXPECT_EQ(want.nesting.folded, got.nesting.folded);
  if (opt.read_stats) {
    EXPECT_EQ(want.stats.events, got.stats.events);
    EXPECT_EQ(want.stats.files, got.stats.files);
    EXPECT_EQ(want.stats.json_bytes, got.stats.json_bytes);
  }
  ASSERT_EQ(want.rows.size(), got.rows.size());
  for (size_t i = 0; i < want.rows.size(); ++i) {
    const SummaryRow &w = want.rows[i], &g = got.rows[i];
    SCOPED_TRACE("row " + std::to_string(i) + " " + (w.key.empty() ? "" : w.key[0]));
    EXPECT_EQ(w.key, g.key);
    EXPECT_EQ(w.count, g.count);
    EXPECT_EQ(w.self_us, g.self_us);
    EXPECT_EQ(w.total_us, g.total_us);
    EXPECT_EQ(w.mean_us, g.mean_us);
    EXPECT_EQ(w.min_us, g.min_us);
    EXPECT_EQ(w.p50_us, g.p50_us);
    EXPECT_EQ(w.p95_us, g.p95_us);
    EXPECT_EQ(w.max_us, g.max_us);
    EXPECT_EQ(w.share, g.share);
    EXPECT_EQ(std::isnan(w.gflops), std::isnan(g.gflops));
    if (!std::isnan(w.gflops)) EXPECT_DOUBLE_EQ(w.gflops, g.gflops);  // float sums in another order
  }
}

}  // namespace dftracer::analyze

#endif  // DFTRACER_SRC_ANALYZE_SUMMARY_EXPECT_HPP_
