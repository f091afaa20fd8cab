// Steps on hand-made traces: found from a `step` arg or from the repeated
// top-level region of the main thread, every event of the process inside a
// step (any thread) attributed to it by self time, the rest "outside", the
// split adding up to each step's traced time, and outlier steps flagged --
// the same whatever the reader threads and pieces.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "steps.hpp"
#include "summary.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

// One bare JSON line in whole microseconds, as the writer puts it.
std::string ev(const std::string& name, const std::string& cat, int pid, int tid, long long ts, long long dur,
               const std::string& args = "") {
  std::string s = "{\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
                  ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(1'000'000 + ts) +
                  ",\"dur\":" + std::to_string(dur) + ",\"ph\":\"X\"";
  if (!args.empty()) s += ",\"args\":{" + args + "}";
  return s + "}\n";
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (auto& l : v) s += l;
  return s;
}

enum Cat { kCompile, kForward, kBackward, kOptimizer, kData, kOther };

// pid 10, main thread 10: train_step x3 (the third 10x longer), with compile,
// forward, backward and optimizer work in step 0 and a worker thread's
// backward op inside it; data I/O and a one-off region outside any step.
std::string region_trace() {
  return lines({
      ev("dynamo.trace", "compile", 10, 10, 1, 8),
      ev("aten::mm", "op", 10, 10, 10, 30, "\"phase\":\"forward\""),
      ev("aten::mm_bw", "op", 11 - 1, 11, 20, 40, "\"phase\":\"backward\""),  // worker thread 11
      ev("aten::mm_bw", "op", 10, 10, 50, 30, "\"phase\":\"backward\""),
      ev("Optimizer.step#SGD.step", "cpu_op", 10, 10, 85, 10),
      ev("train_step", "app", 10, 10, 0, 100),
      ev("read", "POSIX", 10, 10, 150, 10),  // outside, data
      ev("aten::mm", "op", 10, 10, 210, 50, "\"phase\":\"forward\""),
      ev("train_step", "app", 10, 10, 200, 100),
      ev("aten::mm", "op", 10, 10, 410, 900, "\"phase\":\"forward\""),
      ev("train_step", "app", 10, 10, 400, 1000),
      ev("setup", "app", 10, 10, 1500, 100),  // top-level but not repeated: outside
  });
}

StepReport run(const std::string& text, unsigned threads, uint64_t min_piece = 8u << 20) {
  static int n = 0;
  TempDir dir;
  const std::string path = dir.file("t" + std::to_string(++n) + ".pfw");
  write_file(path, text);
  ReadOptions ro;
  ro.min_piece_bytes = min_piece;
  return analyze_steps({path}, threads, ro);
}

void expect_region_steps(const StepReport& r) {
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "region");
  EXPECT_EQ(r.processes[0].region, "train_step");
  ASSERT_EQ(r.rows.size(), 3u);
  const StepRow& s0 = r.rows[0];
  EXPECT_EQ(s0.duration_us, 100);
  EXPECT_EQ(s0.by_category_us[kCompile], 8);
  EXPECT_EQ(s0.by_category_us[kForward], 30);
  EXPECT_EQ(s0.by_category_us[kBackward], 30 + 40);  // the worker thread's op is in the step
  EXPECT_EQ(s0.by_category_us[kOptimizer], 10);
  EXPECT_EQ(s0.by_category_us[kData], 0);
  EXPECT_EQ(s0.by_category_us[kOther], 100 - 8 - 30 - 30 - 10);  // the step region's own self time
  EXPECT_EQ(s0.traced_us, 140);                                    // both threads' time inside the step
  double sum = 0;
  for (double v : s0.by_category_us) sum += v;
  EXPECT_EQ(sum, s0.traced_us);
  EXPECT_DOUBLE_EQ(s0.compile_share, 8.0 / 140);
  EXPECT_EQ(r.rows[1].by_category_us[kForward], 50);
  EXPECT_EQ(r.rows[1].by_category_us[kOther], 50);
  EXPECT_EQ(r.rows[1].by_category_us[kCompile], 0);
  EXPECT_EQ(r.rows[2].duration_us, 1000);
  EXPECT_FALSE(r.rows[0].outlier);
  EXPECT_FALSE(r.rows[1].outlier);
  EXPECT_TRUE(r.rows[2].outlier);
  EXPECT_EQ(r.outside_us[kData], 10);
  EXPECT_EQ(r.outside_us[kOther], 100);
  EXPECT_EQ(r.outside_traced_us, 110);
}

TEST(Steps, RepeatedTopLevelRegionOfTheMainThread) { expect_region_steps(run(region_trace(), 1)); }

TEST(Steps, SameOnAnyThreadCountAndPieces) {
  expect_region_steps(run(region_trace(), 2, 1));
  expect_region_steps(run(region_trace(), 4, 64));
}

TEST(Steps, StepsAndOutsideAddUpToTheSummarysTracedTime) {
  TempDir dir;
  write_file(dir.file("t.pfw"), region_trace());
  StepReport r = analyze_steps({dir.file("t.pfw")}, 1);
  Summary s = summarize({dir.file("t.pfw")}, parse_group_keys("name"), 0, 1);
  double steps = r.outside_traced_us;
  for (const StepRow& x : r.rows) steps += x.traced_us;
  EXPECT_EQ(steps, s.traced_us);
}

TEST(Steps, FromAStepArgOnAnyThread) {
  // Steps 1..3 from the args of a worker thread's events (not the main
  // thread); an event without the arg inside step 2's interval belongs to it.
  std::string t = lines({
      ev("fwd", "op", 7, 8, 0, 40, "\"phase\":\"forward\",\"step\":1"),
      ev("bwd", "op", 7, 8, 40, 40, "\"phase\":\"backward\",\"step\":1"),
      ev("fwd", "op", 7, 8, 100, 40, "\"phase\":\"forward\",\"step\":2"),
      ev("bwd", "op", 7, 8, 140, 40, "\"phase\":\"backward\",\"step\":2"),
      ev("DataLoader.next", "app", 7, 9, 110, 20),
      ev("fwd", "op", 7, 8, 200, 40, "\"phase\":\"forward\",\"step\":3"),
      ev("bwd", "op", 7, 8, 240, 40, "\"phase\":\"backward\",\"step\":3"),
      ev("main", "app", 7, 7, 0, 300),  // top-level on the main thread, but not repeated
      ev("other_process", "app", 99, 99, 0, 10),
  });
  StepReport r = run(t, 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "args.step");
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].label, "1");
  EXPECT_EQ(r.rows[2].label, "3");
  EXPECT_EQ(r.rows[1].duration_us, 80);
  EXPECT_EQ(r.rows[1].by_category_us[kData], 20);
  EXPECT_EQ(r.rows[1].by_category_us[kForward], 40);
  EXPECT_EQ(r.rows[1].traced_us, 100);
  EXPECT_EQ(r.rows[0].traced_us, 80);
  // The main thread's region encloses the steps without lying inside one; the other process has no steps.
  EXPECT_EQ(r.outside_us[kOther], 300 + 10);  // nothing nested in it on thread 7
}

TEST(Steps, ARepeatedRegionBoundsTheStepsAndTheArgNamesThem) {
  // Dynamo's step tag is sticky: the inference after the loop still carries
  // step 1, so the arg's interval would run past the step; the region does not.
  std::string t = lines({
      ev("fwd", "op", 5, 5, 10, 20, "\"phase\":\"forward\",\"step\":0"),
      ev("Optimizer.step#SGD.step", "cpu_op", 5, 5, 40, 10),
      ev("train_step", "app", 5, 5, 0, 60),
      ev("fwd", "op", 5, 5, 110, 20, "\"phase\":\"forward\",\"step\":1"),
      ev("Optimizer.step#SGD.step", "cpu_op", 5, 5, 140, 10),
      ev("train_step", "app", 5, 5, 100, 60),
      ev("fwd", "op", 5, 5, 300, 50, "\"phase\":\"inference\",\"step\":1"),
  });
  StepReport r = run(t, 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "region");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].label, "0");
  EXPECT_EQ(r.rows[1].label, "1");
  EXPECT_EQ(r.rows[1].duration_us, 60);
  EXPECT_EQ(r.rows[1].by_category_us[kOptimizer], 10);
  EXPECT_EQ(r.rows[1].by_category_us[kForward], 20);
  EXPECT_EQ(r.outside_us[kForward], 50);
}

TEST(Steps, NoStepsWithoutArgOrRepeatedRegion) {
  StepReport r = run(lines({ev("a", "app", 1, 1, 0, 10), ev("b", "app", 1, 1, 20, 10)}), 1);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_EQ(r.outside_traced_us, 20);
  std::ostringstream os;
  write_steps_table(os, r);
  EXPECT_NE(os.str().find("no steps found"), std::string::npos);
}

TEST(Steps, IOCallsAreNeverSteps) {
  // A DataLoader worker (pid 40) that only reads: repeated fread/read calls,
  // no steps. The main process (pid 30) saves 3 files at top level outside any
  // region, their writes outlasting the two train_steps: the steps are still
  // train_step, and a read inside a step is its data time.
  std::string t = lines({
      ev("fread", "STDIO", 40, 40, 0, 50),
      ev("fread", "STDIO", 40, 40, 100, 50),
      ev("read", "POSIX", 40, 40, 200, 50),
      ev("read", "POSIX", 40, 40, 300, 50),
      ev("read", "POSIX", 30, 30, 10, 5),
      ev("train_step", "app", 30, 30, 0, 20),
      ev("train_step", "app", 30, 30, 100, 20),
      ev("write", "POSIX", 30, 30, 200, 300),
      ev("write", "POSIX", 30, 30, 600, 300),
      ev("write", "POSIX", 30, 30, 1000, 300),
  });
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(t, threads, 64);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].pid, "30");
    EXPECT_EQ(r.processes[0].region, "train_step");
    ASSERT_EQ(r.rows.size(), 2u);
    EXPECT_EQ(r.rows[0].by_category_us[kData], 5);
    EXPECT_EQ(r.rows[0].by_category_us[kOther], 15);
    EXPECT_EQ(r.outside_us[kData], 200 + 900);
  }
}

TEST(Steps, OutlierRule) {
  EXPECT_EQ(step_outliers({100, 100, 1000}), (std::vector<bool>{false, false, true}));
  // First-step compile: flagged against steady steps with some jitter.
  EXPECT_EQ(step_outliers({6800, 100, 105, 98}), (std::vector<bool>{true, false, false, false}));
  // Jitter alone (MAD ~ 0) is not an outlier: it must be 1.5x the median too.
  EXPECT_EQ(step_outliers({100, 100, 101, 130}), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(step_outliers({100, 1000}), (std::vector<bool>{false, false}));  // too few steps to judge
}

TEST(Steps, FastOutliersAreFlaggedAndLabelled) {
  EXPECT_EQ(step_outlier_kinds({100, 100, 102, 98, 20}),
            (std::vector<StepOutlier>{StepOutlier::none, StepOutlier::none, StepOutlier::none, StepOutlier::none,
                                      StepOutlier::fast}));
  EXPECT_EQ(step_outlier_kinds({6800, 100, 105, 98})[0], StepOutlier::slow);
  // Within half the median (and 3 MADs) is not an outlier either way.
  EXPECT_EQ(step_outliers({100, 100, 101, 60}), (std::vector<bool>{false, false, false, false}));
  // A step cut short (a skipped batch): fast, in every output.
  std::string t = lines({
      ev("train_step", "app", 3, 3, 0, 100),
      ev("train_step", "app", 3, 3, 200, 100),
      ev("train_step", "app", 3, 3, 400, 100),
      ev("train_step", "app", 3, 3, 600, 10),
  });
  StepReport r = run(t, 1);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_TRUE(r.rows[3].outlier);
  EXPECT_FALSE(r.rows[3].slow);
  std::ostringstream table, js, csv;
  write_steps_table(table, r);
  write_steps_json(js, r);
  write_steps_csv(csv, r);
  EXPECT_NE(table.str().find(" fast\n"), std::string::npos) << table.str();
  EXPECT_NE(js.str().find("\"outlier_kind\":\"fast\""), std::string::npos);
  EXPECT_NE(csv.str().find(",true,fast\n"), std::string::npos);
}

TEST(Steps, AProcessWithoutATidEqualToItsPidUsesTheThreadThatStartedFirst) {
  // tids renumbered (a trace of another tool, threads only): thread 21 starts
  // first and repeats train_step; thread 22, a loader, repeats its own region.
  // The steps are thread 21's; thread 22's work lies inside them.
  std::string t = lines({
      ev("load", "app", 20, 22, 5, 40),
      ev("aten::mm", "op", 20, 21, 10, 30, "\"phase\":\"forward\""),
      ev("train_step", "app", 20, 21, 0, 50),
      ev("load", "app", 20, 22, 105, 40),
      ev("aten::mm", "op", 20, 21, 110, 30, "\"phase\":\"forward\""),
      ev("train_step", "app", 20, 21, 100, 50),
  });
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(t, threads, 64);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].source, "region");
    EXPECT_EQ(r.processes[0].region, "train_step");
    ASSERT_EQ(r.rows.size(), 2u);
    EXPECT_EQ(r.rows[0].by_category_us[kForward], 30);
    EXPECT_EQ(r.rows[0].traced_us, 50 + 40);  // the loader's time inside step 0
  }
}

TEST(Steps, JsonAndCsvCarryTheRows) {
  StepReport r = run(region_trace(), 1);
  std::ostringstream js, csv;
  write_steps_json(js, r);
  write_steps_csv(csv, r);
  EXPECT_NE(js.str().find("\"source\":\"region\""), std::string::npos);
  EXPECT_NE(js.str().find("\"compile_us\":8,"), std::string::npos);
  EXPECT_NE(js.str().find("\"outlier\":true"), std::string::npos);
  const std::string c = csv.str();
  EXPECT_NE(c.find("10,0,train_step,"), std::string::npos);
  EXPECT_EQ(std::count(c.begin(), c.end(), '\n'), 4);
}

}  // namespace
}  // namespace dftracer::analyze::testing
