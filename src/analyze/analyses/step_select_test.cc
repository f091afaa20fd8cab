// The step filter: slices, spans, and a real trace read back through it.
#include "step_select.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "steps.hpp"
#include "summary.hpp"

using namespace dftracer::analyze;

TEST(StepSelect, SlicesAsPython) {
  auto pick = [](const char* t, size_t n) { return parse_step_slice(t).pick(n); };
  EXPECT_EQ(pick("1:", 4), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(pick("1:3", 6), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(pick(":-1", 3), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(pick("-2:", 5), (std::vector<size_t>{3, 4}));
  EXPECT_EQ(pick("4", 6), (std::vector<size_t>{4}));
  EXPECT_EQ(pick("-1", 6), (std::vector<size_t>{5}));
  EXPECT_TRUE(pick("9", 6).empty());
  EXPECT_TRUE(pick("5:", 3).empty());
  EXPECT_EQ(pick(":", 2), (std::vector<size_t>{0, 1}));
  for (const char* bad : {"", "x", "1:2:3", "1.5:", "a:", ":b"})
    EXPECT_THROW(parse_step_slice(bad), std::invalid_argument) << bad;
}

TEST(StepSelect, SpansHoldStartNotEnd) {
  const std::vector<std::pair<int64_t, int64_t>> s = {{10, 20}, {30, 40}};
  EXPECT_FALSE(StepSpans::inside(s, 9));
  EXPECT_TRUE(StepSpans::inside(s, 10));
  EXPECT_FALSE(StepSpans::inside(s, 20));
  EXPECT_FALSE(StepSpans::inside(s, 25));
  EXPECT_TRUE(StepSpans::inside(s, 39));
  EXPECT_FALSE(StepSpans::inside(s, 40));
}

TEST(StepSelect, RefusesNoStepsAndEmptyPicks) {
  StepPlan none;
  try {
    select_steps(none, parse_step_slice("1:"));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has no steps"), std::string::npos);
  }
  StepPlan one;
  one.processes.push_back({});
  one.processes[0].pid = "7";
  one.processes[0].steps = {{100, 200, "a"}, {200, 300, "b"}};
  EXPECT_THROW(select_steps(one, parse_step_slice("2:")), std::invalid_argument);
  StepSpans s = select_steps(one, parse_step_slice("1:"));
  ASSERT_EQ(s.by_process.size(), 1u);
  EXPECT_EQ(s.by_process.begin()->second, (std::vector<std::pair<int64_t, int64_t>>{{200, 300}}));
}

// A real eager inference loop (6 steps): the filtered summary's self time is
// the steps' thread time that `summary --by step` attributes to them.
TEST(StepSelect, FilteredSummaryIsTheChosenStepsThreadTime) {
  const std::vector<std::string> files = {std::string(DFTRACER_TEST_DATA_DIR) +
                                          "/steps/eager-infmode-equal-spans.pfw.gz"};
  const StepReport steps = analyze_steps(files, 1);
  ASSERT_EQ(steps.rows.size(), 6u);
  ReadOptions ro;
  apply_step_filter(parse_step_slice("1:"), files, 1, &ro);
  ASSERT_TRUE(ro.steps);
  const Summary all = summarize(files, parse_group_keys("name"), 0, 1, ReadOptions{});
  const Summary some = summarize(files, parse_group_keys("name"), 0, 1, ro);
  double want_us = 0;
  for (size_t i = 1; i < steps.rows.size(); ++i) want_us += steps.rows[i].traced_us;
  EXPECT_NEAR(some.traced_us, want_us, 1.0);
  EXPECT_LT(some.traced_us, all.traced_us);
  EXPECT_LT(some.stats.events, all.stats.events);
}

// Two processes with different chosen spans inside one window: each line is
// kept by its own process's spans (a string pid as DFTracer v1 writes it too).
TEST(StepSelect, EachProcessKeepsItsOwnSpans) {
  const std::string path = ::testing::TempDir() + "/step_select_two_pids.pfw";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("[\n", f);
    for (int ts = 10; ts < 100; ts += 10) {
      std::fprintf(f, "{\"id\":%d,\"name\":\"a\",\"cat\":\"x\",\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":1,\"ph\":\"X\"}\n",
                   ts, ts);
      std::fprintf(f, "{\"id\":%d,\"name\":\"b\",\"cat\":\"x\",\"pid\":\"2\",\"tid\":2,\"ts\":%d,\"dur\":1,\"ph\":\"X\"}\n",
                   ts + 1, ts);
    }
    std::fclose(f);
  }
  auto spans = std::make_shared<StepSpans>();
  spans->by_process[{0, "1"}] = {{20000, 40000}};  // ns: ts 20 and 30 us
  spans->by_process[{0, "2"}] = {{70000, 80000}};  // ts 70 us
  ReadOptions ro;
  ro.from_ns = 20000;
  ro.to_ns = 80000;
  ro.steps = spans;
  const Summary s = summarize({path}, parse_group_keys("pid"), 0, 1, ro);
  ASSERT_EQ(s.rows.size(), 2u);
  for (const SummaryRow& r : s.rows) EXPECT_EQ(r.count, r.key[0] == "1" ? 2u : 1u) << r.key[0];
  std::remove(path.c_str());
}
