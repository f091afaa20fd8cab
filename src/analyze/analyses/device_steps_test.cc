// Steps of dftracer's own traces in the device analysis: where a file has no
// ProfilerStep#N range, the steps `summary --by step` finds (here torch's
// optimizer steps end them) are the device analysis's, and each device event
// falls in the step its launch call is in.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_steps.hpp"
#include "device_time.hpp"
#include "device_track.hpp"
#include "steps.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze {
namespace {

using testing::TempDir;

constexpr int64_t kPid = 10;

std::string x(const std::string& name, const std::string& cat, int64_t pid, int64_t tid, int64_t ts, int64_t dur,
              const std::string& args = "") {
  return "{\"ph\":\"X\",\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(1000000 + ts) + ",\"dur\":" +
         std::to_string(dur) + (args.empty() ? "" : ",\"args\":{" + args + "}") + "}";
}

// A launch call on the main thread at `at` and its kernel on GPU 0's track.
void launch(std::vector<std::string>& v, int64_t corr, int64_t at, int64_t start, int64_t dur) {
  const std::string c = "\"correlation\":" + std::to_string(corr);
  v.push_back(x("cudaLaunchKernel", "cuda_runtime", kPid, kPid, at, 2, c));
  v.push_back(x("gemm", "kernel", format::device_track_pid(kPid, 0), 7, start, dur, "\"device\":0,\"stream\":7," + c));
}

// Three iterations (t = 2000, 2100, 2200 us) that mark no step: the
// optimizer steps end them, so the steps are [2000, 2090), [2090, 2190),
// [2190, 2290). A kernel launched in step 0's backward runs queued into
// step 1; one launched in step 1's backward runs into step 2.
std::vector<std::string> loop() {
  std::vector<std::string> v;
  for (int64_t k = 0; k < 3; ++k) {
    const int64_t t = 2000 + 100 * k;
    v.push_back(x("Optimizer.zero_grad#SGD.zero_grad", "torch", kPid, kPid, t, 5));
    v.push_back(x("aten::linear", "aten", kPid, kPid, t + 10, 20));
    v.push_back(x("AddmmBackward0", "autograd", kPid, kPid, t + 40, 20));
    v.push_back(x("Optimizer.step#SGD.step", "torch", kPid, kPid, t + 70, 20));
  }
  launch(v, 1, 2012, 2015, 70);  // step 0's forward
  launch(v, 9, 2045, 2085, 20);  // step 0's backward, queued: busy in steps 0 and 1
  launch(v, 2, 2112, 2115, 35);  // step 1's forward
  launch(v, 3, 2145, 2150, 50);  // step 1's backward, running into step 2
  launch(v, 4, 2212, 2215, 5);   // step 2's forward
  return v;
}

TEST(DeviceSteps, AFileWithoutProfilerStepsTakesTheStepsOfSummaryByStep) {
  TempDir d;
  const std::string path = d.file("run.pfw");
  testing::write_file(path, testing::pfw_text(loop()));
  for (unsigned threads : {1u, 2u}) {
    const DeviceReport r = device_report(read_device_timeline_with_steps({path}, threads, {}));
    const StepReport steps = analyze_steps({path}, threads, {});
    ASSERT_EQ(steps.rows.size(), 3u);
    ASSERT_EQ(r.steps.size(), steps.rows.size()) << "the steps summary --by step finds";
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const DeviceStep& s = r.steps[i];
      EXPECT_EQ(s.step, int64_t(steps.rows[i].step));
      EXPECT_EQ(s.label, steps.rows[i].label);
      EXPECT_EQ(s.pid, steps.rows[i].pid);
      EXPECT_EQ(s.source, "optimizer");
      EXPECT_EQ(s.span_ns, int64_t(steps.rows[i].duration_us * 1000));
    }
    // Busy: the union of the kernels inside the step, whoever launched them;
    // events and device time: the work launched in it.
    EXPECT_EQ(r.steps[0].span_ns, 90000);
    EXPECT_EQ(r.steps[0].busy_ns, 75000);
    EXPECT_EQ(r.steps[0].events, 2u);
    EXPECT_EQ(r.steps[0].device_ns, 90000);
    EXPECT_STREQ(r.steps[0].bound, "gpu-bound");
    EXPECT_EQ(r.steps[1].span_ns, 100000);
    EXPECT_EQ(r.steps[1].busy_ns, 90000);
    EXPECT_EQ(r.steps[1].events, 2u);
    EXPECT_EQ(r.steps[1].device_ns, 85000);
    EXPECT_STREQ(r.steps[1].bound, "gpu-bound");
    EXPECT_EQ(r.steps[2].busy_ns, 15000);
    EXPECT_EQ(r.steps[2].events, 1u);
    EXPECT_EQ(r.steps[2].device_ns, 5000);
    EXPECT_STREQ(r.steps[2].bound, "cpu-bound");
    EXPECT_EQ(r.in_step, 5u);
  }
}

// A file with ProfilerStep#N ranges (torch.profiler's): those are its steps,
// not the ones the steps analysis would find.
TEST(DeviceSteps, ProfilerStepRangesAreTheStepsOfTheirFile) {
  std::vector<std::string> v = loop();
  v.push_back(x("ProfilerStep#5", "user_annotation", kPid, kPid, 2000, 290));
  TempDir d;
  const std::string path = d.file("run.pfw");
  testing::write_file(path, testing::pfw_text(v));
  const DeviceReport r = device_report(read_device_timeline_with_steps({path}, 1, {}));
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].step, 5);
  EXPECT_EQ(r.steps[0].label, "ProfilerStep#5");
  EXPECT_EQ(r.steps[0].source, "ProfilerStep");
  EXPECT_EQ(r.steps[0].events, 5u);
}

}  // namespace
}  // namespace dftracer::analyze
