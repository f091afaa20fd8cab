// Device events through the core's writer (core_event_sink.h): activity
// records filled in as CUPTI would hand them over, converted on a thread of
// their own (as CUPTI's completion thread) into the process's trace file,
// beside a CPU op that pushed a launch scope; the file read back must be a
// valid trace with the device tracks named, and `dftracer-analyze device`'s
// reader must link the kernel to its launch call and to the op.
#include "core_event_sink.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "activity_records_for_test.h"
#include "linked_core_for_test.h"
#include "device_activity.h"
#include "device_track.hpp"
#include "dftracer/dftracer.h"
#include "trace_file.h"

#ifdef DFTRACER_HAVE_ANALYZER
#include "device_time.hpp"
#include "kineto_import.hpp"
#include "summary.hpp"
#endif

namespace dftracer::cuda {
namespace {

using test::linked_core;

using dftracer_test::Event;
using dftracer_test::int_arg;
using dftracer_test::str_arg;

using test::api;
using test::kernel;

// The fake device side's launch scope: what the op below pushes.
uint64_t g_next = 5000;
uint64_t fake_push() { return g_next++; }
void fake_pop() {}
const dft_launch_scope kFake = {sizeof(dft_launch_scope), &fake_push, &fake_pop};

TEST(CoreEventSink, FindsTheLinkedCore) {
  CoreApi api;
  std::string error;
  EXPECT_TRUE(find_core_api(nullptr, &api, &error)) << error;  // linked: in the global scope
  EXPECT_EQ(api.complete, &dft_complete_ns_on_track);
}

TEST(CoreEventSink, DeviceEventsInTheProcessTraceLinkedToTheirOp) {
  const std::string dir = dftracer_test::temp_dir("cuda-sink");
  dftracer_test::ScopedEnv plain("DFTRACER_TRACE_COMPRESSION", "0");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  const int64_t pid = dft_pid(), tid = dft_tid();

  // The op, on the recording thread, inside a launch scope (as the observer does).
  ASSERT_EQ(dft_set_launch_scope(&kFake), 0);
  const dft_launch_scope* scope = dft_launch_scope_inline();
  ASSERT_EQ(scope, &kFake);
  const uint64_t ext = scope->push();
  const uint64_t t0 = dft_now_ns();
  dft_arg a;
  a.key = dft_intern_cstr("External id");
  a.type = DFT_ARG_UINT;
  a.v.u = ext;
  dft_complete_ns(dft_intern_cstr("aten::mm"), dft_intern_cstr("aten"), t0, 50000, &a, 1);
  scope->pop();
  dft_set_launch_scope(nullptr);

  // CUPTI's records, with the GPU clock = trace clock - 1 s, converted on
  // another thread (CUPTI's), never the recording one.
  ClockMap clock;
  clock.add_sample(0, 1000000000ull);
  ActivityConverter conv(clock, static_cast<uint32_t>(pid));
  const int64_t gpu0 = format::device_track_pid(static_cast<uint32_t>(pid), 0);  // device 0's track
  std::thread cupti([&] {
    CoreEventSink sink(linked_core());
    const uint64_t g = t0 - 1000000000ull;
    conv.add(ExternalCorrelation{77, ext});
    conv.add(api(ActivityKind::runtime, "cudaLaunchKernel", g + 10000, g + 14000, 77, static_cast<uint32_t>(pid),
                static_cast<uint32_t>(tid)),
            &sink);
    conv.add(kernel("gemm<\"f\">", g + 30000, g + 90000, 77, 7), &sink);
    conv.add(kernel("relu", g + 95000, g + 96000, 78, 7), &sink);  // launched outside any scope
  });
  cupti.join();
  dft_finalize();

  const std::string text = dftracer_test::read_all(path);
  size_t elements = 0;
  ASSERT_EQ(dftracer_test::finalized_trace_error(text, &elements), "");
  const std::vector<Event> ev = dftracer_test::parse_events(dftracer_test::event_lines(text));
  const Event* gemm = nullptr;
  const Event* call = nullptr;
  bool gpu_named = false, stream_named = false, flow_s = false, flow_f = false;
  for (const Event& e : ev) {
    if (e.name == "gemm<\"f\">") gemm = &e;
    if (e.name == "cudaLaunchKernel") call = &e;
    if (e.ph == "M" && e.name == "process_name" && e.pid == gpu0 &&
        str_arg(e, "name") == "GPU 0 (pid " + std::to_string(pid) + ")")
      gpu_named = true;
    if (e.ph == "M" && e.name == "thread_name" && e.pid == gpu0 && e.tid == 7 && str_arg(e, "name") == "stream 7")
      stream_named = true;
    if (e.cat == "ac2g" && e.ph == "s" && e.pid == pid) flow_s = true;
    if (e.cat == "ac2g" && e.ph == "f" && e.pid == gpu0 && e.tid == 7) flow_f = true;
  }
  ASSERT_NE(gemm, nullptr) << text;
  ASSERT_NE(call, nullptr) << text;
  EXPECT_TRUE(gpu_named && stream_named) << text;
  EXPECT_TRUE(flow_s && flow_f) << text;
  EXPECT_EQ(gemm->cat, "kernel");
  EXPECT_EQ(gemm->ph, "X");
  EXPECT_EQ(gemm->pid, gpu0);
  EXPECT_EQ(gemm->tid, 7);
  // On the trace clock: 30 us after the op began, as the GPU clock said.
  const Event* op = nullptr;
  for (const Event& e : ev)
    if (e.name == "aten::mm") op = &e;
  ASSERT_NE(op, nullptr);
  EXPECT_NEAR(gemm->ts - op->ts, 30.0, 0.01);
  EXPECT_DOUBLE_EQ(gemm->dur, 60.0);
  EXPECT_EQ(int_arg(*gemm, "External id"), static_cast<int64_t>(ext)) << gemm->args_json;
  EXPECT_EQ(int_arg(*gemm, "correlation"), 77);
  EXPECT_EQ(int_arg(*gemm, "stream"), 7);
  EXPECT_EQ(call->pid, pid);
  EXPECT_EQ(call->tid, tid);
  EXPECT_EQ(call->cat, "cuda_runtime");
  EXPECT_EQ(conv.without_external_id(), 1u);

#ifdef DFTRACER_HAVE_ANALYZER
  using namespace dftracer::analyze;
  const DeviceTimeline t = read_device_timeline({path}, 1, {});
  ASSERT_EQ(t.links.size(), 2u);
  const DeviceLink& l = t.links[0];
  EXPECT_EQ(t.events[l.event].name, "gemm<\"f\">");
  ASSERT_NE(l.launch, kNoEvent);
  EXPECT_EQ(t.events[l.launch].name, "cudaLaunchKernel");
  ASSERT_NE(l.op, kNoEvent);
  EXPECT_EQ(t.events[l.op].name, "aten::mm");
  EXPECT_TRUE(l.op_by_external_id);
  EXPECT_EQ(t.events[l.event].owner, std::to_string(pid));  // the device track is this process's
  const DeviceReport r = device_report(t);
  EXPECT_EQ(r.device_ns, 61000);
  EXPECT_EQ(r.with_op, 1u);
  EXPECT_EQ(t.stats.malformed + t.stats.bad_fields, 0u);

  // `summary` reads the same file: its CPU tables leave the device events out
  // (GPU time is no thread's) and count them; the launch call is a CPU event.
  const Summary sum = summarize({path}, parse_group_keys("cat"), 0, 1);
  EXPECT_EQ(sum.stats.malformed + sum.stats.bad_fields, 0u);
  uint64_t kernels = 0, launches = 0;
  for (const SummaryRow& row : sum.rows) {
    if (row.key[0] == "kernel") kernels = row.count;
    if (row.key[0] == "cuda_runtime") launches = row.count;
  }
  EXPECT_EQ(kernels, 0u);
  EXPECT_EQ(sum.device_events, 2u);
  EXPECT_EQ(launches, 1u);
#endif
}

#ifdef DFTRACER_HAVE_ANALYZER
// `summary` leaves the device events out (counted), with or without the
// write-time index: the index's span includes them, so it does not answer
// and the summary is a full read's, span included.
TEST(CoreEventSink, SummaryLeavesDeviceEventsOutWithOrWithoutTheIndex) {
  const std::string dir = dftracer_test::temp_dir("cuda-sink-index");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  const uint64_t t0 = dft_now_ns();
  dft_complete_ns(dft_intern_cstr("aten::mm"), dft_intern_cstr("aten"), t0, 50000, nullptr, 0);
  ClockMap clock;
  clock.add_sample(0, 0);
  ActivityConverter conv(clock, static_cast<uint32_t>(dft_pid()));
  std::thread cupti([&] {
    CoreEventSink sink(linked_core());
    for (uint32_t i = 0; i < 3; ++i) conv.add(kernel("gemm", t0 + 1000 * i, t0 + 1000 * i + 500, 100 + i), &sink);
  });
  cupti.join();
  dft_finalize();
  using namespace dftracer::analyze;
  ReadOptions full;
  full.use_index = false;
  const Summary indexed = summarize({path}, parse_group_keys("name"), 0, 1);
  const Summary read = summarize({path}, parse_group_keys("name"), 0, 1, full);
  EXPECT_FALSE(indexed.from_index);
  ASSERT_FALSE(read.from_index);
  for (const Summary* s : {&indexed, &read}) {
    EXPECT_EQ(s->device_events, 3u);
    for (const SummaryRow& row : s->rows) EXPECT_NE(row.key[0], "gemm");
  }
  EXPECT_EQ(indexed.complete_events, read.complete_events);
  EXPECT_DOUBLE_EQ(indexed.traced_us, read.traced_us);
  EXPECT_DOUBLE_EQ(indexed.span_us, read.span_us);
}
#endif

}  // namespace
}  // namespace dftracer::cuda
