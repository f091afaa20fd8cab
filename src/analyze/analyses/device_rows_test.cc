// Device work in the CPU analyses: GPU kernels, copies and sets (Kineto's
// and our CUDA source's) are no thread's time, so summary and the steps
// analysis leave them out (and count them), and the ranks view shows a GPU
// track as a row of its own under its process; on real Kineto traces (HTA's)
// and hand-made rank files with device tracks.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "device_time.hpp"
#include "device_track.hpp"
#include "kineto_import.hpp"
#include "rank_trace_files.hpp"
#include "ranks.hpp"
#include "steps.hpp"
#include "summary.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze {
namespace {

using testing::TempDir;

std::string kineto(const std::string& name) { return std::string(DFTRACER_TEST_DATA_DIR) + "/kineto/" + name; }

bool is_gpu_cat(const std::string& c) {
  return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "gpu_user_annotation" || c == "cuda_sync";
}

class KinetoCpuTables : public ::testing::TestWithParam<const char*> {};

TEST_P(KinetoCpuTables, SummaryCountsNoGpuWorkAsOps) {
  const std::string path = kineto(GetParam());
  const Summary by_cat = summarize({path}, parse_group_keys("cat"), 0, 1);
  for (const SummaryRow& row : by_cat.rows) EXPECT_FALSE(is_gpu_cat(row.key[0])) << row.key[0];
  const DeviceReport dev = device_report(read_device_timeline({path}, 1, {}));
  ASSERT_GT(dev.device_events, 0u);
  EXPECT_GE(by_cat.device_events, dev.device_events);  // and Kineto's gpu_user_annotation spans
  // No kernel name among the ops: every row of `--by name` is a CPU event.
  const DeviceTimeline t = read_device_timeline({path}, 1, {});
  std::set<std::string> kernels;
  for (const DeviceLink& l : t.links) kernels.insert(t.events[l.event].name);
  const Summary by_name = summarize({path}, parse_group_keys("name"), 0, 1);
  for (const SummaryRow& row : by_name.rows) EXPECT_EQ(kernels.count(row.key[0]), 0u) << row.key[0];
  std::ostringstream text;
  write_summary_table(text, by_cat);
  EXPECT_NE(text.str().find(std::to_string(by_cat.device_events) + " device events left out"), std::string::npos);
}

// Kineto writes a GPU's events under pid = the device index: no process of steps.
TEST_P(KinetoCpuTables, StepsHaveNoGpuProcess) {
  const std::string path = kineto(GetParam());
  const DeviceTimeline t = read_device_timeline({path}, 1, {});
  std::set<std::string> gpu_pids;
  for (const DeviceLink& l : t.links) gpu_pids.insert(t.events[l.event].pid);
  const StepReport r = analyze_steps({path}, 1, {});
  for (const ProcessSteps& p : r.processes) EXPECT_EQ(gpu_pids.count(p.pid), 0u) << p.pid;
  for (const ProcessSteps& p : r.without_steps) EXPECT_EQ(gpu_pids.count(p.pid), 0u) << p.pid;
}

INSTANTIATE_TEST_SUITE_P(HtaTraces, KinetoCpuTables,
                         ::testing::Values("nccl_data.json.gz", "sampled_rank-0.json.gz", "alexnet_trace.json.gz"));

const DeviceGroup* find_group(const std::vector<DeviceGroup>& g, const std::string& key) {
  for (const DeviceGroup& x : g)
    if (x.key == key) return &x;
  return nullptr;
}

// HTA's job marks its phases with `## forward ##`, `## backward ##` (autograd
// thread inside it) and `## optimizer ##`: every kernel's phase is known.
TEST(DevicePhase, RealTracePhasesFromTheirRanges) {
  const DeviceReport r = device_report(read_device_timeline({kineto("nccl_data.json.gz")}, 1, {}));
  const DeviceGroup* fwd = find_group(r.phase, "forward");
  const DeviceGroup* bwd = find_group(r.phase, "backward");
  const DeviceGroup* opt = find_group(r.phase, "optimizer");
  ASSERT_TRUE(fwd && bwd && opt);
  EXPECT_EQ(fwd->events + bwd->events + opt->events, r.device_events) << "no kernel without a phase";
  EXPECT_GT(bwd->device_ns, fwd->device_ns);  // backward computes twice the gradients, plus the all-reduces
  EXPECT_GT(opt->device_ns, 0);
  EXPECT_GT(fwd->cpu_ns, 0);
}

// dftracer's op events carry args.phase; an optimizer step's ops by its name.
TEST(DevicePhase, FromTheOpsPhaseArgOrTheOptimizerStep) {
  auto ev = [](TimelineRole role, const std::string& name, int64_t ts, int64_t dur, int64_t corr, int64_t ext,
               uint8_t phase = kNoPhase) {
    TimelineEvent e;
    e.role = role;
    e.name = name;
    e.pid = "100";
    e.tid = is_device_role(role) ? "7" : "1";
    e.ts = ts;
    e.dur = dur;
    e.correlation = corr;
    e.external_id = ext;
    e.phase = phase;
    if (is_device_role(role)) e.device = 0;
    return e;
  };
  DeviceTimeline t;
  t.events = {ev(TimelineRole::cpu_op, "aten::mm", 0, 100, -1, 1, kBackward),
              ev(TimelineRole::launch, "cudaLaunchKernel", 10, 5, 11, -1),
              ev(TimelineRole::kernel, "gemm", 50, 40, 11, 1),
              ev(TimelineRole::annotation, "Optimizer.step#AdamW.step", 200, 100, -1, -1),
              ev(TimelineRole::cpu_op, "aten::add_", 210, 50, -1, 2),
              ev(TimelineRole::launch, "cudaLaunchKernel", 220, 5, 12, -1),
              ev(TimelineRole::kernel, "add", 260, 10, 12, 2),
              ev(TimelineRole::kernel, "orphan", 400, 10, 99, -1)};
  link_timeline(t);
  const DeviceReport r = device_report(t);
  ASSERT_TRUE(find_group(r.phase, "backward") && find_group(r.phase, "optimizer") && find_group(r.phase, "(none)"));
  EXPECT_EQ(find_group(r.phase, "backward")->device_ns, 40);
  EXPECT_EQ(find_group(r.phase, "optimizer")->device_ns, 10);
  EXPECT_EQ(find_group(r.phase, "(none)")->device_ns, 10);
  std::ostringstream json;
  write_device_json(json, r);
  EXPECT_NE(json.str().find("\"phase\":[{\"key\":\"backward\""), std::string::npos) << json.str();
}

// Two ranks, each with its GPU 0 on a device track of ours (format/device_track.hpp).
TEST(RanksGpuTracks, AGpuTrackIsARowOfItsOwnUnderItsRank) {
  std::vector<testing::RankFile> f = testing::two_ranks();
  for (testing::RankFile& r : f) {
    const int64_t gpu = format::device_track_pid(static_cast<uint32_t>(r.pid), 0);
    for (int s = 0; s < 3; ++s)
      r.events.push_back("{\"ph\":\"X\",\"name\":\"gemm\",\"cat\":\"kernel\",\"pid\":" + std::to_string(gpu) +
                         ",\"tid\":7,\"ts\":" + std::to_string(1'700'000'000'000'000LL + s * 1'000'000LL + 200) +
                         ",\"dur\":300000,\"args\":{\"device\":0,\"stream\":7}}\n");
  }
  TempDir d, plain_dir;
  const RankReport r = analyze_ranks(testing::write_ranks(d, f), 1);
  const RankReport plain = analyze_ranks(testing::write_ranks(plain_dir, testing::two_ranks()), 1);
  ASSERT_EQ(r.processes.size(), 4u);
  EXPECT_EQ(r.processes[0].rank, 0);
  EXPECT_EQ(r.processes[1].device, 0);
  EXPECT_EQ(r.processes[1].owner_rank, 0);
  EXPECT_EQ(r.processes[1].rank, -1) << "a GPU track is no rank of its own";
  EXPECT_EQ(r.processes[2].rank, 1);
  EXPECT_EQ(r.processes[3].owner_rank, 1);
  EXPECT_EQ(process_label(r.processes[3]), "GPU 0 of rank 1");
  EXPECT_EQ(r.processes[1].total_ns, 3 * 300'000'000LL);
  EXPECT_EQ(r.collectives.size(), plain.collectives.size());
  EXPECT_TRUE(r.missing_ranks.empty());
  EXPECT_DOUBLE_EQ(r.traced_us, plain.traced_us) << "GPU time is no thread time";
  std::ostringstream json;
  write_rank_summary_json(json, r);
  EXPECT_NE(json.str().find("\"gpu\",\"gpu_of\"]"), std::string::npos) << json.str();
  EXPECT_NE(json.str().find(",0,\"rank 0\"]"), std::string::npos) << json.str();
  std::ostringstream text;
  write_rank_summary_table(text, r);
  EXPECT_NE(text.str().find("2 ranks of world size 2, 2 processes and 2 GPU tracks"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace dftracer::analyze
