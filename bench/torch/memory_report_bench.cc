// Memory capture's cost per allocation event on the allocating thread, ours
// apart from torch's (docs/performance.md, "memory capture, per allocation
// event").
//
// An allocation event reaches us as c10::reportMemoryUsageToProfiler(ptr,
// bytes, total, reserved, device), which finds the reporter in the thread's
// debug info (PROFILER_STATE) and calls it. Each benchmark runs with tracing
// on, the observer on, and one recorded op (aten::addmm, inside
// aten::linear) open on the thread, as when an op allocates its output:
//
//   Report/ours        c10's call into the observer's reporter (enable_memory):
//                      the bytes added to the op's frame, the track's sample
//                      when the interval (DFTRACER_MEMORY_INTERVAL_US, default
//                      100 us) has passed
//   Report/ours_every  the same with a sample written at every event (interval 0)
//   Report/noop        c10's call into a reporter that does nothing: the floor
//                      (c10's debug-info lookup and the virtual call)
//   ours - noop        what our reporter adds per event
//
//   Alloc/off          c10's CPU allocator, 4 KiB allocate + free, memory capture off
//   Alloc/noop         the same with a reporter that reports nothing but says
//                      memoryProfilingEnabled(): torch's own bookkeeping turns on
//                      (ProfiledCPUMemoryReporter: a global mutex and a hash map
//                      of sizes per allocation, debug-info lookups)
//   Alloc/ours         the same with our reporter
// Items are allocation events (an allocate and a free: two).
#include <ATen/core/function_schema.h>
#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <string>

#include "dftracer/dftracer.h"
#include "dftracer/torch.h"
#include "torch_compat.h"

namespace {

using dftracer::torch_observer::install_memory_reporter;
using dftracer::torch_observer::MemoryReporterBase;
using dftracer::torch_observer::remove_memory_reporter;

class NoopReporter final : public MemoryReporterBase {
 public:
  void reportMemoryUsage(void* ptr, int64_t size, size_t total, size_t, c10::Device) override {
    benchmark::DoNotOptimize(ptr);
    benchmark::DoNotOptimize(size);
    benchmark::DoNotOptimize(total);
  }
  bool memoryProfilingEnabled() const override { return true; }
};
NoopReporter* const g_noop = new NoopReporter;  // never destroyed, as the observer's

// An op open on the thread (the observer records it): the frame an allocation lands in.
struct OpenOp {
  explicit OpenOp(const char* name) : rf(at::RecordScope::FUNCTION) {
    if (rf.isActive()) rf.before(name);
  }
  at::RecordFunction rf;
};

enum Mode { kOurs, kOursEvery, kNoop, kOff };

// Tracing on (to a file under $TMPDIR), the observer on, the mode's reporter
// on this thread; undone at the end.
class Setup {
 public:
  explicit Setup(Mode mode) : mode_(mode) {
    const char* tmp = std::getenv("TMPDIR");
    prefix_ = std::string(tmp ? tmp : "/tmp") + "/dft_bench_memory_report";
    dft_init_opt_in(prefix_.c_str(), nullptr, -1);
    dftracer::torch::enable();
    if (mode == kOurs || mode == kOursEvery) {
      setenv("DFTRACER_MEMORY_INTERVAL_US", mode == kOursEvery ? "0" : "100", 1);
      dftracer::torch::enable_memory(true);
    } else if (mode == kNoop) {
      install_memory_reporter(g_noop);
    }
  }
  ~Setup() {
    if (mode_ == kOurs || mode_ == kOursEvery) dftracer::torch::enable_memory(false);
    if (mode_ == kNoop) remove_memory_reporter(g_noop);
    dftracer::torch::disable();
    const std::string path = dft_trace_path() ? dft_trace_path() : "";
    dft_finalize();
    if (!path.empty()) {
      std::remove(path.c_str());
      std::remove((path + ".idx").c_str());
    }
  }

 private:
  Mode mode_;
  std::string prefix_;
};

void Report(benchmark::State& state, Mode mode) {
  Setup setup(mode);
  alignas(64) static char block[4096];
  size_t total = 1 << 20;
  OpenOp linear("aten::linear"), addmm("aten::addmm");
  const c10::Device cpu(c10::DeviceType::CPU);
  for (auto _ : state) {
    total += 4096;
    c10::reportMemoryUsageToProfiler(block, 4096, total, 0, cpu);
    total -= 4096;
    c10::reportMemoryUsageToProfiler(block, -4096, total, 0, cpu);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

void Alloc(benchmark::State& state, Mode mode) {
  Setup setup(mode);
  c10::Allocator* const alloc = c10::GetCPUAllocator();
  OpenOp linear("aten::linear"), addmm("aten::addmm");
  for (auto _ : state) {
    c10::DataPtr p = alloc->allocate(4096);
    benchmark::DoNotOptimize(p.get());
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

}  // namespace

// DFT_BENCH_ITERATIONS=N: every benchmark runs exactly N iterations (for
// instruction counts: callgrind at two N, the difference over the extra
// events; this Google Benchmark takes no "Nx" min_time).
int main(int argc, char** argv) {
  const char* fixed = std::getenv("DFT_BENCH_ITERATIONS");
  const struct {
    const char* name;
    void (*fn)(benchmark::State&, Mode);
    Mode mode;
  } cases[] = {{"Report/noop", Report, kNoop}, {"Report/ours", Report, kOurs},
               {"Report/ours_every", Report, kOursEvery}, {"Alloc/off", Alloc, kOff},
               {"Alloc/noop", Alloc, kNoop}, {"Alloc/ours", Alloc, kOurs}};
  for (const auto& c : cases) {
    auto* b = benchmark::RegisterBenchmark(c.name, c.fn, c.mode);
    if (fixed) b->Iterations(std::strtoll(fixed, nullptr, 10));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
