// Cost of one complete event on the recording thread, side by side:
//   Floor_L1       two clock reads (rdtsc) and a 32-byte store into a 32 KiB
//                  thread-local ring that never leaves L1: the least any
//                  in-process tracer can do.
//   Floor_Chunked  the same record written the way ours moves data: 32-byte
//                  stores into chunks of our chunk size, each full chunk
//                  handed to another thread that reads it and hands it back
//                  (LIFO free list). It costs what moving the bytes between
//                  cores costs, without our record path; the gap between
//                  the two floors is the data movement, the gap between
//                  this floor and ours is our code.
//   ..._StoreOnly  both floors without the clock reads, beside Ours/record.
//   Ours/region    dft_region_begin + dft_region_end: two clock reads and
//                  our record (what DFT_REGION and the Python API do).
//   Ours/record    dft_complete_ticks with the times already taken: the
//                  record alone.
//   Ours/op_event  the same with the capture backend's two interned JSON
//                  fragments (node args, call context): a 64-byte record,
//                  one new cache line per event.
//   DFTracerDesign two clock reads, snprintf of the JSON line, and a copy
//                  into one mutex-guarded buffer (DFTracer's design).
// Each iteration records a batch of events and is timed by hand; between
// batches (untimed) every recording thread waits until the writer has
// drained, so the figure is the recording thread's cost and not the
// writer's throughput. Counters: ns_per_event
// (wall) and cpu_ns_per_event (the recording thread's CPU time, which a
// loaded machine does not inflate).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dftracer/dftracer.h"

namespace {

constexpr int kBatch = 16384;

struct Session {
  Session() {
    setenv("DFTRACER_LOG_LEVEL", "error", 1);
    char tmpl[] = "/tmp/dft-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    dft_init_opt_in((dir + "/bench").c_str(), nullptr, -1);
    name = dft_intern_cstr("function.mm.default");
    cat = dft_intern_cstr("dynamo");
    static const char kNode[] = "\"graph\":0,\"node\":17,\"module\":\"encoder.0\"";
    static const char kContext[] = "\"phase\":\"forward\",\"step\":3";
    node_args = dft_intern_json_fragment(kNode, sizeof kNode - 1);
    context_args = dft_intern_json_fragment(kContext, sizeof kContext - 1);
  }
  std::string dir;
  dft_id name, cat, node_args, context_args;
};

Session* g_session = nullptr;  // for the clean-up in main

Session& session() {
  static Session s;
  g_session = &s;
  return s;
}

double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// `drain` runs between batches, untimed: the consumer catches up.
template <typename Body, typename Drain>
void run_batches(benchmark::State& state, Body body, Drain drain) {
  double total_ns = 0, total_cpu_ns = 0;
  for (auto _ : state) {
    double c0 = thread_cpu_ns();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) body(i);
    auto t1 = std::chrono::steady_clock::now();
    total_cpu_ns += thread_cpu_ns() - c0;
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    total_ns += ns;
    state.SetIterationTime(ns * 1e-9);
    // Every thread waits for the drain: a thread that ran on would fill the
    // pool to its cap and time the writer's throughput, not its own record.
    drain();
  }
  double events = static_cast<double>(state.iterations()) * kBatch;
  state.counters["ns_per_event"] = benchmark::Counter(total_ns / events, benchmark::Counter::kAvgThreads);
  state.counters["cpu_ns_per_event"] = benchmark::Counter(total_cpu_ns / events, benchmark::Counter::kAvgThreads);
}

// Ours: the writer drains between batches. pool_peak_kib is the most buffer
// memory the process has held so far (the session's peak, so a row shows the
// largest of itself and the rows before it): the working set the record
// path writes into.
template <typename Body>
void run_batches(benchmark::State& state, Body body) {
  run_batches(state, body, [] { dft_flush(); });
  dft_stats st;
  dft_get_stats(&st);
  state.counters["pool_peak_kib"] =
      benchmark::Counter(static_cast<double>(st.pool_bytes_peak) / 1024, benchmark::Counter::kAvgThreads);
}

// --------------------------------------------------------------- floors
struct alignas(32) Slot32 {
  uint64_t a, b;
  uint32_t c, d, e, f;
};
thread_local Slot32 t_ring[1024];

template <bool kClock>
inline void store_slot(Slot32& s, int i) {
  s.a = kClock ? __rdtsc() : static_cast<uint64_t>(i);
  s.b = kClock ? __rdtsc() : static_cast<uint64_t>(i) + 7;
  s.c = 1;
  s.d = 2;
  s.e = 3;
  s.f = static_cast<uint32_t>(i);
}

template <bool kClock>
void BM_Floor_L1(benchmark::State& state) {
  run_batches(
      state,
      [](int i) {
        store_slot<kClock>(t_ring[i & 1023], i);
        benchmark::ClobberMemory();
      },
      [] {});  // nothing to drain

}

// The core's default chunk size (src/core/config.h): keep the two equal.
constexpr size_t kOurChunkBytes = 256u << 10;

// The chunked floor's consumer: full chunks come in, are read (every 8-byte
// word summed, as the writer reads every record) and go back to a LIFO free
// list, so the next chunk a recorder gets is the one the consumer's core
// read last, as with our pool. Hand-offs take a mutex once per chunk, as our
// pool does; nothing per record.
class ChunkRelay {
 public:
  static ChunkRelay& instance() {
    static ChunkRelay* r = new ChunkRelay();  // never destroyed: its thread runs to exit
    return *r;
  }
  size_t chunk_bytes() const { return chunk_bytes_; }

  // The recorder's full chunk goes to the consumer; a free one comes back.
  unsigned char* swap(unsigned char* full) {
    std::lock_guard<std::mutex> lock(mu_);
    if (full != nullptr) {
      full_.push_back(full);
      cv_.notify_all();
    }
    if (!free_.empty()) {
      unsigned char* c = free_.back();
      free_.pop_back();
      return c;
    }
    return static_cast<unsigned char*>(::operator new(chunk_bytes_, std::align_val_t{64}));
  }
  // Waits until the consumer has read every chunk handed to it.
  void drain() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return full_.empty() && !busy_; });
  }

 private:
  ChunkRelay() {
    // Our chunk size, so both move the same working set: the core's default
    // (kOurChunkBytes) or DFTRACER_CHUNK_SIZE as a byte count with an
    // optional k/m suffix.
    chunk_bytes_ = kOurChunkBytes;
    if (const char* e = getenv("DFTRACER_CHUNK_SIZE")) {
      char* end = nullptr;
      unsigned long long v = strtoull(e, &end, 10);
      if (end && (*end == 'k' || *end == 'K')) v <<= 10;
      if (end && (*end == 'm' || *end == 'M')) v <<= 20;
      if (v >= 4096) chunk_bytes_ = (v + 63) & ~63ull;
    }
    std::thread([this] { consume(); }).detach();
  }
  void consume() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !full_.empty(); });
      unsigned char* c = full_.front();
      full_.erase(full_.begin());
      busy_ = true;
      lock.unlock();
      uint64_t sum = 0;
      const uint64_t* w = reinterpret_cast<const uint64_t*>(c);
      for (size_t k = 0; k < chunk_bytes_ / 8; ++k) sum += w[k];
      benchmark::DoNotOptimize(sum);
      lock.lock();
      busy_ = false;
      free_.push_back(c);
      cv_.notify_all();
    }
  }

  size_t chunk_bytes_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<unsigned char*> full_, free_;
  bool busy_ = false;
};

struct ChunkCursor {
  unsigned char* chunk = nullptr;
  size_t off = 0, cap = 0;
};
thread_local ChunkCursor t_cursor;

template <bool kClock>
void BM_Floor_Chunked(benchmark::State& state) {
  ChunkRelay& relay = ChunkRelay::instance();
  run_batches(
      state,
      [&](int i) {
        ChunkCursor& cur = t_cursor;
        if (__builtin_expect(cur.off + sizeof(Slot32) > cur.cap, 0)) {
          cur.chunk = relay.swap(cur.chunk);
          cur.off = 0;
          cur.cap = relay.chunk_bytes();
        }
        store_slot<kClock>(*reinterpret_cast<Slot32*>(cur.chunk + cur.off), i);
        cur.off += sizeof(Slot32);
        benchmark::ClobberMemory();
      },
      [&] { relay.drain(); });
}

// ----------------------------------------------------------------- ours
void BM_Ours_Region(benchmark::State& state) {
  Session& s = session();
  run_batches(state, [&](int) {
    uint64_t t0 = dft_region_begin();
    dft_region_end(s.name, s.cat, t0, nullptr, 0);
  });
}

void BM_Ours_RecordOnly(benchmark::State& state) {
  Session& s = session();
  uint64_t t = dft_ticks();
  run_batches(state, [&](int i) { dft_complete_ticks(s.name, s.cat, t + i, t + i + 7, nullptr, 0); });
}

void BM_Ours_OpEvent(benchmark::State& state) {
  Session& s = session();
  dft_arg args[2] = {};
  args[0].type = DFT_ARG_JSON;
  args[0].v.id = s.node_args;
  args[1].type = DFT_ARG_JSON;
  args[1].v.id = s.context_args;
  uint64_t t = dft_ticks();
  run_batches(state, [&](int i) { dft_complete_ticks(s.name, s.cat, t + i, t + i + 7, args, 2); });
}

// ------------------------------------------------------- DFTracer design
std::mutex g_mu;
char g_buf[1 << 20];
size_t g_len = 0;

void BM_DFTracerDesign(benchmark::State& state) {
  run_batches(state, [](int i) {
    timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    char line[256];
    int n = snprintf(line, sizeof line,
                     "{\"id\":%d,\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%ld,\"dur\":%ld,"
                     "\"ph\":\"X\",\"args\":{\"hhash\":\"%s\"}},\n",
                     i, "function.mm.default", "dynamo", 1234, 1234, a.tv_sec * 1000000L + a.tv_nsec / 1000,
                     (b.tv_nsec - a.tv_nsec) / 1000, "f59f3036e27c70a2");
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_len + static_cast<size_t>(n) > sizeof g_buf) g_len = 0;  // stands in for a flush
    std::memcpy(g_buf + g_len, line, static_cast<size_t>(n));
    g_len += static_cast<size_t>(n);
  });
}

}  // namespace

// The store-only floors take microseconds a batch: a fixed batch count keeps
// the run short (a timed minimum would repeat them hundreds of thousands of times).
constexpr int kStoreOnlyBatches = 2000;
BENCHMARK_TEMPLATE(BM_Floor_L1, true)->Name("Floor_L1")->UseManualTime()->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_Floor_Chunked, true)->Name("Floor_Chunked")->UseManualTime()->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_Floor_L1, false)->Name("Floor_L1_StoreOnly")->UseManualTime()->Iterations(kStoreOnlyBatches)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_Floor_Chunked, false)->Name("Floor_Chunked_StoreOnly")->UseManualTime()->Iterations(kStoreOnlyBatches)->Threads(1)->Threads(2);
BENCHMARK(BM_Ours_Region)->UseManualTime()->Threads(1)->Threads(2);
BENCHMARK(BM_Ours_RecordOnly)->UseManualTime()->Threads(1)->Threads(2);
BENCHMARK(BM_Ours_OpEvent)->UseManualTime()->Threads(1)->Threads(2);
BENCHMARK(BM_DFTracerDesign)->UseManualTime()->Threads(1)->Threads(2);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  dft_finalize();
  // The trace (gigabytes after a full run) is not the point: remove it.
  if (g_session != nullptr) std::filesystem::remove_all(g_session->dir);
  return 0;
}
