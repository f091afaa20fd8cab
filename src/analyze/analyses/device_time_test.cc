// Device timelines: linking device events to launch calls, ops, modules and
// steps (kineto_import.hpp), and the device-time figures (device_time.hpp),
// on hand-built timelines, a small Kineto document and real HTA traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "device_time.hpp"
#include "device_track.hpp"
#include "kineto_import.hpp"
#include "steps.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze {
namespace {

using testing::TempDir;

// Times in microseconds, as the traces write them.
TimelineEvent cpu(TimelineRole role, const std::string& name, double ts, double dur, const std::string& tid = "1",
                  int64_t ext = -1) {
  TimelineEvent e;
  e.role = role;
  e.name = name;
  e.pid = "100";
  e.tid = tid;
  e.ts = int64_t(ts * 1000);
  e.dur = int64_t(dur * 1000);
  e.external_id = ext;
  return e;
}
TimelineEvent launch(double ts, double dur, int64_t corr, int64_t ext = -1, const std::string& tid = "1") {
  TimelineEvent e = cpu(TimelineRole::launch, "cudaLaunchKernel", ts, dur, tid, ext);
  e.correlation = corr;
  return e;
}
TimelineEvent device(TimelineRole role, const std::string& name, double ts, double dur, int64_t corr,
                     int64_t ext = -1, int64_t stream = 7) {
  TimelineEvent e;
  e.role = role;
  e.name = name;
  e.pid = "0";
  e.tid = std::to_string(stream);
  e.ts = int64_t(ts * 1000);
  e.dur = int64_t(dur * 1000);
  e.correlation = corr;
  e.external_id = ext;
  e.device = 0;
  e.stream = stream;
  return e;
}

const DeviceLink& link_named(const DeviceTimeline& t, const std::string& name) {
  for (const DeviceLink& l : t.links)
    if (t.events[l.event].name == name) return l;
  throw std::runtime_error("no device event " + name);
}

TEST(DeviceTimeline, RoleModuleAndStepNames) {
  TimelineRole r;
  EXPECT_TRUE(timeline_role("cuda_driver", &r));
  EXPECT_EQ(r, TimelineRole::launch);
  EXPECT_TRUE(timeline_role("gpu_memset", &r));
  EXPECT_EQ(r, TimelineRole::memset);
  EXPECT_FALSE(timeline_role("ac2g", &r));
  EXPECT_EQ(module_of(TimelineRole::python, "nn.Module: Linear_0"), "Linear_0");
  EXPECT_EQ(module_of(TimelineRole::annotation, "## forward ##"), "forward");
  EXPECT_EQ(module_of(TimelineRole::annotation, "forward"), "");
  EXPECT_EQ(module_of(TimelineRole::cpu_op, "## forward ##"), "");
  EXPECT_EQ(profiler_step_of("ProfilerStep#12"), 12);
  EXPECT_EQ(profiler_step_of("ProfilerStep#"), -1);
  EXPECT_EQ(profiler_step_of("ProfilerStep#3x"), -1);
}

// A step with a module around two ops; one op's kernel names it by External
// id, the other only by nesting (its External id is unknown); a backward op
// on another thread inside the main thread's `## backward ##`.
DeviceTimeline sample_timeline() {
  DeviceTimeline t;
  auto& ev = t.events;
  ev.push_back(cpu(TimelineRole::annotation, "ProfilerStep#7", 0, 1000));
  ev.push_back(cpu(TimelineRole::python, "nn.Module: Linear_0", 10, 120));
  ev.push_back(cpu(TimelineRole::cpu_op, "aten::linear", 20, 100, "1", 11));
  ev.push_back(cpu(TimelineRole::cpu_op, "aten::addmm", 30, 60, "1", 12));
  ev.push_back(launch(40, 10, 501, 12));
  ev.push_back(cpu(TimelineRole::cpu_op, "aten::relu", 150, 40, "1", 13));
  ev.push_back(launch(160, 5, 502, 999));  // External id names no op: nesting decides
  ev.push_back(cpu(TimelineRole::annotation, "## backward ##", 300, 600));
  ev.push_back(cpu(TimelineRole::cpu_op, "aten::mm", 400, 50, "2", 20));  // autograd thread
  ev.push_back(launch(410, 5, 503, 20, "2"));
  ev.push_back(device(TimelineRole::kernel, "gemm", 100, 300, 501, 12));
  ev.push_back(device(TimelineRole::kernel, "relu_kernel", 420, 10, 502, 999));
  ev.push_back(device(TimelineRole::kernel, "gemm_bw", 500, 100, 503, 20, 9));
  ev.push_back(device(TimelineRole::memcpy, "Memcpy HtoD", 1200, 50, 504));  // no launch, after the step
  std::reverse(ev.begin(), ev.end());  // the linker sorts
  link_timeline(t);
  return t;
}

TEST(DeviceTimeline, LinksLaunchOpModuleStep) {
  const DeviceTimeline t = sample_timeline();
  ASSERT_EQ(t.links.size(), 4u);
  const auto& ev = t.events;

  const DeviceLink& gemm = link_named(t, "gemm");
  ASSERT_NE(gemm.launch, kNoEvent);
  EXPECT_EQ(ev[gemm.launch].correlation, 501);
  ASSERT_NE(gemm.op, kNoEvent);
  EXPECT_EQ(ev[gemm.op].name, "aten::addmm");
  EXPECT_TRUE(gemm.op_by_external_id);
  EXPECT_EQ(gemm.module, "Linear_0");
  EXPECT_EQ(gemm.step, 7);

  const DeviceLink& relu = link_named(t, "relu_kernel");
  ASSERT_NE(relu.op, kNoEvent);
  EXPECT_EQ(ev[relu.op].name, "aten::relu");  // the innermost cpu_op around the launch
  EXPECT_FALSE(relu.op_by_external_id);
  EXPECT_EQ(relu.module, "");  // relu runs after Linear_0 ended
  EXPECT_EQ(relu.step, 7);

  const DeviceLink& bw = link_named(t, "gemm_bw");
  EXPECT_EQ(ev[bw.op].name, "aten::mm");
  EXPECT_EQ(bw.module, "backward");  // the main thread's range, found across threads

  const DeviceLink& copy = link_named(t, "Memcpy HtoD");
  EXPECT_EQ(copy.launch, kNoEvent);
  EXPECT_EQ(copy.op, kNoEvent);
  EXPECT_EQ(copy.step, -1);
}

TEST(DeviceTimeline, OpByTheLaunchCallsExternalId) {
  DeviceTimeline t;
  t.events.push_back(cpu(TimelineRole::cpu_op, "aten::mm", 0, 100, "1", 42));
  t.events.push_back(cpu(TimelineRole::cpu_op, "aten::other", 200, 100, "1", 43));
  t.events.push_back(launch(250, 5, 7, 42));  // outside aten::mm, but its External id names it
  t.events.push_back(device(TimelineRole::kernel, "gemm", 300, 10, 7));
  link_timeline(t);
  ASSERT_EQ(t.links.size(), 1u);
  EXPECT_EQ(t.events[t.links[0].op].name, "aten::mm");
  EXPECT_TRUE(t.links[0].op_by_external_id);
}

TEST(DeviceTimeline, CpuSelfTimeAndModules) {
  const DeviceTimeline t = sample_timeline();
  auto self_of = [&](const std::string& name) {
    for (size_t i = 0; i < t.events.size(); ++i)
      if (t.events[i].name == name) return t.cpu_self[i];
    return int64_t(-1);
  };
  EXPECT_EQ(self_of("aten::addmm"), 50000);   // 60 - launch 10
  EXPECT_EQ(self_of("aten::linear"), 40000);  // 100 - addmm 60
  EXPECT_EQ(self_of("nn.Module: Linear_0"), 20000);  // 120 - linear 100
  // The step: 1000 - Linear_0 120 - relu 40 - backward 600.
  EXPECT_EQ(self_of("ProfilerStep#7"), 240000);
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events[i].name == "aten::mm") EXPECT_EQ(t.cpu_module[i], "backward");
    if (t.events[i].name == "aten::addmm") EXPECT_EQ(t.cpu_module[i], "Linear_0");
  }
}

TEST(DeviceReport, FiguresPerGroupAndStep) {
  const DeviceReport r = device_report(sample_timeline());
  EXPECT_EQ(r.device_events, 4u);
  EXPECT_EQ(r.device_ns, (300 + 10 + 100 + 50) * 1000);
  // Busy: [100,400) + [420,430) + [500,600) + [1200,1250): 460 us.
  EXPECT_EQ(r.busy_ns, 460000);
  EXPECT_EQ(r.with_launch, 3u);
  EXPECT_EQ(r.with_op, 3u);
  EXPECT_EQ(r.op_by_external_id, 2u);
  EXPECT_EQ(r.in_step, 3u);
  // Launch delay: 100-40, 420-160, 500-410.
  EXPECT_EQ(r.delay_sum_ns, (60 + 260 + 90) * 1000);

  ASSERT_EQ(r.steps.size(), 1u);
  const DeviceStep& s = r.steps[0];
  EXPECT_EQ(s.step, 7);
  EXPECT_EQ(s.span_ns, 1000000);
  EXPECT_EQ(s.busy_ns, 410000);  // the copy runs after the step
  EXPECT_EQ(s.device_ns, 410000);
  EXPECT_EQ(s.events, 3u);
  EXPECT_STREQ(s.bound, "cpu-bound");  // 41 % busy

  auto find = [](const std::vector<DeviceGroup>& g, const std::string& k) {
    for (const DeviceGroup& x : g)
      if (x.key == k) return x;
    return DeviceGroup{};
  };
  const DeviceGroup addmm = find(r.op, "aten::addmm");
  EXPECT_EQ(addmm.events, 1u);
  EXPECT_EQ(addmm.device_ns, 300000);
  EXPECT_EQ(addmm.cpu_ns, 50000);
  EXPECT_EQ(find(r.op, "(none)").device_ns, 50000);
  EXPECT_EQ(find(r.module, "Linear_0").device_ns, 300000);
  EXPECT_EQ(find(r.module, "backward").device_ns, 100000);
  EXPECT_EQ(find(r.category, "memcpy").events, 1u);
  EXPECT_EQ(find(r.stream, "GPU 0 stream 9").device_ns, 100000);
  // Kernel rows: CPU time is the launch calls'.
  EXPECT_EQ(find(r.kernel, "gemm").cpu_ns, 10000);
  EXPECT_EQ(r.op.front().key, "aten::addmm");  // sorted by device time
}

TEST(DeviceReport, GpuBoundStepAndOverlappingStreams) {
  DeviceTimeline t;
  t.events.push_back(cpu(TimelineRole::annotation, "ProfilerStep#1", 0, 100));
  t.events.push_back(launch(1, 1, 1));
  t.events.push_back(launch(2, 1, 2));
  t.events.push_back(device(TimelineRole::kernel, "a", 5, 80, 1, -1, 7));
  t.events.push_back(device(TimelineRole::kernel, "ncclKernel_AllReduce", 10, 90, 2, -1, 8));
  link_timeline(t);
  const DeviceReport r = device_report(t);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].busy_ns, 95000);  // [5, 100): overlap counted once, clipped to the step
  EXPECT_EQ(r.steps[0].device_ns, 170000);
  EXPECT_STREQ(r.steps[0].bound, "gpu-bound");
  EXPECT_EQ(r.category.front().key, "collective");
}

TEST(DeviceTimeline, ReadsKinetoDocument) {
  TempDir d;
  const std::string path = d.file("trace.json");
  testing::write_file(path, R"J({"schemaVersion":1,"traceEvents":[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":5,"tid":5,"ts":1000.5,"dur":100,"args":{"External id":1}},
 {"ph":"X","cat":"cpu_op","name":"aten::add","pid":5,"tid":5,"ts":1001.25,"dur":20,"args":{"External id":2}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":5,"tid":5,"ts":1002,"dur":5,"args":{"External id":2,"cbid":211,"correlation":77}},
 {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":1010.125,"dur":3.5,"args":{"External id":2,"device":0,"stream":7,"correlation":77}},
 {"ph":"s","id":77,"pid":5,"tid":5,"ts":1002,"cat":"ac2g","name":"ac2g"},
 {"ph":"X","cat":"kernel","name":"a CPU-side kernel scope","pid":5,"tid":5,"ts":1030,"dur":2,"args":{"phase":"forward"}},
 {"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":"PyTorch Profiler","ts":900,"dur":500}
]})J");
  const DeviceTimeline t = read_device_timeline({path}, 1, {});
  // Not timeline events: the Trace span, the flow, a cat "kernel" event with no device or correlation.
  ASSERT_EQ(t.events.size(), 4u);
  ASSERT_EQ(t.links.size(), 1u);
  const DeviceLink& l = t.links[0];
  const TimelineEvent& k = t.events[l.event];
  EXPECT_EQ(k.ts, 1010125);  // ns
  EXPECT_EQ(k.dur, 3500);
  EXPECT_EQ(k.device, 0);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(t.events[l.launch].name, "cudaLaunchKernel");
  EXPECT_EQ(t.events[l.op].name, "aten::add");
  EXPECT_EQ(l.step, 3);
}

// Real traces (HTA's test data, tests/data/kineto/README.md).
std::string kineto(const std::string& name) { return std::string(DFTRACER_TEST_DATA_DIR) + "/kineto/" + name; }

TEST(DeviceTimeline, RealTraceLinksEveryKernelByExternalId) {
  const DeviceTimeline t = read_device_timeline({kineto("nccl_data.json.gz")}, 2, {});
  ASSERT_EQ(t.links.size(), 3774u);  // kernel + gpu_memcpy + gpu_memset events in the file
  for (const DeviceLink& l : t.links) {
    ASSERT_NE(l.launch, kNoEvent);
    ASSERT_TRUE(l.op_by_external_id);
    EXPECT_EQ(t.events[l.op].external_id, t.events[l.event].external_id);
    EXPECT_EQ(t.events[l.launch].correlation, t.events[l.event].correlation);
    EXPECT_GE(l.step, 4);
    EXPECT_LE(l.step, 6);
    EXPECT_TRUE(l.module == "forward" || l.module == "backward" || l.module == "optimizer") << l.module;
  }
}

TEST(DeviceTimeline, RealTraceOpsByNestingWhenExternalIdsNameNoOp) {
  const DeviceTimeline t = read_device_timeline({kineto("sampled_rank-0.json.gz")}, 1, {});
  ASSERT_EQ(t.links.size(), 1204u);
  size_t by_nesting = 0;
  for (const DeviceLink& l : t.links) {
    EXPECT_FALSE(l.op_by_external_id);
    if (l.op == kNoEvent) continue;
    ++by_nesting;
    const TimelineEvent& op = t.events[l.op];
    const TimelineEvent& ln = t.events[l.launch];
    EXPECT_EQ(op.tid, ln.tid);
    EXPECT_LE(op.ts, ln.ts);
    EXPECT_GE(op.end(), ln.end());
  }
  EXPECT_GT(by_nesting, 1100u);
}

TEST(DeviceTimeline, EventsPastTheCapAreCountedNotKept) {
  TempDir d;
  const std::string path = d.file("many.pfw");
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i)
    lines.push_back("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":" + std::to_string(1000 + i * 10) +
                    ",\"dur\":5,\"args\":{\"device\":0,\"stream\":7}}");
  testing::write_file(path, testing::pfw_text(lines));
  const DeviceTimeline all = read_device_timeline({path}, 2, {});
  EXPECT_EQ(all.events.size(), 3000u);
  EXPECT_EQ(all.not_kept, 0u);
  const DeviceTimeline t = read_device_timeline({path}, 2, {}, 1000);
  EXPECT_EQ(t.events.size(), 1000u);
  EXPECT_EQ(t.not_kept, 2000u);
  const DeviceReport r = device_report(t);
  EXPECT_EQ(r.device_events, 1000u);
  EXPECT_EQ(r.events_not_kept, 2000u);
  std::ostringstream json;
  write_device_json(json, r);
  EXPECT_NE(json.str().find("\"events_not_kept\":2000"), std::string::npos) << json.str();
  EXPECT_EQ(device_cap_line(r).rfind("2000 timeline events past the memory cap", 0), 0u);
}

TEST(DeviceTimeline, StepLookupTakesTheFirstStepAroundALaunchAmongOverlappingOnes) {
  // Steps 1 and 2 overlap (2 starts inside 1 and ends later), step 3 is under
  // another pid: a launch inside both takes step 1; one only in 2 takes 2; a
  // launch of pid 5 in step 3's time (no step of its own pid there) takes 3.
  DeviceTimeline t;
  auto ev = [&](TimelineRole role, const char* name, const char* pid, int64_t ts, int64_t dur, int64_t corr) {
    TimelineEvent e;
    e.role = role;
    e.name = name;
    e.pid = pid;
    e.tid = pid;
    e.ts = ts;
    e.dur = dur;
    e.correlation = corr;
    e.device = role == TimelineRole::kernel ? 0 : -1;
    t.events.push_back(e);
  };
  ev(TimelineRole::annotation, "ProfilerStep#1", "5", 100, 100, -1);
  ev(TimelineRole::annotation, "ProfilerStep#2", "5", 150, 150, -1);
  ev(TimelineRole::annotation, "ProfilerStep#3", "9", 400, 100, -1);
  ev(TimelineRole::annotation, "ProfilerStep#0", "5", 10, 20, -1);
  int64_t corr = 1;
  for (int64_t at : {160, 250, 450, 350}) {
    ev(TimelineRole::launch, "cudaLaunchKernel", "5", at, 1, corr);
    ev(TimelineRole::kernel, "k", "0", at + 5, 1, corr);
    ++corr;
  }
  link_timeline(t);
  std::map<int64_t, int64_t> step_of_launch;
  for (const DeviceLink& l : t.links) step_of_launch[t.events[l.launch].ts] = l.step;
  EXPECT_EQ(step_of_launch, (std::map<int64_t, int64_t>{{160, 1}, {250, 2}, {350, -1}, {450, 3}}));
}

// Device tracks of dftracer's CUDA source (format/device_track.hpp): pids
// above every real one, each naming its process and device.
TEST(DeviceTracks, PidsAboveEveryRealPidNameTheirProcessAndDevice) {
  using namespace dftracer::format;
  EXPECT_EQ(device_track_pid(1, 1), 0x40000101);
  EXPECT_EQ(device_track_pid(kMaxTrackedPid, 255), 0x7fffffff);  // the largest: 31 bits
  int64_t owner = -1, device = -1;
  ASSERT_TRUE(parse_device_track_pid("1073742081", &owner, &device));
  EXPECT_EQ(owner, 1);
  EXPECT_EQ(device, 1);
  ASSERT_TRUE(parse_device_track_pid("\"1074827776\"", &owner, &device));
  EXPECT_EQ(owner, 4242);
  EXPECT_EQ(device, 0);
  // Real pids (up to pid_max's limit), Kineto's device pids, and what is past 31 bits are not.
  for (const char* pid : {"0", "1", "7", "4194303", "1073741823", "2147483648", "-1073742081", "1e9", ""})
    EXPECT_FALSE(parse_device_track_pid(pid, nullptr, nullptr)) << pid;
}

std::string x(const std::string& name, const std::string& cat, int64_t pid, int64_t tid, int64_t ts, int64_t dur,
              const std::string& args = "") {
  return "{\"ph\":\"X\",\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(1000000 + ts) + ",\"dur\":" +
         std::to_string(dur) + (args.empty() ? "" : ",\"args\":{" + args + "}") + "}";
}

// Two processes merged into one file, each with its GPU 0 on its own track:
// a step's GPU busy time is its own process's devices', a device event with
// no launch falls in its own process's step, and the streams stay apart.
TEST(DeviceTracks, EachProcessOfAMergedFileHasItsOwnGpus) {
  const int64_t gpu_a = format::device_track_pid(1, 0), gpu_b = format::device_track_pid(2, 0);
  TempDir d;
  const std::string path = d.file("merged.pfw");
  testing::write_file(path, testing::pfw_text({
      x("ProfilerStep#0", "user_annotation", 1, 1, 0, 100),
      x("cudaLaunchKernel", "cuda_runtime", 1, 1, 1, 1, "\"correlation\":1"),
      x("gemm", "kernel", gpu_a, 7, 10, 80, "\"device\":0,\"stream\":7,\"correlation\":1"),
      x("ProfilerStep#0", "user_annotation", 2, 2, 0, 100),
      x("relu", "kernel", gpu_b, 7, 20, 10, "\"device\":0,\"stream\":7,\"correlation\":5"),  // its launch not traced
  }));
  const DeviceTimeline t = read_device_timeline({path}, 1, {});
  ASSERT_EQ(t.links.size(), 2u);
  const DeviceReport r = device_report(t);
  ASSERT_EQ(r.steps.size(), 2u);
  std::map<std::string, const DeviceStep*> step;
  for (const DeviceStep& s : r.steps) step[s.pid] = &s;
  ASSERT_TRUE(step.count("1") && step.count("2"));
  EXPECT_EQ(step["1"]->busy_ns, 80000);
  EXPECT_EQ(step["1"]->events, 1u);
  EXPECT_STREQ(step["1"]->bound, "gpu-bound");
  EXPECT_EQ(step["2"]->busy_ns, 10000);  // not process 1's gemm
  EXPECT_EQ(step["2"]->events, 1u);
  EXPECT_STREQ(step["2"]->bound, "cpu-bound");
  EXPECT_EQ(r.busy_ns, 90000);
  ASSERT_EQ(r.stream.size(), 2u);
  EXPECT_EQ(r.stream[0].key, "GPU 0 stream 7 (pid 1)");
  EXPECT_EQ(r.stream[1].key, "GPU 0 stream 7 (pid 2)");
}

// The steps analysis (`summary --by step`) reads a process's CPU threads: a
// device track is no process of its own -- not a data-loader worker beside
// the process with model work, nor one whose repeated kernel is a step.
TEST(DeviceTracks, StepsLeaveDeviceTracksOut) {
  const int64_t gpu = format::device_track_pid(4242, 0);
  std::vector<std::string> lines;
  for (int64_t s = 0; s < 3; ++s) {
    lines.push_back(x("train_step", "app", 4242, 4242, s * 200, 100));
    lines.push_back(x("aten::mm", "aten", 4242, 4242, s * 200 + 10, 20));
    lines.push_back(x("gemm", "kernel", gpu, 7, s * 200 + 40, 150, "\"device\":0,\"stream\":7"));
    lines.push_back(x("relu", "kernel", gpu, 7, s * 200 + 190, 5, "\"device\":0,\"stream\":7"));
  }
  TempDir d;
  const std::string path = d.file("steps.pfw");
  testing::write_file(path, testing::pfw_text(lines));
  const StepReport r = analyze_steps({path}, 1, {});
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].pid, "4242");
  EXPECT_EQ(r.processes[0].region, "train_step");
  EXPECT_TRUE(r.without_steps.empty());
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.outside_traced_us, 0);  // the kernels are no thread time outside the steps
  std::ostringstream text;
  write_steps_table(text, r);
  EXPECT_EQ(text.str().find("data-loader workers"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace dftracer::analyze
