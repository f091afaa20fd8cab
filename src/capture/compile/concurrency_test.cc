// The capture on several threads at once, end to end: forward/backward
// pairing interleaved across threads sharing one graph pair, and graphs
// registered (recompiles) while other threads run calls of existing ones.
// scripts/test.sh also runs this suite under ThreadSanitizer (smaller, via
// DFTRACER_TEST_SCALE).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "call_stack.h"
#include "dynamo_test_trace.h"
#include "graph_call.h"
#include "graph_table.h"

using namespace dftracer::dynamo;
using namespace dynamo_test;
using dftracer_test::int_arg;
using dftracer_test::scaled;

namespace {

uint64_t at_least(uint64_t n, uint64_t floor) { return n < floor ? floor : n; }

}  // namespace

TEST(Concurrent, KeyedPairingInterleavedOnSeveralThreads) {
  Session s;
  const int fw = register_graph(simple_graph(kForward, 3, 1, {0, -1, 1}, 2));
  const int bw = register_graph(simple_graph(kBackward, 2, 2, {1, 0}, 0, fw));
  constexpr int kThreads = 4;
  const int iters = static_cast<int>(at_least(scaled(2000), 20));
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([=] {
      // Two forwards in flight per thread, backwards in either order, so every
      // backward finds entries of other calls and threads above its own.
      for (int i = 0; i < iters; i += 2) {
        const uint64_t k0 = (uint64_t(w + 1) << 32) | uint64_t(i + 1);
        const uint64_t k1 = k0 + 1;
        const std::string tag = "\"worker\":" + std::to_string(w) + ",\"call\":";
        run_call(fw, 3, 1, intern_fragment(tag + std::to_string(i)), 0, k0);
        run_call(fw, 3, 1, intern_fragment(tag + std::to_string(i + 1)), 0, k1);
        const bool swap = (i / 2) % 2 == 1;
        run_call(bw, 2, 0, 0, swap ? k0 : k1, 0);
        run_call(bw, 2, 0, 0, swap ? k1 : k0, 0);
      }
      EXPECT_EQ(call_depth(), 0);
    });
  }
  for (auto& t : threads) t.join();
  const auto calls = graph_calls(s.finish());
  // Forward calls by (worker, call): the flow ids they started.
  std::map<std::pair<int64_t, int64_t>, std::set<uint64_t>> started;
  std::map<int64_t, int64_t> worker_of_tid;
  size_t n_fw = 0, n_bw = 0;
  for (const GraphCall& c : calls) {
    if (c.call.e.name != "graph.forward") continue;
    ++n_fw;
    const int64_t w = int_arg(c.call.e, "worker");
    started[{w, int_arg(c.call.e, "call")}] = c.starts;
    worker_of_tid[c.call.e.tid] = w;
    EXPECT_EQ(c.starts.size(), 2u);
  }
  for (const GraphCall& c : calls) {
    if (c.call.e.name != "graph.backward") continue;
    ++n_bw;
    const int64_t w = int_arg(c.call.e, "worker");
    EXPECT_EQ(w, worker_of_tid[c.call.e.tid]) << "a backward took another thread's forward";
    const auto it = started.find({w, int_arg(c.call.e, "call")});
    ASSERT_NE(it, started.end()) << c.call.e.args_json;
    EXPECT_EQ(c.finishes, it->second) << c.call.e.args_json;
    for (const TracedEvent& op : c.ops) EXPECT_EQ(int_arg(op.e, "call"), int_arg(c.call.e, "call"));
    started.erase(it);  // each forward call is backpropagated once
  }
  EXPECT_EQ(n_fw, size_t(kThreads) * iters);
  EXPECT_EQ(n_bw, n_fw);
  EXPECT_TRUE(started.empty());
  EXPECT_EQ(table_at(fw)->pending.size(), 0u);
}

TEST(Concurrent, GraphsRegisteredWhileOtherThreadsRunCalls) {
  Session s;
  // Graph g has g % 5 + 1 nodes, so a call's op count says which table it used.
  auto spec = [](int g) { return simple_graph(kInference, g % 5 + 1, g); };
  const int first = register_graph(spec(0));
  ASSERT_EQ(first, 0);
  constexpr int kThreads = 3;
  const int n_new = static_cast<int>(at_least(scaled(400), 20));
  // Slots 0 .. published-1 are registered and announced; the next ones are
  // announced kBatch at a time, after their registration.
  constexpr int kBatch = 8;
  std::atomic<int> published{1};
  std::atomic<bool> done{false};
  std::atomic<int> running{0};
  const int max_calls = static_cast<int>(at_least(scaled(20000), 200));  // bounds the trace
  std::vector<std::vector<int>> ran(kThreads);  // calls per graph, per thread
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      std::vector<int>& mine = ran[w];
      mine.assign(n_new + 1, 0);
      unsigned r = 12345u + w;
      int calls = 0;
      while (true) {
        const bool last_round = done.load(std::memory_order_acquire);
        const int n = published.load(std::memory_order_acquire);
        r = r * 1103515245u + 12345u;
        // The old graph, any announced one, or one of the next kBatch, seen
        // only through the table's own publication (table_at).
        const unsigned pick = (r >> 8) % 4;
        const int g = pick == 0   ? 0
                      : pick == 3 ? n + static_cast<int>((r >> 16) % kBatch)
                                  : static_cast<int>((r >> 8) % n);
        if (g > n_new || table_at(g) == nullptr) continue;
        run_call(g, g % 5 + 1, 0, 0, 0, 0);
        if (++mine[g] == 1 && g == 0 && n == 1) running.fetch_add(1);
        if (last_round || ++calls == max_calls) break;
      }
    });
  }
  // Registration starts once every thread is running calls of graph 0.
  while (running.load() < kThreads) std::this_thread::yield();
  for (int g = 1; g <= n_new; ++g) {
    ASSERT_EQ(register_graph(spec(g)), g);
    if (g % kBatch == 0) {
      published.store(g + 1, std::memory_order_release);
      std::this_thread::yield();
    }
  }
  done.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();

  std::vector<int> expected(n_new + 1, 0);
  for (const auto& mine : ran)
    for (int g = 0; g <= n_new; ++g) expected[g] += mine[g];
  std::vector<int> seen(n_new + 1, 0);
  for (const GraphCall& c : graph_calls(s.finish())) {
    const int64_t g = int_arg(c.call.e, "graph");
    ASSERT_GE(g, 0);
    ASSERT_LE(g, n_new);
    ++seen[g];
    ASSERT_EQ(c.ops.size(), size_t(g % 5 + 1)) << "graph " << g;
    for (size_t k = 0; k < c.ops.size(); ++k) {
      EXPECT_EQ(c.ops[k].e.name, "function.op" + std::to_string(k));
      EXPECT_EQ(int_arg(c.ops[k].e, "graph"), -1);
    }
  }
  EXPECT_EQ(seen, expected);
  EXPECT_GT(expected[0], 0);
}
