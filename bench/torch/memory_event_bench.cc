// Cost of memory capture per allocation event on the allocating thread,
// side by side: c10::reportMemoryUsageToProfiler -- what torch's CPU
// allocator and CUDA's caching allocator call for each allocation and free
// -- inside a recorded op, with memory capture off (c10 finds no reporter:
// its own lookup) and on (the observer's reporter: the op's bytes, the
// "alloc"/"free" event with the block's address, the counter track).
// Each iteration reports kBatch events (an allocation and its free, in
// pairs) and is timed by hand; between batches (untimed) the writer drains,
// so the figure is the allocating thread's cost, not the writer's
// throughput. Counters: ns_per_event (wall), cpu_ns_per_event (the thread's
// CPU time, which a loaded machine inflates less).
#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <stdlib.h>
#include <time.h>
#include <torch/torch.h>

#include <chrono>
#include <string>

#include "dftracer/dftracer.h"
#include "dftracer/torch.h"

namespace {

constexpr int kBatch = 16384;

double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct Session {
  Session() {
    setenv("DFTRACER_LOG_LEVEL", "error", 1);
    char tmpl[] = "/tmp/dft-membench-XXXXXX";
    dir = mkdtemp(tmpl);
    dft_init_opt_in((dir + "/bench").c_str(), nullptr, -1);
    dftracer::torch::enable();
  }
  std::string dir;
};

void report_batch(benchmark::State& state, bool memory) {
  static Session session;
  dftracer::torch::enable_memory(memory);
  double total_ns = 0, total_cpu_ns = 0;
  uint64_t events = 0;
  static char block[64];
  const c10::Device cpu(c10::DeviceType::CPU);
  {
    RECORD_USER_SCOPE("bench_op");  // the allocating op: its frame takes the bytes
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = thread_cpu_ns();
      size_t total = 1 << 20;
      for (int i = 0; i < kBatch / 2; ++i) {
        void* p = block + (i & 7) * 8;
        c10::reportMemoryUsageToProfiler(p, 512, total + 512, total + 4096, cpu);
        c10::reportMemoryUsageToProfiler(p, -512, total, total + 4096, cpu);
      }
      total_cpu_ns += thread_cpu_ns() - c0;
      total_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      events += kBatch;
      state.PauseTiming();
      dft_flush();
      state.ResumeTiming();
    }
  }
  dftracer::torch::enable_memory(false);
  state.counters["ns_per_event"] = total_ns / static_cast<double>(events);
  state.counters["cpu_ns_per_event"] = total_cpu_ns / static_cast<double>(events);
}

void BM_MemoryOff(benchmark::State& state) { report_batch(state, false); }
void BM_MemoryOn(benchmark::State& state) { report_batch(state, true); }
BENCHMARK(BM_MemoryOff)->UseRealTime();
BENCHMARK(BM_MemoryOn)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
