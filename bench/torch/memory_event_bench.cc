// Cost of memory capture per allocation event on the allocating thread,
// side by side: c10::reportMemoryUsageToProfiler -- what torch's CPU
// allocator and CUDA's caching allocator call for each allocation and free
// -- inside a recorded op, with memory capture off (c10 finds no reporter:
// its own lookup) and on (the observer's reporter: the op's bytes, the
// "alloc"/"free" event with the block's address, the counter track).
// Beside them, the two ways of knowing what holds the peak, alone:
//   BlockEventOnly  the "alloc"/"free" record the capture writes per event
//                   (the analyzer replays them), through the core.
//   LiveTableOnly   the alternative: a preallocated lock-free table of live
//                   blocks (address -> size, op; CAS insert, erase by
//                   another thread possible) and per-op live bytes
//                   (atomic adds) in the process -- without the snapshot of
//                   the per-op bytes it would also need at each new peak.
// Each iteration reports kBatch events (an allocation and its free, in
// pairs) and is timed by hand; between batches (untimed) the writer drains,
// so the figure is the allocating thread's cost, not the writer's
// throughput. Counters: ns_per_event (wall), cpu_ns_per_event (the thread's
// CPU time, which a loaded machine inflates less), writer_cpu_ns_per_event
// (the other threads' CPU time over the batch and its flush: the trace
// writer formatting and compressing the records, off the allocating thread).
#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <stdlib.h>
#include <time.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <memory>
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

// One trace for every benchmark of the run.
void start_session() { static Session session; }

double process_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

template <class Body>
void timed_batches(benchmark::State& state, Body body) {
  double total_ns = 0, total_cpu_ns = 0, writer_cpu_ns = 0;
  uint64_t events = 0;
  for (auto _ : state) {
    const double p0 = process_cpu_ns();
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_ns();
    for (int i = 0; i < kBatch / 2; ++i) body(i);
    const double c1 = thread_cpu_ns();
    total_cpu_ns += c1 - c0;
    total_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    events += kBatch;
    state.PauseTiming();
    dft_flush();
    // The other threads' CPU over the batch and its flush: the writer's
    // formatting and compressing of the batch's records.
    writer_cpu_ns += (process_cpu_ns() - p0) - (thread_cpu_ns() - c0);
    state.ResumeTiming();
  }
  state.counters["ns_per_event"] = total_ns / static_cast<double>(events);
  state.counters["cpu_ns_per_event"] = total_cpu_ns / static_cast<double>(events);
  state.counters["writer_cpu_ns_per_event"] = writer_cpu_ns / static_cast<double>(events);
}

// A block's address and the allocator's total, varied as a program's are
// (what the writer formats and compresses depends on them; the reporter's
// cost does not).
void* block_addr(int i) { return reinterpret_cast<void*>(0x55d0c0000000ull + ((i * 2654435761u) & 0xfffffu) * 64); }
size_t block_total(int i) { return (size_t{1} << 24) + ((i * 40503u) & 0xfffffu) * 16; }

void report_batch(benchmark::State& state, bool memory) {
  start_session();
  dftracer::torch::enable_memory(memory);
  const c10::Device cpu(c10::DeviceType::CPU);
  {
    RECORD_USER_SCOPE("bench_op");  // the allocating op: its frame takes the bytes
    timed_batches(state, [&](int i) {
      void* p = block_addr(i);
      const size_t total = block_total(i);
      c10::reportMemoryUsageToProfiler(p, 512, total + 512, total + 4096, cpu);
      c10::reportMemoryUsageToProfiler(p, -512, total, total + 4096, cpu);
    });
  }
  dftracer::torch::enable_memory(false);
}

void BM_BlockEventOnly(benchmark::State& state) {
  start_session();
  static const dft_id alloc = dft_intern_cstr("alloc"), free_ = dft_intern_cstr("free"), cat = dft_intern_cstr("memory"),
                      k_addr = dft_intern_cstr("addr"), k_size = dft_intern_cstr("size"),
                      k_total = dft_intern_cstr("total"), k_op = dft_intern_cstr("op"), op = dft_intern_cstr("aten::mm");
  timed_batches(state, [&](int i) {
    dft_arg a[4];
    a[0] = {k_addr, DFT_ARG_UINT, {}};
    a[0].v.u = reinterpret_cast<uintptr_t>(block_addr(i));
    a[1] = {k_size, DFT_ARG_UINT, {}};
    a[1].v.u = 512;
    a[2] = {k_total, DFT_ARG_UINT, {}};
    a[2].v.u = block_total(i) + 512;
    a[3] = {k_op, DFT_ARG_STR, {}};
    a[3].v.id = op;
    dft_instant_ticks(alloc, cat, dft_ticks_inline(), a, 4);
    dft_instant_ticks(free_, cat, dft_ticks_inline(), a, 1);  // a free: its address alone
  });
}

// Open addressing, linear probing; a key of 0 is empty, 1 a tombstone.
struct LiveTable {
  static constexpr size_t kSlots = 1 << 16;
  struct Slot {
    std::atomic<uint64_t> addr{0};
    std::atomic<uint64_t> size{0};
    std::atomic<uint32_t> op{0};
  };
  std::unique_ptr<Slot[]> slots{new Slot[kSlots]};
  std::unique_ptr<std::atomic<int64_t>[]> live_by_op{new std::atomic<int64_t>[4096]()};
  static size_t hash(uint64_t a) { return (a * 0x9E3779B97F4A7C15ull) >> 48; }
  void insert(uint64_t addr, uint64_t size, uint32_t op) {
    for (size_t i = hash(addr);; i = (i + 1) & (kSlots - 1)) {
      uint64_t cur = slots[i].addr.load(std::memory_order_relaxed);
      if ((cur == 0 || cur == 1) && slots[i].addr.compare_exchange_strong(cur, addr, std::memory_order_acq_rel)) {
        slots[i].size.store(size, std::memory_order_relaxed);
        slots[i].op.store(op, std::memory_order_relaxed);
        live_by_op[op].fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
        return;
      }
    }
  }
  void erase(uint64_t addr) {
    for (size_t i = hash(addr);; i = (i + 1) & (kSlots - 1)) {
      const uint64_t cur = slots[i].addr.load(std::memory_order_acquire);
      if (cur == 0) return;
      if (cur == addr) {
        live_by_op[slots[i].op.load(std::memory_order_relaxed)].fetch_sub(
            static_cast<int64_t>(slots[i].size.load(std::memory_order_relaxed)), std::memory_order_relaxed);
        slots[i].addr.store(1, std::memory_order_release);
        return;
      }
    }
  }
};

void BM_LiveTableOnly(benchmark::State& state) {
  start_session();
  static LiveTable table;
  timed_batches(state, [&](int i) {
    const uint64_t addr = 0x7f0000001000ull + static_cast<uint64_t>(i & 7) * 64;
    table.insert(addr, 512, 17);
    table.erase(addr);
  });
}

void BM_MemoryOff(benchmark::State& state) { report_batch(state, false); }
void BM_MemoryOn(benchmark::State& state) { report_batch(state, true); }
BENCHMARK(BM_MemoryOff)->UseRealTime();
BENCHMARK(BM_MemoryOn)->UseRealTime();
BENCHMARK(BM_BlockEventOnly)->UseRealTime();
BENCHMARK(BM_LiveTableOnly)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
