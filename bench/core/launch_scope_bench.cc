// Cost of the launch-scope check (dft_launch_scope) in the torch.compile
// capture's per-node hot path, side by side in one run:
//   Marks/shipped      mark() as built: one load of the scope and one branch
//                      per node; no device source runs (scope NULL);
//   Marks/no_check     the same mark without the check (what it was before),
//                      compiled here from the same parts;
//   Marks/fake_scope   mark() with a scope whose push/pop only count: what
//                      the capture adds per node when a device source runs,
//                      CUPTI's own push/pop excluded;
//   Marks/fake_scope_ring  the same, and each push also writes the node's
//                      (name, args fragment, phase) into a fixed ring indexed
//                      by its id (a prototype of giving device events the
//                      launching event's args at conversion time: not built
//                      into the capture, docs/DESIGN.md "Device time").
// Each iteration is one graph call of kNodes nodes: begin_call, kNodes + 1
// marks, end_call (which records the op events), so the figure per node
// includes the record the node's event costs. Counter: ns_per_node.
//   build/bench/core/bench_launch_scope --benchmark_repetitions=9 --benchmark_report_aggregates_only=true
// and instructions per node (callgrind; per graph call of 64 nodes, from
// the difference of two call counts): see plain_calls below.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "call_stack.h"
#include "dftracer/dftracer.h"
#include "graph_call.h"
#include "graph_table.h"

namespace {

using namespace dftracer::dynamo;

constexpr int kNodes = 64;

// The mark before launch scopes existed: the node and the time (end_call
// reads external_id, left 0 from the marks' zeroed storage).
inline void mark_without_check(long node) {
  CallStack& cs = tl_calls;
  const int d = cs.depth;
  if (d <= 0 || d > kMaxDepth) return;
  Frame& f = cs.frames[d - 1];
  if (f.n_marks < f.cap) {
    Mark& m = f.marks[f.n_marks++];
    m.node = node;
    m.ticks = dft_ticks_inline();
  }
}

uint64_t g_pushes = 0;
uint64_t fake_push() { return ++g_pushes; }
void fake_pop() {}
const dft_launch_scope kFake = {sizeof(dft_launch_scope), &fake_push, &fake_pop};

struct Setup {
  Setup() {
    setenv("DFTRACER_LOG_LEVEL", "error", 1);
    char tmpl[] = "/tmp/dft-bench-ls-XXXXXX";
    dir = mkdtemp(tmpl);
    dft_init_opt_in((dir + "/bench").c_str(), nullptr, -1);
    GraphSpec g;
    g.event_name = "graph.forward";
    g.fragment = "\"graph\":0";
    g.phase = kInference;
    for (int i = 0; i < kNodes; ++i) {
      g.names.push_back("function.op" + std::to_string(i));
      g.fragments.push_back("\"node\":" + std::to_string(i) + ",\"module\":\"encoder.0\"");
      g.flows.push_back(-1);
    }
    slot = register_graph(g);
  }
  std::string dir;
  int slot = -1;
};

Setup& setup() {
  static Setup s;
  return s;
}

template <void (*Mark)(long)>
void run(benchmark::State& state, const dft_launch_scope* scope) {
  const int slot = setup().slot;
  dft_set_launch_scope(scope);
  for (auto _ : state) {
    begin_call(slot, 1, 0, 0);
    for (long i = 0; i <= kNodes; ++i) Mark(i);
    end_call(0);
  }
  dft_set_launch_scope(nullptr);
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kNodes,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void shipped(long i) { mark(i); }

// The ring of the prototype: written by the launching thread at each push,
// read (id checked) where CUPTI's records are converted. 2^16 entries of
// 24 bytes (1.5 MiB): a launch's entry must outlive the GPU queue.
struct RingEntry {
  uint64_t id;
  dft_id name, fragment;
};
constexpr uint64_t kRing = uint64_t(1) << 16;
RingEntry g_ring[kRing];

void with_ring(long i) {
  mark(i);
  CallStack& cs = tl_calls;
  Frame& f = cs.frames[cs.depth - 1];
  const Mark& m = f.marks[f.n_marks - 1];
  if (m.external_id != 0 && i < static_cast<long>(f.table->nodes.size())) {
    const NodeEntry& n = f.table->nodes[i];
    RingEntry& e = g_ring[m.external_id & (kRing - 1)];
    e.name = n.name;
    e.fragment = n.fragment;
    __atomic_store_n(&e.id, m.external_id, __ATOMIC_RELEASE);  // last: a reader checks it
  }
}

void BM_Marks_shipped(benchmark::State& s) { run<&shipped>(s, nullptr); }
void BM_Marks_no_check(benchmark::State& s) { run<&mark_without_check>(s, nullptr); }
void BM_Marks_fake_scope(benchmark::State& s) { run<&shipped>(s, &kFake); }
BENCHMARK(BM_Marks_shipped);
BENCHMARK(BM_Marks_no_check);
void BM_Marks_fake_scope_ring(benchmark::State& s) { run<&with_ring>(s, &kFake); }
BENCHMARK(BM_Marks_fake_scope);
BENCHMARK(BM_Marks_fake_scope_ring);

// A plain loop of `calls` graph calls of one variant, for instruction counts
// under callgrind (whose --toggle-collect names this function):
//   valgrind --tool=callgrind --toggle-collect='*plain_calls*' bench_launch_scope --plain=shipped 2000
template <void (*Mark)(long)>
__attribute__((noinline)) void plain_calls(int slot, long calls) {
  for (long c = 0; c < calls; ++c) {
    begin_call(slot, 1, 0, 0);
    for (long i = 0; i <= kNodes; ++i) Mark(i);
    end_call(0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]).rfind("--plain=", 0) == 0) {
    const std::string v = argv[1] + 8;
    const long calls = std::atol(argv[2]);
    const int slot = setup().slot;
    if (v == "fake_scope" || v == "fake_scope_ring") dft_set_launch_scope(&kFake);
    if (v == "no_check") plain_calls<&mark_without_check>(slot, calls);
    else if (v == "fake_scope_ring") plain_calls<&with_ring>(slot, calls);
    else plain_calls<&shipped>(slot, calls);
    dft_set_launch_scope(nullptr);
    dft_finalize();
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
