// Forward/backward pairing: the pending calls alone, then end to end through
// a trace file -- which forward call's tags and flow ids each backward call
// carries, with keys in any order, without keys (LIFO), past the cap, and
// when a forward's backward never runs.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "call_stack.h"
#include "dynamo_test_trace.h"
#include "graph_call.h"
#include "graph_table.h"
#include "pending_calls.h"

using namespace dftracer::dynamo;
using namespace dynamo_test;
using dftracer_test::int_arg;

// ------------------------------------------------------------ PendingCalls

namespace {

uint64_t take_base(PendingCalls& p, uint64_t key) {
  PendingCall c{};
  return p.take(key, &c) ? c.flow_base : 0;
}

}  // namespace

TEST(Pairing, KeyFindsItsCallInAnyOrder) {
  PendingCalls p;
  p.push({100, 11, 1});
  p.push({200, 22, 2});
  p.push({300, 33, 3});
  EXPECT_EQ(take_base(p, 22), 200u);
  EXPECT_EQ(take_base(p, 11), 100u);
  EXPECT_EQ(take_base(p, 33), 300u);
  EXPECT_EQ(take_base(p, 33), 0u);  // empty
  EXPECT_EQ(p.size(), 0u);
}

TEST(Pairing, WithoutKeyOrWithAnUnknownOneTheNewestGoesFirst) {
  PendingCalls p;
  p.push({100, 0, 1});
  p.push({200, 0, 2});
  p.push({300, 0, 3});
  EXPECT_EQ(take_base(p, 0), 300u);
  EXPECT_EQ(take_base(p, 999), 200u);
  EXPECT_EQ(take_base(p, 0), 100u);
}

TEST(Pairing, SameKeyTwiceTakesTheNewerCall) {
  // An allocator may hand the same address to a later forward's activation.
  PendingCalls p;
  p.push({100, 7, 1});
  p.push({200, 7, 2});
  EXPECT_EQ(take_base(p, 7), 200u);
  EXPECT_EQ(take_base(p, 7), 100u);
}

TEST(Pairing, CapEvictsTheOldest) {
  PendingCalls p;
  constexpr uint64_t kExtra = 5;
  for (uint64_t i = 1; i <= kMaxPending + kExtra; ++i) p.push({i * 10, i, 0});
  EXPECT_EQ(p.size(), kMaxPending);
  // Calls 1..kExtra are gone: their keys fall back to the newest call.
  EXPECT_EQ(take_base(p, 1), (kMaxPending + kExtra) * 10);
  EXPECT_EQ(take_base(p, kExtra + 1), (kExtra + 1) * 10);  // the oldest left
  EXPECT_EQ(p.size(), kMaxPending - 2);
}

TEST(Pairing, ForwardWhoseBackwardNeverRunsStaysAtTheBottom) {
  PendingCalls p;
  p.push({100, 0, 0});  // its backward never runs
  for (uint64_t i = 2; i < 10; ++i) {
    p.push({i * 100, 0, 0});
    EXPECT_EQ(take_base(p, 0), i * 100);
  }
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(take_base(p, 0), 100u);
}

// --------------------------------------------------------------- end to end

namespace {

// A graph call and the "call" arg it carries: which forward call's tags.
struct Call {
  std::string name;
  int64_t tag;
  std::set<uint64_t> starts, finishes;
};

std::vector<Call> calls_in(const std::vector<TracedEvent>& all) {
  std::vector<Call> out;
  for (const GraphCall& g : graph_calls(all))
    out.push_back(Call{g.call.e.name, int_arg(g.call.e, "call"), g.starts, g.finishes});
  return out;
}

// A forward graph of three nodes starting two flow groups (nodes 0 and 2)
// and its backward, whose two nodes finish them.
struct GraphPair {
  int fw, bw;
  GraphPair() {
    fw = register_graph(simple_graph(kForward, 3, 1, {0, -1, 1}, 2));
    bw = register_graph(simple_graph(kBackward, 2, 2, {1, 0}, 0, fw));
  }
  // Forward call number `n`: tags "call":n, leaves `key` for its backward.
  void forward(int n, uint64_t key) const {
    run_call(fw, 3, 1, intern_fragment("\"call\":" + std::to_string(n)), 0, key);
  }
  void backward(uint64_t key) const { run_call(bw, 2, 0, 0, key, 0); }
};

// One step of a scenario: forward call `n` leaving `key`, or (n == 0) a
// backward call looking for `key`.
struct Step {
  int n;
  uint64_t key;
};
constexpr int kBackwardStep = 0;

// Runs the steps on one graph pair in a fresh session; returns the calls.
std::vector<Call> run_steps(const std::vector<Step>& steps) {
  Session s;
  GraphPair g;
  for (const Step& st : steps) {
    if (st.n == kBackwardStep) g.backward(st.key);
    else g.forward(st.n, st.key);
  }
  std::vector<Call> c = calls_in(s.finish());
  EXPECT_EQ(c.size(), steps.size());
  c.resize(steps.size());
  return c;
}

// Checks that `bw` is the backward of forward call `fw`: same tags, and it
// finishes exactly the flows that call started.
void expect_paired(const Call& fw, const Call& bw) {
  EXPECT_EQ(bw.name, "graph.backward");
  EXPECT_EQ(bw.tag, fw.tag);
  EXPECT_EQ(fw.starts.size(), 2u);
  EXPECT_EQ(bw.finishes, fw.starts) << "backward carrying call " << bw.tag;
}

}  // namespace

TEST(Pairing, KeyedBackwardsAfterOtherForwardsFindTheirOwnCall) {
  const auto c = run_steps({{1, 0xA1}, {2, 0xA2}, {3, 0xA3},
                            {kBackwardStep, 0xA2}, {kBackwardStep, 0xA1}, {kBackwardStep, 0xA3}});
  expect_paired(c[1], c[3]);
  expect_paired(c[0], c[4]);
  expect_paired(c[2], c[5]);
}

TEST(Pairing, KeyedBackwardBeforeTheNextForward) {
  const auto c = run_steps({{1, 0xB1}, {kBackwardStep, 0xB1}, {2, 0xB2}, {kBackwardStep, 0xB2}});
  expect_paired(c[0], c[1]);
  expect_paired(c[2], c[3]);
  EXPECT_TRUE(c[0].finishes.empty());
  EXPECT_NE(c[0].starts, c[2].starts);  // each forward call has its own flow ids
}

TEST(Pairing, WithoutKeysBackwardsRunLastForwardFirst) {
  const auto c = run_steps({{1, 0}, {2, 0}, {kBackwardStep, 0}, {kBackwardStep, 0}});
  expect_paired(c[1], c[2]);
  expect_paired(c[0], c[3]);
}

TEST(Pairing, ForwardWithoutBackwardDoesNotShiftTheOthers) {
  // Call 1: e.g. an evaluation step under grad mode, never backpropagated.
  const auto c = run_steps({{1, 0}, {2, 0}, {kBackwardStep, 0}, {3, 0}, {kBackwardStep, 0}});
  expect_paired(c[1], c[2]);
  expect_paired(c[3], c[4]);
}

TEST(Pairing, BackwardWithNothingPendingHasNoFlowsOrTags) {
  const auto c = run_steps({{kBackwardStep, 0xC1}});
  EXPECT_EQ(c[0].name, "graph.backward");
  EXPECT_EQ(c[0].tag, -1);
  EXPECT_TRUE(c[0].finishes.empty());
}

TEST(Pairing, PastTheCapTheOldestForwardIsForgotten) {
  const int n = static_cast<int>(kMaxPending) + 1;
  std::vector<Step> steps;
  for (int i = 1; i <= n; ++i) steps.push_back({i, 0x1000u + i});
  steps.push_back({kBackwardStep, 0x1000u + 1});  // evicted: falls back to the newest
  steps.push_back({kBackwardStep, 0x1000u + 2});  // still there
  const auto c = run_steps(steps);
  expect_paired(c[n - 1], c[n]);
  expect_paired(c[1], c[n + 1]);
}

TEST(Pairing, BackwardFindsTheCallsOfItsForwardsSizeVariants) {
  // A size variant of the forward (its table at other dynamic sizes) leaves
  // its calls where the backward, paired with the base forward, looks.
  Session s;
  GraphPair g;
  const int variant = register_graph(simple_graph(kForward, 3, 1, {0, -1, 1}, 2, g.fw));
  run_call(variant, 3, 1, intern_fragment("\"call\":1"), 0, 0xD1);
  g.forward(2, 0xD2);
  g.backward(0xD1);
  g.backward(0xD2);
  const auto c = calls_in(s.finish());
  ASSERT_EQ(c.size(), 4u);
  expect_paired(c[0], c[2]);
  expect_paired(c[1], c[3]);
}
