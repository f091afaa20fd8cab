// Steps on hand-made traces: found from a `step` arg or from the repeated
// top-level region of the main thread, every event of the process inside a
// step (any thread) attributed to it by self time, the rest "outside", the
// split adding up to each step's traced time, and outlier steps flagged --
// the same whatever the reader threads and pieces.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "event_category.hpp"
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

enum Cat { kCompile, kForward, kBackward, kOptimizer, kComm, kData, kGc, kCheckpoint, kOther };  // kStepCategories
static_assert(kOther == kNumStepCategories - 1 && kCheckpoint == step_category_index("checkpoint"));

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
      ev("read", "POSIX", 10, 10, 150, 10),  // between steps 0 and 1: step 0 data
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

// A step runs from its region's start to the next one's start: the read
// between steps 0 and 1 is step 0's data time; the last step ends with its
// region, so "setup" after it is outside.
void expect_region_steps(const StepReport& r) {
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "region");
  EXPECT_EQ(r.processes[0].region, "train_step");
  ASSERT_EQ(r.rows.size(), 3u);
  const StepRow& s0 = r.rows[0];
  EXPECT_EQ(s0.duration_us, 200);
  EXPECT_EQ(s0.by_category_us[kCompile], 8);
  EXPECT_EQ(s0.by_category_us[kForward], 30);
  EXPECT_EQ(s0.by_category_us[kBackward], 30 + 40);  // the worker thread's op is in the step
  EXPECT_EQ(s0.by_category_us[kOptimizer], 10);
  EXPECT_EQ(s0.by_category_us[kData], 10);
  EXPECT_EQ(s0.by_category_us[kOther], 100 - 8 - 30 - 30 - 10);  // the step region's own self time
  EXPECT_EQ(s0.traced_us, 150);                                    // both threads' time inside the step
  double sum = 0;
  for (double v : s0.by_category_us) sum += v;
  EXPECT_EQ(sum, s0.traced_us);
  // Wall time: the backward of both threads ([20, 60) and [50, 80)) counts
  // once, and an instant goes to the first category open in it (compile >
  // optimizer > backward > forward > comm > data > other); the rest is untraced.
  EXPECT_EQ(s0.wall_us[kCompile], 8);
  EXPECT_EQ(s0.wall_us[kOptimizer], 10);
  EXPECT_EQ(s0.wall_us[kBackward], 60);
  EXPECT_EQ(s0.wall_us[kForward], 10);  // [10, 20): the rest of the forward is under the backward
  EXPECT_EQ(s0.wall_us[kData], 10);
  EXPECT_EQ(s0.wall_us[kOther], 12);  // the region's instants with nothing else open
  EXPECT_EQ(s0.untraced_us, 90);
  double wall = s0.untraced_us;
  for (double v : s0.wall_us) wall += v;
  EXPECT_EQ(wall, s0.duration_us);
  EXPECT_DOUBLE_EQ(s0.compile_share, 8.0 / 200);
  EXPECT_EQ(r.rows[1].by_category_us[kForward], 50);
  EXPECT_EQ(r.rows[1].by_category_us[kOther], 50);
  EXPECT_EQ(r.rows[1].by_category_us[kCompile], 0);
  EXPECT_EQ(r.rows[1].untraced_us, 100);
  EXPECT_EQ(r.rows[2].duration_us, 1000);
  EXPECT_FALSE(r.rows[0].outlier);
  EXPECT_FALSE(r.rows[1].outlier);
  EXPECT_TRUE(r.rows[2].outlier);
  EXPECT_EQ(r.outside_us[kData], 0);
  EXPECT_EQ(r.outside_us[kOther], 100);
  EXPECT_EQ(r.outside_traced_us, 100);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].span_us, 1600);
  EXPECT_EQ(r.runs[0].wall_us[kCompile], 8);
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
  EXPECT_EQ(r.rows[1].duration_us, 100);  // to step 3's first event
  EXPECT_EQ(r.rows[2].duration_us, 100);  // no earlier step had a top-level event: the median step
  EXPECT_EQ(r.rows[1].by_category_us[kData], 20);
  EXPECT_EQ(r.rows[1].by_category_us[kForward], 40);
  EXPECT_EQ(r.rows[1].traced_us, 100);
  EXPECT_EQ(r.rows[0].traced_us, 80);
  // The main thread's region encloses the steps without lying inside one; the
  // other process, with no model work beside one with some, is a helper.
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

// An eager model with a compiled optimizer step (`@torch.compile def
// step(): opt.step()`, which breaks into 4 frames): no Optimizer.step event,
// and torch's guard-check scope opens each compiled call, 4 per iteration.
// It is no user region: once taken for one, the loop of 12 iterations read
// as 44 steps of 6-180 us. No steps, said so, rather than wrong ones.
TEST(Steps, TorchsGuardCheckScopeIsNoStepRegion) {
  std::vector<std::string> v;
  for (int k = 0; k < 6; ++k) {
    const long long t = 1000 + 200 * k;
    v.push_back(ev("nn.Module: Sequential", "torch", 10, 10, t, 30, "\"phase\":\"forward\""));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 30));
    for (int f = 0; f < 4; ++f) {
      v.push_back(ev("TorchDynamo Cache Lookup", "torch", 10, 10, t + 80 + 25 * f, 5));
      v.push_back(ev("Torch-Compiled Region: " + std::to_string(f) + "/0", "torch", 10, 10, t + 86 + 25 * f, 15));
    }
    v.push_back(ev("Optimizer.zero_grad#Adam.zero_grad", "torch", 10, 10, t + 185, 5, "\"phase\":\"optimizer\""));
  }
  StepReport r = run(lines(v), 1);
  EXPECT_TRUE(r.rows.empty()) << r.rows.size() << (r.processes.empty() ? "" : " " + r.processes[0].region);
}

// A loop that marks no step (no region around an iteration, no
// update(step=...)), as the LibTorch observer records an eager one: torch's
// Optimizer.step events end the steps. The model's init ops before the loop
// are outside, though the last step has one of their names (a detach the
// observer records in some iterations only), and torch's `detach` scope
// inside each optimizer step, repeated, is no step region.
TEST(Steps, OptimizerStepsEndTheStepsOfALoopThatMarksNone) {
  std::vector<std::string> v = {ev("aten::detach", "aten", 10, 10, 0, 5), ev("aten::uniform_", "aten", 10, 10, 10, 5)};
  for (int k = 0; k < 3; ++k) {
    const long long t = 2000 + 100 * k;
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20));
    if (k == 2) v.push_back(ev("aten::detach", "aten", 10, 10, t + 35, 2));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
    v.push_back(ev("detach", "torch", 10, 10, t + 75, 5));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
  }
  v.push_back(ev("aten::empty", "aten", 10, 10, 2500, 5));  // after the loop: outside
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  EXPECT_EQ(r.processes[0].region, "Optimizer.step#AdamW.step");
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 2000);  // the first zero_grad, not the init ops
  EXPECT_EQ(r.rows[0].duration_us, 90);
  EXPECT_EQ(r.rows[1].duration_us, 100);  // from the previous optimizer step's end to its own
  EXPECT_EQ(r.rows[2].duration_us, 100);
  EXPECT_EQ(r.rows[2].wall_us[kBackward], 20);  // the autograd node
  EXPECT_EQ(r.outside_traced_us, 5 + 5 + 5);
}

// A GradScaler that skipped its optimizer's step (overflowed gradients)
// leaves no Optimizer.step: its own event (the capture's, args.skipped 1)
// ends that iteration's step, and one holding the optimizer's step counts
// once. Four iterations, the first and third skipped: four steps, the
// optimizer's time the scaler's.
TEST(Steps, AGradScalerStepEndsTheStepWhoseOptimizerStepItSkipped) {
  std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 0, 5)};
  for (int k = 0; k < 4; ++k) {
    const long long t = 2000 + 100 * k;
    const bool skipped = k % 2 == 0;
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20, "\"phase\":\"forward\""));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20, "\"phase\":\"backward\""));
    v.push_back(ev("aten::_amp_foreach_non_finite_check_and_unscale_", "aten", 10, 10, t + 70, 4, "\"grad\":0"));
    if (!skipped) v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 76, 14, "\"opt\":0"));
    v.push_back(ev("GradScaler.step#AdamW.step", "torch", 10, 10, t + 70, 20,
                   std::string("\"opt\":0,\"skipped\":") + (skipped ? "1" : "0")));
    v.push_back(ev("aten::_amp_update_scale_", "aten", 10, 10, t + 92, 2, "\"grad\":0"));
  }
  v.push_back(ev("aten::empty", "aten", 10, 10, 2600, 5));  // after the loop: outside
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  EXPECT_EQ(r.processes[0].region, "GradScaler.step#AdamW.step");
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].duration_us, 90);  // from its first zero_grad
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(r.rows[i].duration_us, 100) << i;
  for (const auto& row : r.rows) EXPECT_EQ(row.wall_us[kOptimizer], 20 + 5);  // and its zero_grad
}

// optimizer.step(closure) (LBFGS, Lightning's automatic optimization): each
// iteration's forward and backward run inside its optimizer step's scope.
// The scope is optimizer time only where the closure's work is not: each
// step reads 20 us forward, 35 backward, 45 optimizer (the update's op and
// the scope's own Python). An optimizer stepping in a backward hook (the
// scope inside backward work) stays optimizer time whole.
TEST(Steps, AClosuresForwardAndBackwardInsideTheOptimizerStepAreTheirOwn) {
  std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 0, 5)};
  for (int k = 0; k < 4; ++k) {
    const long long t = 1000 + 100 * k;
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20, "\"phase\":\"forward\""));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 35, 35, "\"phase\":\"backward\""));
    v.push_back(ev("aten::_foreach_add_", "aten", 10, 10, t + 75, 15, "\"phase\":\"optimizer\""));
    v.push_back(ev("Optimizer.step#LBFGS.step", "torch", 10, 10, t, 100, "\"phase\":\"optimizer\""));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 4u);
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.wall_us[kForward], 20);
    EXPECT_EQ(row.wall_us[kBackward], 35);
    EXPECT_EQ(row.wall_us[kOptimizer], 45);
  }
  std::vector<std::string> hook = {ev("aten::uniform_", "aten", 10, 10, 0, 5)};
  for (int k = 0; k < 4; ++k) {
    const long long t = 1000 + 100 * k;
    hook.push_back(ev("aten::linear", "aten", 10, 10, t, 20, "\"phase\":\"forward\""));
    hook.push_back(ev("aten::_foreach_add_", "aten", 10, 10, t + 50, 5, "\"phase\":\"optimizer\""));
    hook.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 45, 20, "\"phase\":\"optimizer\""));
    hook.push_back(ev("Tensor.backward", "torch", 10, 10, t + 25, 60, "\"phase\":\"backward\""));
  }
  r = run(lines(hook), 1);
  ASSERT_EQ(r.rows.size(), 4u);
  for (size_t i = 1; i < r.rows.size(); ++i) {
    EXPECT_EQ(r.rows[i].wall_us[kOptimizer], 20) << i;
    EXPECT_EQ(r.rows[i].wall_us[kBackward], 40) << i;
  }
}

// A wait after an optimizer step far beyond the usual one (more than the
// usual wait plus a step) is outside the steps only when it holds more than
// the usual wait: here a checkpoint's region (a top-level event, no model
// work). The same wait holding nothing (the process preempted) is its
// step's.
TEST(Steps, ALongWaitIsOutsideOnlyWithWorkOrEventsTheUsualWaitLacks) {
  for (const bool checkpoint : {false, true}) {
    std::vector<std::string> v;
    long long t = 0;
    for (int k = 0; k < 6; ++k) {
      if (k == 3) {
        if (checkpoint) v.push_back(ev("save_checkpoint", "user", 10, 10, t + 50, 300));
        t += 400;  // the wait before iteration 3
      }
      v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t + 10, 5));
      v.push_back(ev("aten::linear", "aten", 10, 10, t + 20, 20));
      v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 45, 20));
      v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
      t += 100;
    }
    StepReport r = run(lines(v), 1);
    ASSERT_EQ(r.rows.size(), 6u) << checkpoint;
    EXPECT_EQ(r.processes[0].source, "optimizer");
    for (size_t k = 1; k < 6; ++k)  // from the previous optimizer step's end, or the first zero_grad after the checkpoint
      EXPECT_EQ(r.rows[k].duration_us, k == 3 ? (checkpoint ? 80 : 500) : 100) << checkpoint << " step " << k;
  }
}

// A garbage collection runs wherever allocations trigger it: a full one in
// the wait before an iteration is that iteration's time (category gc), not
// other work that would cut the wait out as a checkpoint's; and the
// collections while the interpreter builds the model or exits, before and
// after every other event, do not widen the run.
TEST(Steps, AGarbageCollectionInAWaitIsTheIterationsOwnAndWidensNoRun) {
  std::vector<std::string> v;
  v.push_back(ev("gc.gen2", "gc", 10, 10, -900, 200, "\"generation\":2"));
  long long t = 0;
  for (int k = 0; k < 6; ++k) {
    if (k == 3) {
      v.push_back(ev("gc.gen2", "gc", 10, 10, t + 50, 300, "\"generation\":2,\"collected\":7"));
      t += 400;
    }
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t + 10, 5));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 20, 20));
    v.push_back(ev("gc.gen0", "gc", 10, 10, t + 41, 2, "\"generation\":0"));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 45, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
    t += 100;
  }
  v.push_back(ev("gc.gen2", "gc", 10, 10, t + 500, 700, "\"generation\":2"));
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 256);
    ASSERT_EQ(r.rows.size(), 6u) << threads;
    EXPECT_EQ(r.processes[0].source, "optimizer");
    for (size_t k = 1; k < 6; ++k) {
      EXPECT_EQ(r.rows[k].duration_us, k == 3 ? 500 : 100) << "step " << k;
      EXPECT_EQ(r.rows[k].wall_us[kGc], k == 3 ? 302 : 2) << "step " << k;
      EXPECT_EQ(r.rows[k].by_category_us[kGc], k == 3 ? 302 : 2) << "step " << k;
    }
    ASSERT_EQ(r.runs.size(), 1u);
    EXPECT_EQ(r.runs[0].span_us, 990 - 10);  // the first zero_grad to the last optimizer step's end
    EXPECT_EQ(r.runs[0].wall_us[kGc], 300 + 6 * 2);
  }
}

// In whole microseconds a sub-microsecond op and its caller can share one
// interval: both are kept as top-level, so the op's name is top-level in
// some iterations by chance. Here every later iteration has such an
// `aten::detach` (sharing AccumulateGrad's interval) and the first has its
// detach nested: the first step still begins at the loop's first work, not
// at the model's init detach right before the loop.
TEST(Steps, AnOpSharingItsCallersMicrosecondDoesNotPullTheFirstStepIntoTheSetup) {
  std::vector<std::string> v = {ev("aten::detach", "aten", 10, 10, 1950, 5),
                                ev("aten::uniform_", "aten", 10, 10, 1960, 5)};
  for (int k = 0; k < 3; ++k) {
    const long long t = 2000 + 100 * k;
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
    v.push_back(ev("aten::detach", "aten", 10, 10, t + 65, k == 0 ? 0 : 1));
    v.push_back(ev("torch::autograd::AccumulateGrad", "autograd", 10, 10, t + 65, 1));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 2000);
  EXPECT_EQ(r.rows[0].duration_us, 90);
}

// A name every later iteration has at top level and the first lacks (a
// running loss updated from the second iteration on) is found in the setup
// long before the loop: the first step's walk stops at a gap longer than any
// later step, so the setup stays outside.
TEST(Steps, TheFirstStepNeverReachesOverAGapLongerThanAnyStep) {
  std::vector<std::string> v = {ev("aten::add", "aten", 10, 10, 0, 5), ev("aten::uniform_", "aten", 10, 10, 10, 5)};
  for (int k = 0; k < 3; ++k) {
    const long long t = 20000 + 100 * k;
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20));
    if (k > 0) v.push_back(ev("aten::add", "aten", 10, 10, t + 32, 2));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 20000);
  EXPECT_EQ(r.rows[0].duration_us, 90);
}

// On a loaded machine the first iteration can be preempted for longer than
// any later step: between its forward and its backward, or between its
// backward and its optimizer step. Those gaps border backward work: the
// iteration's own, crossed; the one before the forward (the setup's) is not.
TEST(Steps, TheFirstStepCrossesAPreemptionNextToItsBackward) {
  for (const bool before_step : {true, false}) {
    std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 0, 5)};
    const long long fwd = 1000, bwd = before_step ? 1030 : 1530, step = 1560;
    v.push_back(ev("aten::linear", "aten", 10, 10, fwd, 20));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, bwd, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, step, 20));
    for (int k = 1; k < 4; ++k) {
      const long long t = 1500 + 100 * k;
      v.push_back(ev("aten::linear", "aten", 10, 10, t + 20, 20));
      v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 45, 20));
      v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
    }
    StepReport r = run(lines(v), 1);
    ASSERT_EQ(r.rows.size(), 4u) << before_step;
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + fwd) << before_step;  // not the setup's uniform_ 1 ms before
    EXPECT_EQ(r.rows[0].duration_us, step + 20 - fwd) << before_step;
  }
}

// Gradient accumulation over two micro-batches, a warm-up forward and
// backward before the loop: the first iteration was preempted for 500 us
// between its micro-batches, longer than any later step. The gap is the
// iteration's own (the walk still misses some of every backward node every
// later step has); the one after the warm-up's backward is not, also where
// the first micro-batch lacks a node (rounded to 0 us and popped): one
// node short opens no gap.
TEST(Steps, TheFirstStepCrossesAPreemptionBetweenItsMicroBatches) {
  auto micro_batch = [](std::vector<std::string>& v, long long t, bool relu) {
    v.push_back(ev("aten::linear", "aten", 10, 10, t, 20));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 25, 10));
    if (relu) v.push_back(ev("ReluBackward0", "autograd", 10, 10, t + 36, 9));
  };
  for (const bool first_lacks_a_node : {false, true}) {
    std::vector<std::string> v;
    micro_batch(v, 0, true);  // the warm-up
    micro_batch(v, 1000, !first_lacks_a_node);
    micro_batch(v, 1550, true);
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, 1600, 20));
    for (int k = 0; k < 4; ++k) {
      const long long t = 1700 + 150 * k;
      micro_batch(v, t, true);
      micro_batch(v, t + 50, true);
      v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 100, 20));
    }
    StepReport r = run(lines(v), 1);
    ASSERT_EQ(r.rows.size(), 5u) << first_lacks_a_node;
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000) << first_lacks_a_node;  // not the second micro-batch, nor the warm-up
    EXPECT_EQ(r.rows[0].duration_us, 620) << first_lacks_a_node;
  }
}

// Gradient clipping between the backward and the optimizer step (grad-off
// ops): a preemption before the clipping or before the step, in the first
// iteration and longer than any later step, is still the iteration's own.
TEST(Steps, TheFirstStepCrossesAPreemptionAroundItsGradientClipping) {
  for (const bool before_clip : {true, false}) {
    std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 0, 5, "\"grad\":0")};
    const long long clip = before_clip ? 1540 : 1030, step = before_clip ? 1550 : 1540;
    v.push_back(ev("aten::linear", "aten", 10, 10, 1000, 10));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, 1012, 10));
    v.push_back(ev("aten::_foreach_norm", "aten", 10, 10, clip, 5, "\"grad\":0"));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, step, 20));
    for (int k = 1; k < 4; ++k) {
      const long long t = 1500 + 100 * k;
      v.push_back(ev("aten::linear", "aten", 10, 10, t + 20, 10));
      v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 32, 10));
      v.push_back(ev("aten::_foreach_norm", "aten", 10, 10, t + 45, 5, "\"grad\":0"));
      v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 52, 20));
    }
    StepReport r = run(lines(v), 1);
    ASSERT_EQ(r.rows.size(), 4u) << before_clip;
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000) << before_clip;
    EXPECT_EQ(r.rows[0].duration_us, step + 20 - 1000) << before_clip;
  }
}

// A warm-up before the loop (a forward and a backward, no optimizer step)
// 5 ms before it, in a loop that zeroes the gradients after each step: the
// walk back, still missing a zero_grad, does not cross the gap after the
// warm-up's backward (a backward borders it, but before, not after it).
TEST(Steps, TheFirstStepDoesNotReachBackOverAGapAfterAWarmUpsBackward) {
  std::vector<std::string> v = {ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, 0, 5),
                                ev("aten::linear", "aten", 10, 10, 10, 20),
                                ev("AddmmBackward0", "autograd", 10, 10, 35, 20)};
  for (int k = 0; k < 5; ++k) {
    const long long t = 5000 + 100 * k;
    v.push_back(ev("aten::linear", "aten", 10, 10, t, 20));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 25, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 50, 15));
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t + 66, 4));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 5000);
  EXPECT_EQ(r.rows[0].duration_us, 65);
}

// n iterations of 100 us from `from`: a forward, its backward, the loss
// detached (3 us), the optimizer step.
void add_detaching_iterations(std::vector<std::string>& v, long long from, int n) {
  for (int k = 0; k < n; ++k) {
    const long long t = from + 100 * k;
    v.push_back(ev("aten::linear", "aten", 10, 10, t, 20));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 25, 20));
    v.push_back(ev("aten::detach", "aten", 10, 10, t + 50, 3));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 60, 15));
  }
}

// Every later step detaches its loss (3 us); in the first iteration the
// detach lasts 0 in whole microseconds, so it is no TopLevel work. The
// first step's walk finds it anyway and stops at the iteration's first op,
// not at the setup's detach 45 us before it (a gap shorter than a step).
TEST(Steps, TheFirstStepFindsAZeroLengthOpOfItsIterationNotTheSetups) {
  std::vector<std::string> v = {ev("aten::detach", "aten", 10, 10, 0, 2), ev("aten::to", "aten", 10, 10, 10, 5),
                                ev("aten::linear", "aten", 10, 10, 60, 20),
                                ev("AddmmBackward0", "autograd", 10, 10, 85, 20),
                                ev("aten::detach", "aten", 10, 10, 110, 0),
                                ev("Optimizer.step#AdamW.step", "torch", 10, 10, 120, 15)};
  add_detaching_iterations(v, 200, 4);
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 60);
  EXPECT_EQ(r.rows[0].duration_us, 75);
}

// The first iteration lacks an op every later step has (here no detach at
// all), and the only earlier one lies past a gap longer than any step. The
// walk then ends with that name missing: the first step begins where the
// last name it did find was (the iteration's first op), not at the setup's
// last work before that gap (its model moved to the device, 40 us earlier).
TEST(Steps, AFirstStepLackingAnOpOfTheLaterStepsBeginsAtTheLastOpItFound) {
  std::vector<std::string> v = {ev("aten::detach", "aten", 10, 10, 0, 2), ev("aten::to", "aten", 10, 10, 600, 5),
                                ev("aten::linear", "aten", 10, 10, 650, 20),
                                ev("AddmmBackward0", "autograd", 10, 10, 675, 20),
                                ev("Optimizer.step#AdamW.step", "torch", 10, 10, 710, 15)};
  add_detaching_iterations(v, 800, 4);
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 650);
  EXPECT_EQ(r.rows[0].duration_us, 75);
}

// A compiled loop's first iteration has untraced stretches inside its
// compile (the backward compiled lazily after the forward ran): one longer
// than the traced part of any later step (here 50 us against 40) but shorter
// than a later step (100 us or more, from the previous optimizer step's end)
// is crossed, so the first step holds its forward and the compile before it.
TEST(Steps, TheFirstStepCrossesAnUntracedStretchOfItsCompileShorterThanAStep) {
  std::vector<std::string> v = {ev("setup", "app", 10, 10, 0, 5),
                                ev("dynamo.trace", "compile", 10, 10, 100, 300),
                                ev("graph.forward", "dynamo", 10, 10, 405, 20, "\"phase\":\"forward\""),
                                ev("backend_compile", "compile", 10, 10, 475, 30),
                                ev("graph.backward", "dynamo", 10, 10, 510, 20, "\"phase\":\"backward\""),
                                ev("Optimizer.step#AdamW.step", "torch", 10, 10, 540, 20)};
  for (int k = 1; k < 4; ++k) {
    const long long t = 500 + 100 * k;  // 50 us untraced (a batch read), then 40 us traced
    v.push_back(ev("graph.forward", "dynamo", 10, 10, t + 50, 10, "\"phase\":\"forward\""));
    v.push_back(ev("graph.backward", "dynamo", 10, 10, t + 65, 10, "\"phase\":\"backward\""));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 80, 10));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 100);  // the compile before the forward, not the setup
  EXPECT_EQ(r.rows[0].duration_us, 460);
  EXPECT_EQ(r.rows[0].wall_us[kForward], 20);
  EXPECT_EQ(r.rows[0].wall_us[kCompile], 300 + 30);
  EXPECT_EQ(r.rows[1].duration_us, 130);
  EXPECT_EQ(r.outside_traced_us, 5);
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

// An instant step mark, as Dynamo/dft_ai update(step=...) writes it.
std::string mark(int pid, long long ts, int step) {
  return "{\"name\":\"step\",\"cat\":\"dftracer\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
         std::to_string(pid) + ",\"ts\":" + std::to_string(1'000'000 + ts) + ",\"ph\":\"i\",\"args\":{\"step\":" +
         std::to_string(step) + "}}\n";
}

std::vector<double> durations(const StepReport& r) {
  std::vector<double> d;
  for (const StepRow& x : r.rows) d.push_back(x.duration_us);
  return d;
}

TEST(Steps, ARegionInsideAnEpochIsTheStepAndEpochsCutIt) {
  // Two epochs of three train_steps; between the epochs 300 us of evaluation.
  std::vector<std::string> v;
  for (int epoch = 0; epoch < 2; ++epoch) {
    const long long base = epoch * 1000;
    for (int i = 0; i < 3; ++i) {
      const long long ts = base + i * 100;
      v.push_back(ev("aten::mm", "op", 4, 4, ts + 10, 50, "\"phase\":\"forward\""));
      v.push_back(ev("train_step", "app", 4, 4, ts, 90));
    }
    v.push_back(ev("epoch", "app", 4, 4, base, 300));
  }
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 64);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].region, "train_step");
    // To the next step's start, but the last of each epoch ends with its region.
    EXPECT_EQ(durations(r), (std::vector<double>{100, 100, 90, 100, 100, 90}));
  }
}

TEST(Steps, StepMarksStartStepsAndStickyTagsAfterTheLoopAreOutside) {
  // update(step=i) marks at 0, 100, 200, 300; each step: forward and backward
  // graph calls (carrying the step tag), untraced optimizer work after them.
  // After the loop an evaluation still carries step 3's tag, 400 us later.
  std::vector<std::string> v;
  v.push_back(ev("dynamo.trace", "compile", 6, 6, 2, 30));  // the first call compiles
  for (int i = 0; i < 4; ++i) {
    const long long ts = i * 100 + (i ? 0 : 30);
    v.push_back(mark(6, i * 100, i));
    const std::string tag = "\"step\":" + std::to_string(i);
    v.push_back(ev("graph.forward", "dynamo", 6, 6, ts + 5, 20, "\"phase\":\"forward\"," + tag));
    v.push_back(ev("graph.backward", "dynamo", 6, 6, ts + 30, 30, "\"phase\":\"backward\"," + tag));
  }
  v.push_back(ev("graph.forward", "dynamo", 6, 6, 800, 20, "\"phase\":\"inference\",\"step\":3"));
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 64);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].source, "marks");
    ASSERT_EQ(r.rows.size(), 4u);
    EXPECT_EQ(r.rows[1].label, "1");
    // Steps 0 to 2 reach the next mark; the last takes two top-level events as
    // the others mostly did, then their usual 40 us of untraced tail.
    EXPECT_EQ(durations(r), (std::vector<double>{100, 100, 100, 100}));
    EXPECT_EQ(r.rows[0].wall_us[kCompile], 30);
    EXPECT_EQ(r.rows[1].wall_us[kBackward], 30);  // backward in the step, not only the forward
    EXPECT_EQ(r.rows[1].untraced_us, 50);
    EXPECT_EQ(r.outside_us[kForward], 20);  // the evaluation after the loop
  }
}

TEST(Steps, StepArgsWithoutMarksIncludeTheCompileBeforeTheFirstTaggedEvent) {
  std::vector<std::string> v;
  v.push_back(ev("setup", "app", 6, 6, 0, 10));
  v.push_back(ev("dynamo.trace", "compile", 6, 6, 20, 300));
  v.push_back(ev("backend_compile", "compile", 6, 6, 330, 100));
  for (int i = 0; i < 3; ++i) {
    const long long ts = 440 + i * 100;
    const std::string tag = "\"step\":" + std::to_string(i);
    v.push_back(ev("graph.forward", "dynamo", 6, 6, ts, 20, "\"phase\":\"forward\"," + tag));
    v.push_back(ev("graph.backward", "dynamo", 6, 6, ts + 30, 30, "\"phase\":\"backward\"," + tag));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "args.step");
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'020);  // the compile work, not the setup before it
  EXPECT_EQ(r.rows[0].wall_us[kCompile], 400);
  EXPECT_EQ(r.rows[0].duration_us, 520);
  EXPECT_EQ(r.rows[1].duration_us, 100);
  EXPECT_EQ(r.rows[2].duration_us, 100);  // two top-level events and the usual 40 us tail
}

TEST(Steps, DataLoaderWorkersHaveNoStepsAndLayersAreNotSteps) {
  std::vector<std::string> v;
  // Workers 51 and 52: repeated item fetches (a region) and reads.
  for (int w = 51; w <= 52; ++w)
    for (int i = 0; i < 6; ++i) {
      v.push_back(ev("read", "POSIX", w, w, i * 50 + 5, 10));
      v.push_back(ev("Squares.__getitem__", "app", w, w, i * 50, 30));
      v.push_back(ev("helper_region", "app", w, w, i * 50 + 35, 5));
    }
  // The main process: inference steps, each with 4 layer regions holding the ops.
  for (int i = 0; i < 4; ++i) {
    const long long ts = i * 200;
    for (int l = 0; l < 4; ++l) {
      v.push_back(ev("aten::mm", "op", 50, 50, ts + 10 + l * 40, 30, "\"phase\":\"inference\""));
      v.push_back(ev("Block.forward", "app", 50, 50, ts + 5 + l * 40, 38));
    }
    v.push_back(ev("infer", "app", 50, 50, ts, 180));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].pid, "50");
  EXPECT_EQ(r.processes[0].region, "infer");
  EXPECT_EQ(r.rows.size(), 4u);
  ASSERT_EQ(r.without_steps.size(), 2u);
  EXPECT_EQ(r.without_steps[0].source, "helper");
}

// Eager tracing gives a DataLoader worker's transforms (torch.from_numpy(x).mean(0)
// in __getitem__, grad mode on) phase forward: still no model work, as torch's
// name for the worker's thread says; its run is not the model's.
TEST(Steps, AnEagerDataLoaderWorkerIsAHelperByItsThreadsName) {
  std::vector<std::string> v;
  v.push_back("{\"id\":1,\"name\":\"thread_name\",\"cat\":\"dftracer\",\"pid\":51,\"tid\":51,\"ph\":\"M\","
              "\"args\":{\"name\":\"pt_data_worker\"}}\n");
  for (int i = 0; i < 6; ++i) {
    v.push_back(ev("read", "POSIX", 51, 51, 5000 + i * 50 + 5, 10));
    v.push_back(ev("aten::mean", "aten", 51, 51, 5000 + i * 50 + 20, 10, "\"phase\":\"forward\""));
  }
  for (int i = 0; i < 4; ++i) {
    v.push_back(ev("aten::mm", "op", 50, 50, i * 200 + 10, 30, "\"phase\":\"forward\""));
    v.push_back(ev("aten::mm", "op", 50, 50, i * 200 + 50, 30, "\"phase\":\"backward\""));
    v.push_back(ev("Optimizer.step#SGD.step", "cpu_op", 50, 50, i * 200 + 90, 10));
  }
  for (unsigned threads : {1u, 3u}) {
    StepReport r = run(lines(v), threads, 64);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].pid, "50");
    ASSERT_EQ(r.without_steps.size(), 1u);
    EXPECT_EQ(r.without_steps[0].pid, "51");
    EXPECT_EQ(r.without_steps[0].source, "helper");
    EXPECT_FALSE(r.without_steps[0].model_work);
    // The run is the main process's alone: the worker's span (5000 us on) adds nothing.
    EXPECT_EQ(model_run_wall(r).processes, 1u);
  }
}

// The observer marks a DataLoader worker's thread: its ops are phase data
// (grad mode on or off): no model work whatever the thread's name (the
// worker is a helper), and category data.
TEST(Steps, OpsOfPhaseDataAreNoModelWorkAndCategoryData) {
  std::vector<std::string> v;
  for (int i = 0; i < 6; ++i) {
    v.push_back(ev("aten::mean", "aten", 51, 51, 5000 + i * 50 + 20, 10, "\"phase\":\"data\""));
    v.push_back(ev("aten::mul", "aten", 51, 51, 5000 + i * 50 + 32, 6, "\"phase\":\"data\",\"grad\":0"));
  }
  for (int i = 0; i < 4; ++i) {
    v.push_back(ev("aten::mm", "op", 50, 50, i * 200 + 10, 30, "\"phase\":\"forward\""));
    v.push_back(ev("aten::mm", "op", 50, 50, i * 200 + 50, 30, "\"phase\":\"backward\""));
    v.push_back(ev("Optimizer.step#SGD.step", "cpu_op", 50, 50, i * 200 + 90, 10));
  }
  StepReport r = run(lines(v), 1, 64);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].pid, "50");
  ASSERT_EQ(r.without_steps.size(), 1u);
  EXPECT_EQ(r.without_steps[0].source, "helper");
  EXPECT_FALSE(r.without_steps[0].model_work);
  Event e;
  e.phase = "data";
  e.cat = "aten";
  EXPECT_EQ(event_category(e), "data");
}

TEST(Steps, TheTrainingLoopWinsOverAShorterEvaluationLoop) {
  // 10 train_steps of 100 us, then 6 eval_steps of 90 us (fewer of them, and
  // less time): the training loop's steps.
  std::vector<std::string> v;
  for (int i = 0; i < 10; ++i) {
    v.push_back(ev("aten::mm", "op", 9, 9, i * 100 + 5, 80, "\"phase\":\"forward\""));
    v.push_back(ev("train_step", "app", 9, 9, i * 100, 100));
  }
  for (int i = 0; i < 6; ++i) {
    v.push_back(ev("aten::mm", "op", 9, 9, 2000 + i * 100 + 5, 80, "\"phase\":\"inference\""));
    v.push_back(ev("eval_step", "app", 9, 9, 2000 + i * 100, 90));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].region, "train_step");
  EXPECT_EQ(r.rows.size(), 10u);
}

TEST(Steps, CompileOnWorkerThreadsIsWallTimeNotTheirSum) {
  // Inductor-style: the main thread waits for 400 us while 2 workers compile
  // 400 us each: 1200 us of thread time, 400 us of wall time.
  std::vector<std::string> v;
  for (int i = 0; i < 2; ++i) {
    const long long ts = i * 1000;
    if (i == 0) {
      v.push_back(ev("async_compile.wait", "compile", 8, 8, 10, 400));
      v.push_back(ev("compile_file", "compile", 8, 81, 10, 400));
      v.push_back(ev("compile_file", "compile", 8, 82, 10, 400));
    }
    v.push_back(ev("kernel", "dynamo", 8, 8, ts + 450, 100, "\"phase\":\"forward\""));
    v.push_back(ev("train_step", "app", 8, 8, ts, 600));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].by_category_us[kCompile], 1200);
  EXPECT_EQ(r.rows[0].wall_us[kCompile], 400);
  EXPECT_LE(r.rows[0].wall_us[kCompile], r.rows[0].duration_us);
  EXPECT_DOUBLE_EQ(r.rows[0].compile_share, 400.0 / 1000);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].wall_us[kCompile], 400);
}

TEST(Steps, CommIsTheWaitNoModelWorkOverlaps) {
  // A DDP-style step: a bucket all-reduce on the autograd thread overlaps the
  // backward ops for 20 us, then the main thread waits 30 us for the last
  // bucket and 10 us in a barrier. Only the wait and the barrier are exposed
  // communication; the overlapped part is backward time. Thread time still
  // counts every collective's self time as comm.
  std::vector<std::string> v;
  for (int i = 0; i < 2; ++i) {
    const long long ts = i * 1000;
    v.push_back(ev("aten::mm", "op", 9, 9, ts + 10, 40, "\"phase\":\"forward\""));
    v.push_back(ev("aten::mm_bw", "op", 9, 9, ts + 50, 60, "\"phase\":\"backward\""));
    v.push_back(ev("all_reduce", "comm", 9, 91, ts + 90, 20, "\"ddp_bucket\":0"));
    v.push_back(ev("wait", "comm", 9, 9, ts + 110, 30));
    v.push_back(ev("barrier", "comm", 9, 9, ts + 150, 10));
    v.push_back(ev("train_step", "app", 9, 9, ts, 200));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 2u);
  const StepRow& s = r.rows[1];
  EXPECT_EQ(s.wall_us[kComm], 40);
  EXPECT_EQ(s.wall_us[kBackward], 60);
  EXPECT_EQ(s.wall_us[kForward], 40);
  EXPECT_EQ(s.wall_us[kOther], 200 - 40 - 60 - 40);  // the region's own instants
  EXPECT_EQ(s.by_category_us[kComm], 20 + 30 + 10);
  double wall = s.untraced_us;
  for (double x : s.wall_us) wall += x;
  EXPECT_EQ(wall, s.duration_us);
  EXPECT_EQ(r.runs[0].wall_us[kComm], 80);
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

// A loop of `n` iterations, `period` us apart, on pid/tid 10: each holds `opts`
// optimizer steps (args.opt 0, 1, ... when `numbered`) after forward and
// backward work, in a `region` when one is named (`update`: around the
// optimizer steps alone); the iterations in `skipped` take no optimizer step
// (a GradScaler's overflow).
struct Loop {
  int n = 4, opts = 1;
  bool numbered = true;
  std::string region;
  std::vector<int> skipped;
  long long period = 100;
};
std::string loop_trace(const Loop& l) {
  std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 0, 5)};  // the model's init
  for (int k = 0; k < l.n; ++k) {
    const long long t = 1000 + l.period * k;
    const bool skip = std::count(l.skipped.begin(), l.skipped.end(), k) > 0;
    for (int o = 0; o < l.opts; ++o) {
      const long long u = t + 40 * o;
      v.push_back(ev("aten::linear", "aten", 10, 10, u + 2, 15));
      v.push_back(ev("AddmmBackward0", "autograd", 10, 10, u + 18, 15));
      if (skip) continue;
      v.push_back(ev("Optimizer.step#Adam.step", "torch", 10, 10, u + 35, 4,
                     l.numbered ? "\"opt\":" + std::to_string(o) : ""));
      if (l.region == "update") v.push_back(ev("update", "app", 10, 10, u + 34, 6));
    }
    if (!l.region.empty() && l.region != "update") v.push_back(ev(l.region, "app", 10, 10, t, 40 * l.opts));
  }
  return lines(v);
}

// Two optimizers per iteration (a GAN's discriminator, then its generator):
// the cycle's last optimizer step ends a step, where the optimizer hooks
// number the optimizers; without the numbers each optimizer step ends one.
TEST(Steps, TwoOptimizersPerIterationEndOneStepWhenNumbered) {
  StepReport r = run(loop_trace({4, 2, true, "", {}}), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  EXPECT_EQ(durations(r), (std::vector<double>{79 - 2, 100, 100, 100}));
  EXPECT_EQ(run(loop_trace({4, 2, false, "", {}}), 1).rows.size(), 8u);
}

// A region holding both optimizer steps of each iteration is the step,
// numbered or not (a step-like name), and so is one holding none in a few
// iterations (a GradScaler's skipped steps): every iteration is a step.
TEST(Steps, ARegionHoldingEachIterationsOptimizerCycleIsTheStep) {
  for (const Loop& l : {Loop{4, 2, true, "train_step", {}}, Loop{4, 2, false, "train_step", {}},
                        Loop{6, 1, true, "train_step", {0, 1}}, Loop{6, 2, true, "train_step", {1}}}) {
    StepReport r = run(loop_trace(l), 1);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].source, "region") << l.opts << " " << l.skipped.size();
    EXPECT_EQ(r.processes[0].region, "train_step");
    EXPECT_EQ(r.rows.size(), size_t(l.n));
  }
}

// A region around the optimizer step alone is no step: the optimizer's steps
// end the iterations.
TEST(Steps, ARegionAroundTheOptimizerStepAloneIsNoStep) {
  StepReport r = run(loop_trace({4, 1, true, "update", {}}), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  EXPECT_EQ(durations(r), (std::vector<double>{37, 100, 100, 100}));
}

// Between two iterations of a step region the loop can wait far longer than
// the iteration works (a slow data loader, a sleep stretched by a busy
// machine): the region is still the step, since most of its time is not its
// optimizer steps'. A region around the optimizer step alone stays no step
// with the same waits.
TEST(Steps, AStepRegionFarApartIsStillTheStepAndAnUpdateRegionIsNot) {
  for (int opts : {1, 2}) {
    StepReport r = run(loop_trace({4, opts, true, "train_step", {}, 1000}), 1);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].source, "region") << opts;
    EXPECT_EQ(r.processes[0].region, "train_step");
    EXPECT_EQ(durations(r), (std::vector<double>{1000, 1000, 1000, 40.0 * opts}));
  }
  StepReport r = run(loop_trace({4, 1, true, "update", {}, 1000}), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
}

// An eager loop (the LibTorch observer) with an evaluation after iteration 2:
// the observer writes "grad": 0 on the outermost work run with grad mode off,
// which is inference work and never begins a step, like a compiled
// inference graph call. The evaluation is outside every step, and so is the
// no_grad update each iteration makes after its optimizer step (an EMA),
// which is no wait: steps 1, 2 and 4 run from the optimizer step before.
TEST(Steps, GradOffEagerWorkIsInferenceAndNeverBeginsAStep) {
  std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 0, 5)};
  for (int k = 0; k < 5; ++k) {
    const long long t = 2000 + 100 * k + (k >= 3 ? 2100 : 0);
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
    v.push_back(ev("aten::_foreach_lerp_", "aten", 10, 10, t + 92, 3, "\"grad\":0"));  // EMA under no_grad
    if (k == 2) {  // the evaluation: three no_grad forwards
      for (int e = 0; e < 3; ++e) v.push_back(ev("aten::linear", "aten", 10, 10, t + 200 + 600 * e, 500, "\"grad\":0"));
      // An op nested in a grad-off one, sharing its microseconds: kept as
      // top-level too, and without the arg.
      v.push_back(ev("aten::clamp_min", "aten", 10, 10, t + 1950, 5));
      v.push_back(ev("aten::relu", "aten", 10, 10, t + 1950, 5, "\"grad\":0"));
    }
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  EXPECT_EQ(durations(r), (std::vector<double>{90, 100, 100, 90, 100}));
  EXPECT_EQ(r.rows[3].start_us, 1'000'000 + 2000 + 300 + 2100);  // its zero_grad, after the evaluation
  EXPECT_GE(r.outside_traced_us, 3 * 500);
}

// A no_grad block opening each iteration (a teacher model's forward, for
// distillation) is the iteration's own: the first step begins with it, not
// with the student's first op, and the model's init under no_grad (nn.init)
// before the loop stays outside.
TEST(Steps, AGradOffBlockOpeningEachIterationIsInItsStep) {
  std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 1900, 5, "\"grad\":0")};
  for (int k = 0; k < 4; ++k) {
    const long long t = 2000 + 100 * k;
    v.push_back(ev("aten::linear", "aten", 10, 10, t, 8, "\"grad\":0"));  // the teacher
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 2000);
  EXPECT_EQ(durations(r), (std::vector<double>{90, 100, 100, 100}));
}

// The first iteration of a compiled loop waits for its backward's compile,
// and between that compile and the backward graph's call Python runs
// untraced for longer than any later step: the first step's walk crosses
// that gap (compile work borders it) and begins with the forward's compile;
// the setup before it stays outside.
TEST(Steps, TheFirstStepCrossesAGapNextToItsCompile) {
  std::vector<std::string> v = {
      ev("aten::uniform_", "aten", 10, 10, 0, 5),
      ev("dynamo.trace", "compile", 10, 10, 1000, 500),
      ev("graph.forward", "dynamo", 10, 10, 1510, 10, "\"phase\":\"forward\""),
      ev("backend_compile", "compile", 10, 10, 1525, 30),
      ev("graph.backward", "dynamo", 10, 10, 1760, 10, "\"phase\":\"backward\""),
      ev("Optimizer.step#AdamW.step", "torch", 10, 10, 1775, 5, "\"opt\":0"),
  };
  for (int k = 1; k < 4; ++k) {
    const long long t = 1800 + 50 * (k - 1);
    v.push_back(ev("graph.forward", "dynamo", 10, 10, t + 5, 10, "\"phase\":\"forward\""));
    v.push_back(ev("graph.backward", "dynamo", 10, 10, t + 20, 10, "\"phase\":\"backward\""));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 35, 5, "\"opt\":0"));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000);
  EXPECT_EQ(r.rows[0].duration_us, 780);
}

// An eager training iteration at t (the LibTorch observer): a metric under
// no_grad before the backward, an EMA update under no_grad (ema_dur long)
// after the optimizer step.
void eager_iteration(std::vector<std::string>& v, long long t, long long ema_dur) {
  v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
  v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20));
  v.push_back(ev("aten::argmax", "aten", 10, 10, t + 32, 3, "\"grad\":0"));
  v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
  v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
  v.push_back(ev("aten::_foreach_lerp_", "aten", 10, 10, t + 92, ema_dur, "\"grad\":0"));
}

// A short evaluation (three no_grad forwards after iteration 2, its wait
// within the far-beyond bound: 100 us more than the usual 60 us, a step
// being 90 us) is outside every step: its wait holds more grad-off work than
// the usual waits, which hold the EMA update every iteration makes after its
// optimizer step (inside its step). Step 3 begins at its zero_grad, step 2
// ends with its optimizer step.
TEST(Steps, AShortEvaluationIsOutsideTheSteps) {
  std::vector<std::string> v;
  for (int k = 0; k < 5; ++k) {
    const long long t = 2000 + 150 * k + (k >= 3 ? 100 : 0);
    eager_iteration(v, t, 3);
    if (k == 2)  // the evaluation: three no_grad forwards of 30 us
      for (int e = 0; e < 3; ++e) v.push_back(ev("aten::linear", "aten", 10, 10, t + 100 + 32 * e, 30, "\"grad\":0"));
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "optimizer");
  EXPECT_EQ(durations(r), (std::vector<double>{90, 150, 150, 90, 150}));
  EXPECT_EQ(r.rows[3].start_us, 1'000'000 + 2000 + 450 + 100);  // its zero_grad, after the evaluation
  EXPECT_GE(r.outside_traced_us, 3 * 30);
}

// A checkpoint after iteration 2 (with or without an evaluation before it):
// `model.state_dict()` detaches every parameter with grad mode on (ops the
// observer writes with no grad arg, as forward work), then torch.save writes
// the file. Neither the checkpoint nor the ops inside it begin a step: step 3
// begins at its zero_grad, step 2 ends with its optimizer step, and the
// checkpoint's wall time is its own category, outside every step.
TEST(Steps, ACheckpointBetweenStepsIsOutsideAndTheOpsInsideItBeginNoStep) {
  for (bool with_eval : {false, true}) {
    std::vector<std::string> v;
    for (int k = 0; k < 5; ++k) {
      const long long t = 2000 + 150 * k + (k >= 3 ? 600 : 0);
      eager_iteration(v, t, 3);
      if (k != 2) continue;
      if (with_eval)
        for (int e = 0; e < 3; ++e) v.push_back(ev("aten::linear", "aten", 10, 10, t + 100 + 32 * e, 30, "\"grad\":0"));
      for (int d = 0; d < 3; ++d) v.push_back(ev("aten::detach", "aten", 10, 10, t + 205 + 10 * d, 5, "\"phase\":\"forward\""));
      v.push_back(ev("Net.state_dict", "checkpoint", 10, 10, t + 200, 50));
      v.push_back(ev("write", "POSIX", 10, 10, t + 270, 200, "\"fhash\":\"c0ffee\""));
      v.push_back(ev("torch.save", "checkpoint", 10, 10, t + 260, 300));
    }
    for (unsigned threads : {1u, 2u}) {
      StepReport r = run(lines(v), threads, 256);
      ASSERT_EQ(r.processes.size(), 1u);
      EXPECT_EQ(r.processes[0].source, "optimizer");
      EXPECT_EQ(durations(r), (std::vector<double>{90, 150, 150, 90, 150})) << with_eval << threads;
      EXPECT_EQ(r.rows[3].start_us, 1'000'000 + 2000 + 450 + 600) << with_eval << threads;  // its zero_grad
      for (const StepRow& row : r.rows) EXPECT_EQ(row.wall_us[kCheckpoint], 0);
      EXPECT_EQ(r.outside_us[kCheckpoint], (50 - 15) + (300 - 200));  // the checkpoint events' self time
      ASSERT_EQ(r.runs.size(), 1u);
      EXPECT_EQ(r.runs[0].wall_us[kCheckpoint], 50 + 300);  // before the detaches' forward and the write's data
    }
  }
}

// A checkpoint is told by its events, not by its wait's length: Hugging
// Face's Trainer saving every few steps adds less than a step to its wait
// (here 100 us against steps of 150: the far-beyond bound is 240), and the
// step after it once began at the optimizer step before the save and held
// it; also where the Trainer's loss logging (grad-on ops, phase forward)
// runs between the optimizer step and the save. Step 3 begins at its
// zero_grad. An EMA taking `state_dict()` after every optimizer step makes a
// checkpoint event the usual wait's: alone it splits nothing, and a save
// beside it still does.
TEST(Steps, ACheckpointIsOutsideTheStepsHoweverShortItsWait) {
  struct Case {
    bool ema, save, logged;
  };
  for (const Case c : {Case{false, true, false}, Case{false, true, true}, Case{true, true, false},
                       Case{true, true, true}, Case{true, false, false}}) {
    std::vector<std::string> v;
    for (int k = 0; k < 5; ++k) {
      const long long t = 2000 + 150 * k + (k >= 3 && c.save ? 100 : 0);
      eager_iteration(v, t, 3);
      if (c.ema) v.push_back(ev("Net.state_dict", "checkpoint", 10, 10, t + 96, 3));
      if (k != 2 || !c.save) continue;
      if (c.logged) v.push_back(ev("aten::mean", "aten", 10, 10, t + 99, 1, "\"phase\":\"forward\""));
      v.push_back(ev("aten::detach", "aten", 10, 10, t + 105, 5, "\"phase\":\"forward\""));
      v.push_back(ev("Net.save_pretrained", "checkpoint", 10, 10, t + 100, 20));
      v.push_back(ev("torch.save", "checkpoint", 10, 10, t + 125, 60));
    }
    for (unsigned threads : {1u, 2u}) {
      StepReport r = run(lines(v), threads, 256);
      ASSERT_EQ(r.rows.size(), 5u) << c.ema << c.save << c.logged << threads;
      if (c.save) {
        EXPECT_EQ(durations(r), (std::vector<double>{90, 150, 150, 90, 150})) << c.ema << c.logged << threads;
        EXPECT_EQ(r.rows[3].start_us, 1'000'000 + 2000 + 450 + 100) << c.ema << c.logged << threads;  // its zero_grad
        // An iteration's EMA is in the next step's wait: none in step 0, nor in step 3 (outside with the save).
        for (size_t k = 0; k < r.rows.size(); ++k)
          EXPECT_EQ(r.rows[k].wall_us[kCheckpoint], c.ema && k != 0 && k != 3 ? 3 : 0) << k << c.ema << threads;
      } else {
        for (size_t k = 1; k < r.rows.size(); ++k)
          EXPECT_EQ(r.rows[k].start_us, r.rows[k - 1].start_us + r.rows[k - 1].duration_us) << k << threads;
      }
    }
  }
}

// A rank that does not save waits in the `dist.barrier()` after an epoch
// for the one that does (here 100 us, below the far-beyond bound): a
// collective the usual wait does not hold is no iteration's own, and step 3
// begins at its zero_grad, as on the saving rank. Collectives every
// iteration makes before its forward (FSDP's all-gathers) are the usual
// wait's and split nothing.
TEST(Steps, AnEpochsBarrierIsOutsideTheStepsAndTheUsualCollectivesSplitNothing) {
  for (bool gather : {false, true})
    for (bool barrier : {true, false}) {
      if (!gather && !barrier) continue;
      std::vector<std::string> v;
      for (int k = 0; k < 5; ++k) {
        const long long t = 2000 + 150 * k + (k >= 3 && barrier ? 100 : 0);
        eager_iteration(v, t, 3);
        if (gather) v.push_back(ev("all_gather_into_tensor", "comm", 10, 10, t + 6, 3));
        if (k == 2 && barrier) v.push_back(ev("barrier", "comm", 10, 10, t + 100, 100));
      }
      for (unsigned threads : {1u, 2u}) {
        StepReport r = run(lines(v), threads, 256);
        ASSERT_EQ(r.rows.size(), 5u) << gather << barrier << threads;
        if (barrier) {
          EXPECT_EQ(durations(r), (std::vector<double>{90, 150, 150, 90, 150})) << gather << threads;
          EXPECT_EQ(r.rows[3].start_us, 1'000'000 + 2000 + 450 + 100) << gather << threads;  // its zero_grad
          EXPECT_EQ(r.outside_us[kComm], 100) << gather << threads;
        } else {
          for (size_t k = 1; k < r.rows.size(); ++k)
            EXPECT_EQ(r.rows[k].start_us, r.rows[k - 1].start_us + r.rows[k - 1].duration_us) << k << threads;
        }
      }
    }
}

// An EMA update after every optimizer step, 6 grad-off ops of which a
// varying number last 0 in whole microseconds (0, 1 or 2: which ones do
// varies on a loaded machine), and in one wait an op preempted for 120 us.
// That wait holds the usual update and no evaluation: counted without the
// zero-length ops it held more grad-off work than the usual wait and, with
// the preemption's time, was cut out of the steps.
TEST(Steps, APreemptedOpInTheUsualGradOffWorkIsNoEvaluation) {
  std::vector<std::string> v;
  for (int k = 0; k < 5; ++k) {
    const long long t = 2000 + 150 * k + (k >= 4 ? 120 : 0);
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20, "\"phase\":\"forward\""));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
    for (int j = 0; j < 6; ++j) {
      const int dur = j < k % 3 ? 0 : (k == 3 && j == 5 ? 121 : 1);
      v.push_back(ev("aten::mul", "aten", 10, 10, t + 92 + 3 * j, dur, "\"grad\":0"));
    }
  }
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 256);
    ASSERT_EQ(r.rows.size(), 5u) << threads;
    for (size_t k = 1; k < r.rows.size(); ++k)
      EXPECT_EQ(r.rows[k].start_us, r.rows[k - 1].start_us + r.rows[k - 1].duration_us) << k << threads;
  }
}

// Every third iteration a DQN copies its network into the target one
// (`target.load_state_dict(net.state_dict())`: checkpoint events, no file),
// or a loop all-reduces its running loss for the log: the loop's own work,
// in its steps, however they differ from the usual wait.
TEST(Steps, ATargetNetworkSyncOrAMetricAllReduceEveryFewStepsIsTheLoops) {
  for (bool sync : {true, false}) {
    std::vector<std::string> v;
    for (int k = 0; k < 6; ++k) {
      const long long t = 2000 + 150 * k;
      eager_iteration(v, t, 3);
      if (k % 3) continue;
      if (sync) {
        v.push_back(ev("Net.state_dict", "checkpoint", 10, 10, t + 100, 5));
        v.push_back(ev("Net.load_state_dict", "checkpoint", 10, 10, t + 106, 20));
      } else {
        v.push_back(ev("all_reduce", "comm", 10, 10, t + 100, 30));
      }
    }
    for (unsigned threads : {1u, 2u}) {
      StepReport r = run(lines(v), threads, 256);
      ASSERT_EQ(r.rows.size(), 6u) << sync << threads;
      for (size_t k = 1; k < r.rows.size(); ++k)
        EXPECT_EQ(r.rows[k].start_us, r.rows[k - 1].start_us + r.rows[k - 1].duration_us) << k << sync << threads;
    }
  }
}

// Five iterations of an eager loop adding each loss to a running one after
// its optimizer step (`running += loss.detach()`), 500 us apart from 2000;
// the first iteration's zero_grad at `first_zero_grad` for `first_dur` us.
void running_loss_loop(std::vector<std::string>& v, long long first_zero_grad = 2000, int first_dur = 5) {
  const std::string fwd = "\"phase\":\"forward\"";
  for (int k = 0; k < 5; ++k) {
    const long long t = 2000 + 500 * k;
    v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, k ? t : first_zero_grad, k ? 5 : first_dur));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 190, fwd));
    v.push_back(ev("nn.Module: Net", "torch", 10, 10, t + 9, 192, fwd));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 210, 200));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 420, 50));
    v.push_back(ev("aten::detach", "aten", 10, 10, t + 475, 2, fwd));
    v.push_back(ev("aten::add_", "aten", 10, 10, t + 479, 2, fwd));
  }
}

// A loop adding each loss to a running one after its optimizer step
// (`running += loss.detach()`): every later step opens with that tail, the
// previous iteration's, which the first has not. Looking for it, the first
// step's walk went back over the untraced data set-up (300 us, less than a
// step) into the DDP wrapper's construction, which runs the same ops, and
// began there. The work before the model's first call is looked for apart,
// near that call: the first step begins at its zero_grad.
TEST(Steps, TheFirstStepDoesNotLookForThePreviousIterationsTailInTheSetup) {
  std::vector<std::string> v;
  const std::string fwd = "\"phase\":\"forward\"";
  v.push_back(ev("aten::detach", "aten", 10, 10, 1690, 3, fwd));  // the wrapper's construction
  v.push_back(ev("aten::add_", "aten", 10, 10, 1695, 4, fwd));
  running_loss_loop(v);
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 256);
    ASSERT_EQ(r.rows.size(), 5u) << threads;
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 2000) << threads;  // its zero_grad
    EXPECT_EQ(r.rows[0].duration_us, 470) << threads;
  }
}

// Every third iteration logs its batch accuracy and the weight and
// gradient norms under no_grad after its optimizer step: many grad-off ops,
// longer than the usual wait's, and no model call. Where the observer wrote
// the model's calls that is the loop's logging, in its steps; the same ops
// inside a call of another network (a metric's: FID's Inception) are an
// evaluation, outside them.
TEST(Steps, GradOffLoggingWithoutAModelCallIsNoEvaluation) {
  for (bool metric_net : {false, true}) {
    std::vector<std::string> v;
    for (int k = 0; k < 7; ++k) {
      const long long t = 2000 + 300 * k;
      eager_iteration(v, t, 3);
      v.push_back(ev("nn.Module: Net", "torch", 10, 10, t + 9, 22, "\"phase\":\"forward\""));
      if (k % 3 != 1) continue;
      for (int j = 0; j < 12; ++j) v.push_back(ev("aten::norm", "aten", 10, 10, t + 100 + 8 * j, 6, "\"grad\":0"));
      if (metric_net) v.push_back(ev("nn.Module: Inception", "torch", 10, 10, t + 99, 98, "\"phase\":\"inference\""));
    }
    for (unsigned threads : {1u, 2u}) {
      StepReport r = run(lines(v), threads, 256);
      ASSERT_EQ(r.rows.size(), 7u) << metric_net << threads;
      const long long step2_zero_grad = 2000 + 600;
      if (metric_net)
        EXPECT_EQ(r.rows[2].start_us, 1'000'000 + step2_zero_grad) << threads;
      else
        for (size_t k = 1; k < r.rows.size(); ++k)
          EXPECT_EQ(r.rows[k].start_us, r.rows[k - 1].start_us + r.rows[k - 1].duration_us) << k << threads;
    }
  }
}

// A compiled loop over a DataLoader whose last batch is smaller: that
// step recompiles and calls "Torch-Compiled Region: 0/1" where the others
// call "0/0". By name the last steps no longer all held the first
// iteration's graph call, the first step's walk stopped at its loss op
// after it, and the first compile (4.65 s of a 4.69 s step on a real run)
// fell outside every step. The first step begins at the compile.
TEST(Steps, ARecompileInALaterStepLeavesTheFirstCompileInTheFirstStep) {
  std::vector<std::string> v;
  const std::string fwd = "\"phase\":\"forward\"";
  long long t = 2000;
  for (int k = 0; k < 6; ++k) {
    const bool compiles = k == 0 || k == 5;
    if (compiles) {
      v.push_back(ev("bytecode_tracing", "compile", 10, 10, t, 400));
      t += 410;
    }
    v.push_back(ev(k == 5 ? "Torch-Compiled Region: 0/1" : "Torch-Compiled Region: 0/0", "torch", 10, 10, t, 30, fwd));
    v.push_back(ev("aten::mse_loss", "aten", 10, 10, t + 35, 5, fwd));
    v.push_back(ev("CompiledFunctionBackward", "autograd", 10, 10, t + 45, 30));
    v.push_back(ev("Optimizer.step#SGD.step", "torch", 10, 10, t + 80, 20));
    v.push_back(ev("Optimizer.zero_grad#SGD.zero_grad", "torch", 10, 10, t + 102, 3));
    t += 110;
  }
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 256);
    ASSERT_EQ(r.rows.size(), 6u) << threads;
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 2000) << threads;  // the first compile
    EXPECT_EQ(r.rows[0].wall_us[kCompile], 400) << threads;
  }
}

// The first iteration's zero_grad takes far longer than the later ones
// (its first call: 259 us here, 0.69 ms against 20 us on a real loop) and
// ends further before the model's call than the later ones do: it is still
// the first step's, as each later step holds its own.
TEST(Steps, TheFirstStepHoldsItsSlowFirstZeroGrad) {
  std::vector<std::string> v;
  running_loss_loop(v, 1650, 259);
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 256);
    ASSERT_EQ(r.rows.size(), 5u) << threads;
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1650) << threads;
  }
}

// On a loaded machine a small model's evaluation can take less time than
// the metric and EMA ops of a usual wait (here three no_grad forwards of 10
// us against an EMA update slowed to 40 us): its time tells nothing. Where
// the observer wrote the model's calls (`nn.Module: Net`, phase forward in
// the steps), its grad-off calls of that module do: step 3 still begins at
// its zero_grad, after the last of them, also where every iteration runs a
// teacher of the same class under no_grad (the usual wait's call, after the
// evaluation). Without the calls it cannot be told.
TEST(Steps, AShortEvaluationIsToldByItsCallsOfTheTrainedModelWhateverItsTime) {
  for (const bool calls : {true, false})
    for (const bool teacher : {false, true}) {
      std::vector<std::string> v;
      for (int k = 0; k < 5; ++k) {
        const long long t = 2000 + 200 * k + (k >= 3 ? 100 : 0);
        eager_iteration(v, t, 40);
        if (calls) v.push_back(ev("nn.Module: Net", "torch", 10, 10, t + 9, 22, "\"phase\":\"forward\""));
        if (teacher) {
          v.push_back(ev("aten::linear", "aten", 10, 10, t + 36, 2, "\"phase\":\"inference\""));
          if (calls) v.push_back(ev("nn.Module: Net", "torch", 10, 10, t + 36, 3, "\"phase\":\"inference\""));
        }
        if (k == 2)
          for (int e = 0; e < 3; ++e) {
            const long long f = t + 140 + 40 * e;
            v.push_back(ev("aten::linear", "aten", 10, 10, f + 1, 10, "\"phase\":\"inference\""));
            if (calls) v.push_back(ev("nn.Module: Net", "torch", 10, 10, f, 12, "\"phase\":\"inference\""));
          }
      }
      StepReport r = run(lines(v), 1);
      ASSERT_EQ(r.rows.size(), 5u) << calls << teacher;
      const long long step2_end = 2000 + 400 + 90, step3_zero_grad = 2000 + 600 + 100;
      EXPECT_EQ(r.rows[3].start_us, 1'000'000 + (calls ? step3_zero_grad : step2_end)) << calls << teacher;
    }
}

// A loop whose iterations run the trained model under no_grad a varying
// number of times before training it (RL rollouts: 1, 2, 1, 2, ... calls)
// holds no evaluation: one call more than usual is no evaluation's margin
// (more than twice the usual count), though those waits' grad-off time is
// more than twice the usual (25 us calls against 20). Every step reaches the
// previous one's end.
TEST(Steps, NoGradCallsOfTheTrainedModelVaryingByOneAreNoEvaluation) {
  std::vector<std::string> v;
  long long t = 2000;
  for (int k = 0; k < 7; ++k) {
    const int rollouts = 1 + k % 2;
    for (int j = 0; j < rollouts; ++j) {
      v.push_back(ev("aten::linear", "aten", 10, 10, t + 1, rollouts == 1 ? 20 : 25, "\"phase\":\"inference\""));
      v.push_back(ev("nn.Module: Net", "torch", 10, 10, t, 27, "\"phase\":\"inference\""));
      t += 30;
    }
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 1, 20));
    v.push_back(ev("nn.Module: Net", "torch", 10, 10, t, 22, "\"phase\":\"forward\""));
    v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 25, 20));
    v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 50, 20));
    t += 80;
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.rows.size(), 7u);
  for (size_t k = 1; k < r.rows.size(); ++k)
    EXPECT_EQ(r.rows[k].start_us, r.rows[k - 1].start_us + r.rows[k - 1].duration_us) << k;
}

// The same evaluation opening with grad-on work (a loader's seed drawn, as
// transformers' Trainer does), in a loop whose iterations each wait 5 ms
// untraced (a batch read) before 71 us of traced work, with the optimizer
// steps of iterations 1 and 2 slowed to 4 ms (the process preempted). Step
// 3's first work is the seed, so before it is known to be the evaluation's
// its step holds the 5 ms wait, and with steps 1 and 2 the median step is 4
// ms long: the evaluation's 90 us are below 1/32 of that and far above 1/32
// of the steps' traced work, what a forward is measured against. Still
// outside.
TEST(Steps, AShortEvaluationOpeningWithGradOnWorkIsOutsideTheStepsOfALoopMostlyUntraced) {
  std::vector<std::string> v;
  long long t = 2000;
  std::vector<long long> zero_grads;
  for (int k = 0; k < 5; ++k) {
    const long long slow = (k == 1 || k == 2) ? 4000 : 0;
    zero_grads.push_back(t);
    eager_iteration(v, t, 3);
    if (slow) {  // the optimizer step, slowed: the EMA after it moves along
      v.pop_back(), v.pop_back();
      v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20 + slow));
      v.push_back(ev("aten::_foreach_lerp_", "aten", 10, 10, t + 92 + slow, 3, "\"grad\":0"));
    }
    if (k == 2) {
      v.push_back(ev("aten::random_", "aten", 10, 10, t + slow + 100, 2));  // the seed, grad on
      for (int e = 0; e < 3; ++e)
        v.push_back(ev("aten::linear", "aten", 10, 10, t + slow + 110 + 32 * e, 30, "\"grad\":0"));
    }
    t += 5150 + slow;
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(durations(r), (std::vector<double>{90, 9150, 9150, 90, 5150}));
  EXPECT_EQ(r.rows[3].start_us, 1'000'000 + zero_grads[3]);  // its zero_grad, after the evaluation
}

// The same loop without the evaluation, and one wait longer than the others
// (a slow batch) holding the usual EMA only: every step still reaches the
// next one's start.
TEST(Steps, TheUsualGradOffWorkInAWaitBreaksNoStep) {
  std::vector<std::string> v;
  for (int k = 0; k < 5; ++k) {
    // after iteration 2 a preempted EMA: its time grown, not its count
    eager_iteration(v, 2000 + 150 * k + (k >= 3 ? 100 : 0), k == 2 ? 90 : 3);
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(durations(r), (std::vector<double>{90, 150, 150, 250, 150}));
}

// An inference loop compiled with a graph break: two inference graph calls
// per iteration (graphs 0 and 1), no optimizer, region or mark. Each call
// of graph 0 begins a step (the first moved back over its compile), each
// step reaches the next one's start, and the last ends with its last call;
// the setup before (model init under no_grad, torch's `detach` scope
// repeated in it) is outside.
TEST(Steps, AnInferenceLoopHasAStepPerIterationOfItsGraphs) {
  std::vector<std::string> v = {ev("detach", "torch", 10, 10, 0, 5), ev("detach", "torch", 10, 10, 10, 5),
                                ev("dynamo.trace", "compile", 10, 10, 1000, 300),
                                ev("graph.inference", "dynamo", 10, 10, 1310, 10, "\"phase\":\"inference\",\"graph\":0"),
                                ev("inductor.compile", "compile", 10, 10, 1330, 100),
                                ev("graph.inference", "dynamo", 10, 10, 1440, 10, "\"phase\":\"inference\",\"graph\":1")};
  for (int k = 1; k < 5; ++k) {
    const long long t = 1400 + 100 * k;
    v.push_back(ev("graph.inference", "dynamo", 10, 10, t + 5, 10, "\"phase\":\"inference\",\"graph\":0"));
    v.push_back(ev("graph.inference", "dynamo", 10, 10, t + 20, 10, "\"phase\":\"inference\",\"graph\":1"));
  }
  v.push_back(ev("aten::empty", "aten", 10, 10, 2500, 5));  // after the loop: outside
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "inference");
  EXPECT_EQ(r.processes[0].region, "graph.inference#0");
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000);  // the first call's compile
  EXPECT_EQ(durations(r), (std::vector<double>{505, 100, 100, 100, 25}));
  EXPECT_EQ(r.outside_traced_us, 5 + 5 + 5);
}

// torch.compile under the LibTorch observer: each call opens torch's scope
// for three frames, the one with the graph (1/0) between two Dynamo compiled
// to no graph (0/0, 2/0: a microsecond or two). The first call's empty
// frames last longer (first runs, a slower machine's): they are still no
// model work, and the first iteration is still a step.
TEST(Steps, AnEmptyCompiledFrameIsLeftOutByItsUsualDurationNotEachCalls) {
  const std::string off = "\"grad\":0";
  std::vector<std::string> v = {ev("dynamo.trace", "compile", 10, 10, 1000, 100)};
  v.push_back(ev("Torch-Compiled Region: 0/0", "torch", 10, 10, 1110, 7, off));
  v.push_back(ev("dynamo.trace", "compile", 10, 10, 1120, 300));
  v.push_back(ev("Torch-Compiled Region: 1/0", "torch", 10, 10, 1430, 40, off));
  v.push_back(ev("Torch-Compiled Region: 2/0", "torch", 10, 10, 1480, 9, off));
  for (int k = 1; k < 6; ++k) {
    const long long t = 1400 + 100 * k;
    v.push_back(ev("Torch-Compiled Region: 0/0", "torch", 10, 10, t + 5, 2, off));
    v.push_back(ev("Torch-Compiled Region: 1/0", "torch", 10, 10, t + 10, 30, off));
    v.push_back(ev("Torch-Compiled Region: 2/0", "torch", 10, 10, t + 45, k == 3 ? 6 : 1, off));
    v.push_back(ev("aten::item", "aten", 10, 10, t + 80, 3));  // the result read, grad on
  }
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "inference");
  EXPECT_EQ(r.processes[0].region, "Torch-Compiled Region: 1/0");
  ASSERT_EQ(r.rows.size(), 6u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000);  // the first call's compile
  EXPECT_EQ(durations(r), (std::vector<double>{510, 100, 100, 100, 100, 30}));
}

// A run that stopped after building its model (a crash before the loop):
// nn.init fills each layer's weight under no_grad, one top-level op each.
// One op repeated is no model call: no inference loop, no steps.
TEST(Steps, AModelsInitialisationAloneIsNoInferenceLoop) {
  std::vector<std::string> v;
  for (int i = 0; i < 3; ++i) v.push_back(ev("aten::normal_", "aten", 10, 10, 100 * i, 20, "\"grad\":0"));
  StepReport r = run(lines(v), 1);
  EXPECT_TRUE(r.processes.empty());
  EXPECT_TRUE(r.rows.empty());
}

// An eager inference loop (the LibTorch observer: "grad": 0 on each forward
// op run under no_grad), the model's weights initialised under no_grad
// before it, a batch fetched from a DataLoader before each forward: each
// iteration's ops repeat the same sequence, each step begins with its
// batch's fetch (the last fetch, which ends the loader, begins none).
TEST(Steps, AnEagerInferenceLoopHasAStepPerForwardFromItsFetch) {
  std::vector<std::string> v;
  for (int i = 0; i < 4; ++i) v.push_back(ev("aten::uniform_", "aten", 10, 10, 10 * i, 5, "\"grad\":0"));
  const std::string next = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  for (int k = 0; k < 4; ++k) {
    const long long t = 1000 + 100 * k;
    v.push_back(ev(next, "torch", 10, 10, t, 10));
    v.push_back(ev("aten::stack", "aten", 10, 10, t + 2, 6));  // the collate, in the fetch
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 15, 10, "\"grad\":0"));
    v.push_back(ev("aten::relu", "aten", 10, 10, t + 26, 3, "\"grad\":0"));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 30, 10, "\"grad\":0"));
    v.push_back(ev("aten::softmax", "aten", 10, 10, t + 41, 4, "\"grad\":0"));
  }
  v.push_back(ev(next, "torch", 10, 10, 1400, 3));  // StopIteration
  StepReport r = run(lines(v), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "inference");
  EXPECT_EQ(r.processes[0].region, "aten::linear");
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000);
  EXPECT_EQ(durations(r), (std::vector<double>{100, 100, 100, 45}));
  EXPECT_EQ(r.outside_traced_us, 4 * 5 + 3);
}

// The same loop with a transformer's ops, some of which last 0 in whole
// microseconds on some calls and 1 on others (`aten::view`, `transpose`:
// 353 of 490 calls on a real eager GPT-2): as works they came a different
// number of times in each iteration, no sequence repeated exactly, and an
// eager generate() or batch loop had no steps. Those names are left out of
// the sequence: one step per forward.
TEST(Steps, OpsThatLastZeroMicrosecondsOnSomeCallsLeaveTheInferenceLoopItsSteps) {
  std::vector<std::string> v;
  const std::string next = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  for (int k = 0; k < 5; ++k) {
    const long long t = 1000 + 100 * k;
    v.push_back(ev(next, "torch", 10, 10, t, 10));
    v.push_back(ev("aten::embedding", "aten", 10, 10, t + 15, 8, "\"grad\":0"));
    for (int j = 0; j < 3; ++j)  // 0 us on the calls where (k + j) % 2
      v.push_back(ev(j == 1 ? "aten::transpose" : "aten::view", "aten", 10, 10, t + 24 + 3 * j, (k + j) % 2 ? 0 : 1,
                     "\"grad\":0"));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 35, 10, "\"grad\":0"));
    v.push_back(ev("aten::softmax", "aten", 10, 10, t + 46, 4, "\"grad\":0"));
  }
  v.push_back(ev(next, "torch", 10, 10, 1500, 3));  // StopIteration
  for (unsigned threads : {1u, 2u}) {
    StepReport r = run(lines(v), threads, 256);
    ASSERT_EQ(r.processes.size(), 1u) << threads;
    EXPECT_EQ(r.processes[0].source, "inference") << threads;
    ASSERT_EQ(r.rows.size(), 5u) << threads;
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000) << threads;
  }
}

// An eager inference_mode loop calling its model three times per iteration
// (an encoder on a query and two passages), with nothing untraced between
// iterations: only the grad-on read of the last result (`float(y[0, 0])`,
// aten::select then aten::item) sets them apart. Each call is 40 us, calls
// 10 us apart, iterations 20 us apart; `read_us[k]` is iteration k's read's
// length, `gap_us[c]` replaces the gap before call c. Every call's last op
// holds a zero-length grad-on op near its end (an enable_grad block):
// held, it is no work between calls.
std::vector<std::string> tight_multi_call_events(const std::vector<long long>& read_us,
                                                 const std::map<int, long long>& gap_us) {
  std::vector<std::string> v;
  long long t = 1000;
  for (int c = 0; c < 18; ++c) {
    if (c) t += gap_us.count(c) ? gap_us.at(c) : c % 3 ? 10 : 20;
    v.push_back(ev("aten::linear", "aten", 10, 10, t, 15, "\"grad\":0"));
    v.push_back(ev("aten::relu", "aten", 10, 10, t + 16, 3, "\"grad\":0"));
    v.push_back(ev("aten::linear", "aten", 10, 10, t + 20, 14, "\"grad\":0"));
    v.push_back(ev("aten::_softmax", "aten", 10, 10, t + 38, 0));
    v.push_back(ev("aten::softmax", "aten", 10, 10, t + 35, 5, "\"grad\":0"));
    t += 40;
    if (c % 3 == 2) {  // the read, in the gap after the iteration's last call
      const long long r = read_us[c / 3];
      v.push_back(ev("aten::as_strided", "aten", 10, 10, t + 5, 0));
      v.push_back(ev("aten::select", "aten", 10, 10, t + 5, r));
      v.push_back(ev("aten::_local_scalar_dense", "aten", 10, 10, t + 6 + r, 0));
      v.push_back(ev("aten::item", "aten", 10, 10, t + 6 + r, r));
    }
  }
  return v;
}

std::string tight_multi_call_loop(const std::vector<long long>& read_us, const std::map<int, long long>& gap_us) {
  return lines(tight_multi_call_events(read_us, gap_us));
}

// The trace of `v` with a padding event (another process's) placed so that
// a read in two pieces cuts it right after line `after`; with the
// min_piece_bytes that makes two pieces.
std::pair<std::string, uint64_t> cut_after(const std::vector<std::string>& v, size_t after) {
  uint64_t start = 0, size = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == after) start = size;
    size += v[i].size();
  }
  // The reader cuts at the newline ending the line that holds byte size / 2.
  const std::string bare = ev("pad", "app", 99, 99, 0, 1, "\"x\":\"\"");
  const uint64_t min_pad = bare.size();
  auto pad = [&](uint64_t bytes) {  // a line of `bytes` (at least min_pad)
    std::string line = bare;
    return line.insert(line.size() - 4, std::string(bytes - min_pad, 'x'));
  };
  std::string text;
  if (2 * start >= size + min_pad) {  // padded at the end: size / 2 == start
    text = lines(v) + pad(2 * start - size);
  } else {  // padded at the front: the line moves by as much as the middle
    const uint64_t bytes = std::max(min_pad, size - 2 * start);
    text = pad(bytes) + lines(v);
    if (bytes != size - 2 * start) return {"", 0};
  }
  return {text, text.size() / 2};
}

// In a warm loop the read's ops can all last less than a microsecond: in
// whole microseconds, zero-length work. It still sets its iteration apart.
TEST(Steps, AZeroLengthReadBetweenIterationsStillEndsOneOfSeveralCalls) {
  StepReport r = run(tight_multi_call_loop({2, 1, 1, 0, 1, 0}, {}), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "inference");
  ASSERT_EQ(r.rows.size(), 6u);
  EXPECT_EQ(r.rows[0].start_us, 1'000'000 + 1000);
  for (size_t k = 0; k + 1 < r.rows.size(); ++k) EXPECT_EQ(r.rows[k].duration_us, 3 * 40 + 2 * 10 + 20) << k;
  EXPECT_EQ(r.rows[5].duration_us, 3 * 40 + 2 * 10);
}

// Read in two pieces cut right after a call's held zero-length op (its
// grad-on _softmax near the call's end) and before the op holding it: the
// merged read drops that op too, so no cut makes other work between two
// calls of one iteration.
TEST(Steps, AZeroLengthOpHeldAcrossAPieceBoundaryIsNoWorkBetweenCalls) {
  const std::vector<std::string> v =
      tight_multi_call_events({2, 1, 1, 0, 1, 0}, {{3, 10}, {6, 10}, {9, 10}, {12, 10}, {15, 10}});  // gaps tell nothing
  size_t tested = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].find("aten::_softmax") == std::string::npos) continue;
    const auto [text, min_piece] = cut_after(v, i);
    if (text.empty()) continue;  // too near the front to pad exactly
    StepReport r = run(text, 2, min_piece);
    ASSERT_EQ(r.rows.size(), 6u) << i;
    for (size_t k = 0; k + 1 < r.rows.size(); ++k) EXPECT_EQ(r.rows[k].duration_us, 3 * 40 + 3 * 10) << i;
    ++tested;
  }
  EXPECT_GE(tested, 12u);
}

// The result read between iterations is two zero-length ops at the very
// end of the iteration's last call, written after it (siblings, not held):
// a read in one piece keeps them, and so does one in two pieces wherever it
// is cut -- whichever worker reads a piece, the answer is the same.
TEST(Steps, AZeroLengthOpAtAWorksEndWrittenAfterItStaysAcrossPieces) {
  std::vector<std::string> v;
  long long t = 1000;
  for (int c = 0; c < 18; ++c) {
    if (c) t += 10;
    v.push_back(ev("aten::linear", "aten", 10, 10, t, 30, "\"grad\":0"));
    v.push_back(ev("aten::softmax", "aten", 10, 10, t + 32, 8, "\"grad\":0"));
    t += 40;
    if (c % 3 == 2) {  // the read: select then item, both under a microsecond, at the call's end
      v.push_back(ev("aten::select", "aten", 10, 10, t, 0));
      v.push_back(ev("aten::item", "aten", 10, 10, t, 0));
    }
  }
  EXPECT_EQ(run(lines(v), 1).rows.size(), 6u);
  size_t tested = 0;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const auto [text, min_piece] = cut_after(v, i);
    if (text.empty()) continue;
    EXPECT_EQ(run(text, 2, min_piece).rows.size(), 6u) << i;
    ++tested;
  }
  EXPECT_GE(tested, 20u);
}

// Two stray long gaps nine calls apart (the first iteration's warm-up before
// call 3, a call preempted for 4 ms before call 12) form no unit of nine
// calls: one step of all would be fewer than two whole groups. The reads
// still tell the iterations.
TEST(Steps, TwoStrayLongGapsAreNoIterationOfTheCallsBetweenThem) {
  StepReport r = run(tight_multi_call_loop({5, 5, 5, 5, 5, 5}, {{3, 110}, {12, 4080}}), 1);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].source, "inference");
  ASSERT_EQ(r.rows.size(), 6u);
  EXPECT_EQ(r.rows[0].duration_us, 3 * 40 + 2 * 10 + 110);
  for (size_t k : {1, 2, 4}) EXPECT_EQ(r.rows[k].duration_us, 3 * 40 + 2 * 10 + 20) << k;
  // (Whether the 4 ms with nothing traced is in step 3 is the long-wait rule's call.)
  EXPECT_EQ(r.rows[4].start_us, 1'000'000 + 1000 + 250 + 2 * 160 + 140 + 4080);
}

// An eager training loop fed by DataLoader workers: each iteration fetches
// its batch (the first fetch waits 500 us for the workers to start), then
// zero_grad, forward, backward and the optimizer step; an evaluation after
// iteration 1 fetches its own batches before each of its no_grad forwards.
// The first step begins with its fetch, as the later ones hold theirs (from
// the optimizer step before); the step after the evaluation begins with its
// own fetch, not the evaluation's. Without fetches in the later steps (a
// batch fetched once before the loop), the first step begins at its work.
TEST(Steps, TheFirstStepOfAWorkerFedLoopBeginsWithItsFetch) {
  const std::string next = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  for (bool fed : {true, false}) {
    std::vector<std::string> v = {ev("aten::uniform_", "aten", 10, 10, 0, 5, "\"grad\":0")};
    long long t = 1000;
    std::vector<long long> fetch_at, work_at;
    for (int k = 0; k < 4; ++k) {
      const long long fetch = k == 0 ? 500 : 20;
      fetch_at.push_back(t);
      if (fed || k == 0) {
        v.push_back(ev(next, "torch", 10, 10, t, fetch));
        t += fetch + 5;
      }
      work_at.push_back(t);
      v.push_back(ev("Optimizer.zero_grad#AdamW.zero_grad", "torch", 10, 10, t, 5));
      v.push_back(ev("aten::linear", "aten", 10, 10, t + 10, 20));
      v.push_back(ev("AddmmBackward0", "autograd", 10, 10, t + 40, 20));
      v.push_back(ev("Optimizer.step#AdamW.step", "torch", 10, 10, t + 70, 20));
      t += 100;
      if (k == 1) {  // the evaluation: a fetch, then a forward, three times
        for (int e = 0; e < 3; ++e, t += 400) {
          v.push_back(ev(next, "torch", 10, 10, t, 20));
          v.push_back(ev("aten::linear", "aten", 10, 10, t + 30, 300, "\"grad\":0"));
        }
      }
    }
    StepReport r = run(lines(v), 1);
    ASSERT_EQ(r.processes.size(), 1u) << fed;
    ASSERT_EQ(r.rows.size(), 4u) << fed;
    // its fetch, or (one fetch alone) its zero_grad
    EXPECT_EQ(r.rows[0].start_us, 1'000'000 + (fed ? fetch_at[0] : work_at[0])) << fed;
    if (fed) EXPECT_EQ(r.rows[2].start_us, 1'000'000 + fetch_at[2]) << "its own fetch, after the evaluation";
  }
}

}  // namespace
}  // namespace dftracer::analyze::testing
