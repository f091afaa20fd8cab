// Writer throughput: events/s the writer thread formats and writes (one
// core), and bytes per event on disk, for .pfw and .pfw.gz, on two mixes:
//   ops_full   our capture backend's op events: name, cat, times, and the
//              static node args (module, shapes, dtype, flops, bytes,
//              seq_nr) plus phase / grad_enabled / tags;
//   ops_small  pydftracer-style op events: name, cat, times, hhash, one
//              small context fragment (its example trace's shape).
// The *_us rows write times in whole microseconds
// (DFTRACER_TIME_RESOLUTION=us) instead of with nanosecond fractions.
// The recording thread fills the pool much faster than the writer drains
// it, so the run's wall time is the writer's time. On a loaded machine wall
// time also counts time the writer waited for a core, so the CPU time the
// writer thread used (process CPU minus the recording thread's) is reported
// too: "events per writer-CPU-second" is the one-core throughput.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <time.h>

#include <chrono>
#include <string>

#include "dftracer/dftracer.h"
#include "op_mix.h"

namespace {

double cpu_seconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr uint64_t kEvents = 2000000;

void run(benchmark::State& state, bool compress, bool full, bool whole_us = false) {
  setenv("DFTRACER_LOG_LEVEL", "error", 1);
  setenv("DFTRACER_TIME_RESOLUTION", whole_us ? "us" : "ns", 1);
  setenv("DFTRACER_BUFFER_SIZE", "512M", 1);  // holds the whole run: no back-pressure
  setenv("DFTRACER_TRACE_COMPRESSION", compress ? "1" : "0", 1);
  static auto full_mix = dftracer_bench::make_op_mix();
  static auto small_mix = [] {
    auto m = dftracer_bench::make_op_mix();
    std::string ctx = "\"p_idx\":-1,\"grad_enabled\":0,\"level\":1";
    dft_id frag = dft_intern_json_fragment(ctx.data(), ctx.size());
    dft_id empty = dft_intern_json_fragment("", 0);
    for (auto& n : m.nodes) n.fragment = empty;
    m.context = frag;
    return m;
  }();
  const auto& mix = full ? full_mix : small_mix;
  double events = 0, bytes = 0, secs = 0, writer_cpu = 0;
  for (auto _ : state) {
    char tmpl[] = "/tmp/dft-wbench-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    double p0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID), m0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    auto t0 = std::chrono::steady_clock::now();
    dft_init_opt_in((dir + "/w").c_str(), nullptr, -1);
    dftracer_bench::record_op_mix(mix, kEvents);
    dft_finalize();
    auto t1 = std::chrono::steady_clock::now();
    writer_cpu += (cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - p0) - (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - m0);
    dft_stats st;
    dft_get_stats(&st);
    double s = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(s);
    events += static_cast<double>(kEvents);
    bytes += static_cast<double>(st.bytes_written);
    secs += s;
    std::string cmd = "rm -rf " + dir;
    if (system(cmd.c_str()) != 0) state.SkipWithError("cleanup failed");
  }
  state.counters["Mevents_per_s"] = events / secs / 1e6;
  state.counters["Mevents_per_writer_cpu_s"] = events / writer_cpu / 1e6;
  state.counters["bytes_per_event"] = bytes / events;
}

}  // namespace

BENCHMARK_CAPTURE(run, pfw_ops_full, false, true)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, pfw_gz_ops_full, true, true)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, pfw_ops_small, false, false)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, pfw_gz_ops_small, true, false)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, pfw_gz_ops_full_us, true, true, true)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run, pfw_gz_ops_small_us, true, false, true)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
