// DFTracer's own sample traces (v1: quoted numbers, v2: 16-bit hashes, no
// commas) read with the right counts per category.
//
// The expected numbers were obtained independently of this reader with:
//   python3 -c 'import gzip,json,collections; c=collections.Counter();
//     [c.update([(e["cat"],e["ph"])]) for l in gzip.open(F,"rt")
//      for s in [l.strip().rstrip(",")] if s not in ("[","]","")
//      for e in [json.loads(s)]]; print(c)'
// and the summed "dur" per category the same way (float(e["dur"])).
#include <gtest/gtest.h>

#include <map>

#include "summary.hpp"
#include "trace_files.hpp"

#ifndef DFTRACER_SAMPLES_DIR
#error "DFTRACER_SAMPLES_DIR must point at tests/data/dftracer-samples"
#endif
#ifndef DFTRACER_TEST_DATA_DIR
#error "DFTRACER_TEST_DATA_DIR must point at tests/data"
#endif

namespace dftracer::analyze::testing {
namespace {

std::string sample(const char* name) { return std::string(DFTRACER_SAMPLES_DIR) + "/" + name; }

std::map<std::string, std::pair<uint64_t, double>> by_cat(const Summary& s) {
  std::map<std::string, std::pair<uint64_t, double>> m;
  for (auto& r : s.rows) m[r.key[0]] = {r.count, r.total_us};
  return m;
}

TEST(Samples, DftracerV2PreloadTrace) {
  std::string f = sample("cm1-DEFAULT-3537780-preload.pfw.gz");
  ASSERT_TRUE(fs::exists(f)) << "sample not present: " << f;
  for (unsigned threads : {1u, 2u}) {
    Summary s = summarize({f}, parse_group_keys("cat"), 0, threads);
    auto m = by_cat(s);
    EXPECT_EQ(m["POSIX"].first, 6985u);
    EXPECT_EQ(m["STDIO"].first, 1095u);
    EXPECT_EQ(m["dftracer"].first, 2u);  // start and end
    EXPECT_DOUBLE_EQ(m["POSIX"].second, 1351271.0);
    EXPECT_DOUBLE_EQ(m["STDIO"].second, 93153.0);
    EXPECT_EQ(s.metadata_events, 709u);  // HH, FH, SH, thread_name
    EXPECT_EQ(s.complete_events, 8082u);
    EXPECT_FALSE(s.stats.any_problem()) << s.stats.problems_line();
  }
}

// DFTracer 2.2's own line format: numeric "ph" (1 complete, 4 metadata), a
// "type" field, no "[" line. Written by pydftracer 2.0.6 + dftracer 2.2.0
// (tests/data/dftracer-2.2-pydftracer.py, DFTRACER_INC_METADATA=1); it used
// to read as 0 events (every line a wrongly typed "ph"). dftracer-utils
// 0.0.14 on it: dftracer_event_count 10; dftracer_stats compute 6,
// dftracer 2, train 2, span 0.430363 s, max dur 15442 us.
TEST(Samples, Dftracer22NumericPhaseTrace) {
  std::string f = std::string(DFTRACER_TEST_DATA_DIR) + "/dftracer-2.2-pydftracer.pfw.gz";
  Summary s = summarize({f}, parse_group_keys("cat"), 0, 1);
  auto m = by_cat(s);
  EXPECT_EQ(m["COMPUTE"], (std::pair<uint64_t, double>{6u, 22092.0}));
  EXPECT_EQ(m["TRAIN"], (std::pair<uint64_t, double>{2u, 24536.0}));
  EXPECT_EQ(m["dftracer"].first, 2u);  // start and end
  EXPECT_EQ(s.complete_events, 10u);
  EXPECT_EQ(s.metadata_events, 7u);  // HH, thread_name, CM x2, FH, SH x2
  EXPECT_DOUBLE_EQ(s.span_us, 430363.0);
  EXPECT_FALSE(s.stats.any_problem()) << s.stats.problems_line();
}

TEST(Samples, DftracerV1QuotedNumbers) {
  std::string f = sample("test-2023.pfw.gz");
  ASSERT_TRUE(fs::exists(f)) << "sample not present: " << f;
  Summary s = summarize({f}, parse_group_keys("cat"), 0, 2);
  auto m = by_cat(s);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m["POSIX"].first, 1012u);
  EXPECT_DOUBLE_EQ(m["POSIX"].second, 931087.0);
  EXPECT_FALSE(s.stats.any_problem()) << s.stats.problems_line();
  Summary byname = summarize({f}, parse_group_keys("name"), 0, 2);
  ASSERT_FALSE(byname.rows.empty());
  EXPECT_EQ(byname.rows[0].key[0], "remove");  // the single 759589 us remove dominates
  EXPECT_EQ(byname.rows[0].count, 1u);
}

}  // namespace
}  // namespace dftracer::analyze::testing
