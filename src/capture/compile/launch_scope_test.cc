// Launch scopes around marks (call_stack.h, dft_launch_scope): a fake device
// source records what mark() pushes and pops, and the trace read back must
// carry each node's pushed id as its event's "External id" -- the id the
// device events of that node's kernels carry (CUPTI reports the top of the
// thread's stack at each launch).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "call_stack.h"
#include "dftracer/dftracer.h"
#include "dynamo_test_trace.h"
#include "graph_call.h"
#include "graph_table.h"

using namespace dftracer::dynamo;
using namespace dynamo_test;
using dftracer_test::int_arg;

namespace {

// The fake "CUDA side": a per-thread stack of ids, as CUPTI keeps, and what
// a kernel launched now would be tagged with.
std::vector<uint64_t> g_stack;
std::vector<uint64_t> g_pushed;
uint64_t g_next = 100;
int g_pops = 0;

uint64_t fake_push() {
  g_pushed.push_back(g_next);
  g_stack.push_back(g_next);
  return g_next++;
}
void fake_pop() {
  ++g_pops;
  if (!g_stack.empty()) g_stack.pop_back();
}
const dft_launch_scope kFake = {sizeof(dft_launch_scope), &fake_push, &fake_pop};

uint64_t launch_now() { return g_stack.empty() ? 0 : g_stack.back(); }

struct FakeScope {
  FakeScope() {
    g_stack.clear();
    g_pushed.clear();
    g_pops = 0;
    g_next = 100;
    EXPECT_EQ(dft_set_launch_scope(&kFake), 0);
  }
  ~FakeScope() { dft_set_launch_scope(nullptr); }
};

}  // namespace

TEST(LaunchScope, EachNodeRunsInItsOwnScopeAndItsEventCarriesTheId) {
  Session s;
  FakeScope fake;
  const int slot = register_graph(simple_graph(kInference, 3, 7));
  std::vector<uint64_t> launched;  // what a kernel launched inside node i would carry
  begin_call(slot, 1, 0, 0);
  EXPECT_EQ(launch_now(), 0u);  // between begin and the first mark: no node open
  for (int i = 0; i <= 3; ++i) {
    mark(i);
    if (i < 3) launched.push_back(launch_now());
  }
  EXPECT_EQ(launch_now(), 0u) << "the closing mark pops the last node's id";
  end_call(0);
  EXPECT_EQ(g_pushed.size(), 3u);
  EXPECT_EQ(g_pops, 3);
  EXPECT_TRUE(g_stack.empty());
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(launched[i], 0u);
    EXPECT_EQ(int_arg(ops[i].e, "External id"), static_cast<int64_t>(launched[i])) << ops[i].e.args_json;
    EXPECT_EQ(int_arg(ops[i].e, "node"), i) << ops[i].e.args_json;
  }
  EXPECT_EQ(int_arg(ops[3].e, "External id"), -1) << "the graph-call event launches nothing itself";
}

TEST(LaunchScope, ACallLeftWithoutItsClosingMarkStillPops) {
  Session s;
  FakeScope fake;
  const int slot = register_graph(simple_graph(kInference, 2, 1));
  begin_call(slot, 0, 0, 0);
  mark(0);
  mark(1);  // an exception in node 1: no closing mark
  end_call(0);
  EXPECT_EQ(g_pushed.size(), 2u);
  EXPECT_EQ(g_pops, 2);
  EXPECT_TRUE(g_stack.empty());
  s.finish();
}

TEST(LaunchScope, ScopeUnsetMidCallPopsWhatWasPushedAndPushesNoMore) {
  Session s;
  FakeScope fake;
  const int slot = register_graph(simple_graph(kInference, 3, 2));
  begin_call(slot, 0, 0, 0);
  mark(0);
  dft_set_launch_scope(nullptr);  // the device source stops
  mark(1);
  mark(2);
  mark(3);
  end_call(0);
  EXPECT_EQ(g_pushed.size(), 1u);
  EXPECT_EQ(g_pops, 1);
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(int_arg(ops[0].e, "External id"), 100);
  EXPECT_EQ(int_arg(ops[1].e, "External id"), -1);
}

TEST(LaunchScope, NoScopeNoIdAndNothingPushed) {
  Session s;
  dft_set_launch_scope(nullptr);
  g_pushed.clear();
  const int slot = register_graph(simple_graph(kInference, 2, 3));
  run_call(slot, 2, 1, 0, 0, 0);
  EXPECT_TRUE(g_pushed.empty());
  for (const auto& op : dynamo_events(s.finish(), "X")) EXPECT_EQ(int_arg(op.e, "External id"), -1) << op.e.args_json;
}

// The struct's size guards its layout: a scope whose struct_size is below the
// first version's (a caller that never set it, or one that is not a scope)
// or that lacks a function is refused, and the scope in place stays.
TEST(LaunchScope, ScopeWithoutItsSizeOrAFunctionIsRefusedAndTheCurrentOneStays) {
  FakeScope fake;
  const dft_launch_scope unsized = {0, &fake_push, &fake_pop};
  const dft_launch_scope short_size = {uint32_t(DFT_LAUNCH_SCOPE_MIN_SIZE - 1), &fake_push, &fake_pop};
  const dft_launch_scope no_pop = {sizeof(dft_launch_scope), &fake_push, nullptr};
  EXPECT_EQ(dft_set_launch_scope(&unsized), -1);
  EXPECT_EQ(dft_set_launch_scope(&short_size), -1);
  EXPECT_EQ(dft_set_launch_scope(&no_pop), -1);
  EXPECT_EQ(dft_launch_scope_inline(), &kFake);
  // A larger struct (a newer caller's, members at the end) is taken.
  struct Newer {
    dft_launch_scope v1;
    void (*later)(void);
  };
  static const Newer newer = {{sizeof(Newer), &fake_push, &fake_pop}, nullptr};
  EXPECT_EQ(dft_set_launch_scope(&newer.v1), 0);
  EXPECT_EQ(dft_launch_scope_inline(), &newer.v1);
  EXPECT_EQ(dft_set_launch_scope(nullptr), 0);
  EXPECT_EQ(dft_launch_scope_inline(), nullptr);
}
