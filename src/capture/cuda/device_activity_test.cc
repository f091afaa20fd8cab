// Activity records -> trace events (device_activity.h) on records filled in
// here as CUPTI would hand them over, and, where the analyzer is built, read
// back by `dftracer-analyze device`'s linker.
#include "device_activity.h"
#include "activity_records_for_test.h"
#include "device_track.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#ifdef DFTRACER_HAVE_ANALYZER
#include "device_time.hpp"
#include "kineto_import.hpp"
#include "steps.hpp"
#endif

namespace dftracer::cuda {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e; (e = text.find('\n', b)) != std::string::npos; b = e + 1) out.push_back(text.substr(b, e - b));
  EXPECT_EQ(b, text.size()) << "output must end in a newline";
  return out;
}

using test::api;
using test::kernel;

// The traced process (api()'s default pid) and its device 0's track.
constexpr uint32_t kHostPid = 4242;
constexpr int64_t kGpu0 = 1074827776;  // 0x40000000 | 4242 << 8 | 0
static_assert(kGpu0 == format::device_track_pid(kHostPid, 0));

TEST(ClockMap, OneSampleIsAnOffset) {
  ClockMap c;
  c.add_sample(1000, 1700000000000000000ull);
  EXPECT_EQ(c.to_trace_ns(1000), 1700000000000000000ll);
  EXPECT_EQ(c.to_trace_ns(2500), 1700000000000001500ll);
  EXPECT_EQ(c.to_trace_ns(0), 1699999999999999000ll);
}

TEST(ClockMap, TwoSamplesFollowDrift) {
  // The GPU clock runs 10 ppm fast: 1 s of it is 999990 us of trace time.
  ClockMap c;
  c.add_sample(5000000000ull, 1700000000000000000ull);
  c.add_sample(6000000000ull, 1700000000999990000ull);
  EXPECT_EQ(c.to_trace_ns(5500000000ull), 1700000000499995000ll);
  EXPECT_EQ(c.to_trace_ns(7000000000ull), 1700000001999980000ll);  // past the samples: extrapolated
}

TEST(ClockMap, NoSampleIsIdentity) { EXPECT_EQ(ClockMap().to_trace_ns(123), 123); }

TEST(ActivityConverter, KernelWithLaunchAndExternalId) {
  ClockMap clock;
  clock.add_sample(0, 1000000000000ull);  // + 1000 s
  ActivityConverter conv(clock, kHostPid);
  std::string out;
  conv.add(ExternalCorrelation{35, 9001});
  conv.add(api(ActivityKind::runtime, "cudaLaunchKernel", 5000, 7500, 35), &out);
  conv.add(kernel("void gemm<float>(int)", 9000, 12345, 35), &out);
  const auto l = lines(out);
  ASSERT_EQ(l.size(), 6u);
  EXPECT_EQ(l[0],
            "{\"name\":\"cudaLaunchKernel\",\"cat\":\"cuda_runtime\",\"ph\":\"X\",\"pid\":4242,\"tid\":4243,"
            "\"ts\":1000000005.000,\"dur\":2.500,\"args\":{\"cbid\":211,\"correlation\":35,\"External id\":9001}}");
  EXPECT_EQ(l[1], "{\"ph\":\"s\",\"id\":35,\"pid\":4242,\"tid\":4243,\"ts\":1000000005.000,\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
  EXPECT_EQ(l[2], "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1074827776,\"tid\":0,\"args\":{\"name\":\"GPU 0 (pid "
                  "4242)\"}}");
  EXPECT_EQ(l[3], "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1074827776,\"tid\":7,\"args\":{\"name\":\"stream 7\"}}");
  EXPECT_EQ(l[4],
            "{\"name\":\"void gemm<float>(int)\",\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":1074827776,\"tid\":7,"
            "\"ts\":1000000009.000,\"dur\":3.345,\"args\":{\"device\":0,\"context\":1,\"stream\":7,"
            "\"correlation\":35,\"External id\":9001}}");
  EXPECT_EQ(l[5],
            "{\"ph\":\"f\",\"id\":35,\"pid\":1074827776,\"tid\":7,\"ts\":1000000009.000,\"cat\":\"ac2g\",\"name\":\"ac2g\","
            "\"bp\":\"e\"}");
  EXPECT_EQ(conv.events(), 2u);
  EXPECT_EQ(conv.without_external_id(), 0u);
}

TEST(ActivityConverter, TrackNamesOncePerDeviceAndStream) {
  ActivityConverter conv(ClockMap(), kHostPid);
  std::string out;
  conv.add(kernel("a", 10, 20, 1, 7), &out);
  conv.add(kernel("b", 30, 40, 2, 7), &out);
  conv.add(kernel("c", 50, 60, 3, 13), &out);
  size_t process = 0, thread = 0;
  for (const auto& l : lines(out)) {
    process += l.find("\"process_name\"") != std::string::npos;
    thread += l.find("\"thread_name\"") != std::string::npos;
  }
  EXPECT_EQ(process, 1u);
  EXPECT_EQ(thread, 2u);
  EXPECT_EQ(conv.without_external_id(), 3u);
}

TEST(ActivityConverter, CopiesSetsAndSkippedApiCalls) {
  ActivityConverter conv(ClockMap(), kHostPid);
  std::string out;
  ActivityRecord copy = kernel(nullptr, 1000, 3000, 5);
  copy.kind = ActivityKind::memcpy;
  copy.copy_kind = 1;
  copy.bytes = 4096;
  conv.add(copy, &out);
  ActivityRecord set = kernel(nullptr, 4000, 4500, 6);
  set.kind = ActivityKind::memset;
  set.bytes = 64;
  conv.add(set, &out);
  conv.add(api(ActivityKind::runtime, "cudaGetDevice", 10, 20, 7), &out);
  conv.add(api(ActivityKind::driver, "cuLaunchKernel", 10, 20, 8), &out);
  conv.add(api(ActivityKind::runtime, "cudaStreamSynchronize", 30, 90, 9), &out);
  EXPECT_NE(out.find("\"name\":\"Memcpy HtoD\",\"cat\":\"gpu_memcpy\""), std::string::npos);
  EXPECT_NE(out.find("\"correlation\":5,\"bytes\":4096}"), std::string::npos);
  EXPECT_NE(out.find("\"name\":\"Memset\",\"cat\":\"gpu_memset\""), std::string::npos);
  EXPECT_NE(out.find("\"name\":\"cuLaunchKernel\",\"cat\":\"cuda_driver\""), std::string::npos);
  EXPECT_NE(out.find("\"name\":\"cudaStreamSynchronize\""), std::string::npos);
  EXPECT_EQ(out.find("cudaGetDevice"), std::string::npos);
  EXPECT_EQ(conv.skipped_api_calls(), 1u);
  EXPECT_STREQ(memcpy_kind_name(8), "Memcpy DtoD");
  EXPECT_STREQ(memcpy_kind_name(99), "Memcpy");
}

TEST(ActivityConverter, RecordsWithoutATimeOrEndingBeforeTheirStartAreSkipped) {
  ActivityConverter conv(ClockMap(), kHostPid);
  std::string out;
  conv.add(kernel("unstarted", 0, 20, 1), &out);
  conv.add(kernel("backwards", 50, 40, 2), &out);
  conv.add(api(ActivityKind::runtime, "cudaLaunchKernel", 0, 0, 3), &out);
  EXPECT_EQ(out, "");
  EXPECT_EQ(conv.events(), 0u);
  EXPECT_EQ(conv.skipped_bad_times(), 3u);
  conv.add(kernel("instant", 50, 50, 4), &out);
  EXPECT_NE(out.find("\"name\":\"instant\""), std::string::npos);
  EXPECT_EQ(conv.events(), 1u);
}

TEST(ActivityConverter, OldestExternalIdsDroppedPastTheCap) {
  ActivityConverter conv(ClockMap(), kHostPid, 2);
  conv.add(ExternalCorrelation{1, 100});
  conv.add(ExternalCorrelation{2, 200});
  conv.add(ExternalCorrelation{3, 300});
  EXPECT_EQ(conv.dropped_external_ids(), 1u);
  std::string out;
  conv.add(kernel("k1", 1, 2, 1), &out);
  conv.add(kernel("k3", 1, 2, 3), &out);
  EXPECT_EQ(out.find("\"External id\":100"), std::string::npos);
  EXPECT_NE(out.find("\"External id\":300"), std::string::npos);
  // A graph launch: several kernels of one correlation id keep its external id.
  conv.add(kernel("k3b", 2, 3, 3), &out);
  EXPECT_EQ(conv.without_external_id(), 1u);
}

TEST(ActivityConverter, NamesAreEscaped) {
  ActivityConverter conv(ClockMap(), kHostPid);
  std::string out;
  conv.add(kernel("k<\"q\"\\>\n", 1, 10, 1), &out);
  EXPECT_NE(out.find("\"name\":\"k<\\\"q\\\"\\\\>\\n\""), std::string::npos);
}

// A traced process of pid 1 (a container's first process) with device 1:
// the device's events must not land on the process's own track (pid 1), nor
// be named as a process of their own that a real one could be.
TEST(ActivityConverter, Pid1AndDevice1KeepTheirTracksApart) {
  ActivityConverter conv(ClockMap(), 1);
  std::string out;
  conv.add(ExternalCorrelation{9, 77});
  conv.add(api(ActivityKind::runtime, "cudaLaunchKernel", 100, 200, 9, 1, 1), &out);
  ActivityRecord k = kernel("gemm", 300, 900, 9);
  k.device_id = 1;
  conv.add(k, &out);
  const int64_t gpu1 = format::device_track_pid(1, 1);
  EXPECT_EQ(gpu1, 0x40000101);
  EXPECT_NE(out.find("{\"name\":\"gemm\",\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":1073742081,\"tid\":7,"), std::string::npos)
      << out;
  EXPECT_NE(out.find("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1073742081,\"tid\":0,\"args\":{\"name\":"
                     "\"GPU 1 (pid 1)\"}}"),
            std::string::npos)
      << out;
  for (const std::string& l : lines(out)) {
    if (l.find("\"pid\":1,") == std::string::npos) continue;
    EXPECT_TRUE(l.find("cudaLaunchKernel") != std::string::npos || l.find("\"ph\":\"s\"") != std::string::npos)
        << "only the launch call and its flow start are the process's: " << l;
  }
  int64_t owner = -1, device = -1;
  EXPECT_TRUE(format::parse_device_track_pid("1073742081", &owner, &device));
  EXPECT_EQ(owner, 1);
  EXPECT_EQ(device, 1);
}

#ifdef DFTRACER_HAVE_ANALYZER
// What the converter writes is what `dftracer-analyze device` links: the
// kernel to its launch (correlation) and to the op whose id was pushed.
TEST(ActivityConverter, AnalyzerLinksItsOutput) {
  const auto dir = std::filesystem::temp_directory_path() / ("dft-cuda-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "gpu.pfw").string();
  ClockMap clock;
  clock.add_sample(0, 1700000000000000000ull);
  ActivityConverter conv(clock, kHostPid);
  std::string out = "[\n";
  // The op on the host, as the tracer writes it, with the id it pushed.
  out +=
      "{\"name\":\"aten::mm\",\"cat\":\"cpu_op\",\"ph\":\"X\",\"pid\":4242,\"tid\":4243,"
      "\"ts\":1700000000000004.000,\"dur\":10.000,\"args\":{\"External id\":77}}\n";
  conv.add(ExternalCorrelation{501, 77});
  conv.add(api(ActivityKind::runtime, "cudaLaunchKernel", 5000, 8000, 501), &out);
  conv.add(kernel("gemm", 20000, 50000, 501), &out);
  std::ofstream(path) << out;

  using namespace dftracer::analyze;
  const DeviceTimeline t = read_device_timeline({path}, 1, {});
  ASSERT_EQ(t.links.size(), 1u);
  const DeviceLink& l = t.links[0];
  ASSERT_NE(l.launch, kNoEvent);
  ASSERT_NE(l.op, kNoEvent);
  EXPECT_EQ(t.events[l.op].name, "aten::mm");
  EXPECT_TRUE(l.op_by_external_id);
  const DeviceReport r = device_report(t);
  EXPECT_EQ(r.device_ns, 30000);
  EXPECT_EQ(r.delay_sum_ns, 15000);  // kernel start - launch start
  std::filesystem::remove_all(dir);
}

// The same process of pid 1 read back: its GPU's kernel is device time of
// process 1 (`device`: its op, its stream, its step) and no thread time of
// it (`summary --by step`: the process's span is its CPU events').
TEST(ActivityConverter, AnalyzerReadsPid1sDevice1AsItsGpu) {
  const auto dir = std::filesystem::temp_directory_path() / ("dft-cuda-pid1-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "gpu.pfw").string();
  ClockMap clock;
  clock.add_sample(0, 1700000000000000000ull);
  ActivityConverter conv(clock, 1);
  std::string out = "[\n";
  out +=
      "{\"name\":\"ProfilerStep#0\",\"cat\":\"user_annotation\",\"ph\":\"X\",\"pid\":1,\"tid\":1,"
      "\"ts\":1700000000000000.000,\"dur\":10.000}\n"
      "{\"name\":\"aten::mm\",\"cat\":\"cpu_op\",\"ph\":\"X\",\"pid\":1,\"tid\":1,"
      "\"ts\":1700000000000000.500,\"dur\":5.000,\"args\":{\"External id\":77}}\n";
  conv.add(ExternalCorrelation{9, 77});
  conv.add(api(ActivityKind::runtime, "cudaLaunchKernel", 1000, 2000, 9, 1, 1), &out);
  ActivityRecord k = kernel("gemm", 20000, 50000, 9);
  k.device_id = 1;
  conv.add(k, &out);
  std::ofstream(path) << out;

  using namespace dftracer::analyze;
  const DeviceTimeline t = read_device_timeline({path}, 1, {});
  ASSERT_EQ(t.links.size(), 1u);
  const DeviceLink& l = t.links[0];
  EXPECT_EQ(t.events[l.event].owner, "1");
  ASSERT_NE(l.op, kNoEvent);
  EXPECT_EQ(t.events[l.op].name, "aten::mm");
  EXPECT_EQ(l.step, 0);
  const DeviceReport r = device_report(t);
  ASSERT_EQ(r.stream.size(), 1u);
  EXPECT_EQ(r.stream[0].key, "GPU 1 stream 7 (pid 1)");
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].events, 1u);
  EXPECT_STREQ(r.steps[0].bound, "no-gpu");  // the kernel ran after the step's range

  const StepReport steps = analyze_steps({path}, 1, {});
  ASSERT_EQ(steps.runs.size(), 1u);
  EXPECT_EQ(steps.runs[0].pid, "1");
  EXPECT_DOUBLE_EQ(steps.runs[0].span_us, 10.0);  // its CPU events, not the kernel that ends at 50 us
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace dftracer::cuda
