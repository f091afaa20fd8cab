// Marks to events, end to end: graphs registered, calls run through
// begin_call / mark / end_call, the trace file read back. Checks what each
// op event and graph-call event holds (names, args fragments, times taken
// from the marks), nesting, and the calls that must record nothing.
#include <gtest/gtest.h>

#include <string>

#include "call_context.h"
#include "call_stack.h"
#include "dftracer/dftracer.h"
#include "dynamo_test_trace.h"
#include "graph_call.h"
#include "graph_table.h"

using namespace dftracer::dynamo;
using namespace dynamo_test;
using dftracer_test::int_arg;
using dftracer_test::str_arg;

namespace {

// Something for a node to do between two marks, so its slice has a length.
void work() {
  volatile uint64_t x = 0;
  for (int i = 0; i < 20000; ++i) x = x + i;
}

bool inside(const TracedEvent& child, const TracedEvent& parent) {
  return child.e.tid == parent.e.tid && child.ts_ns >= parent.ts_ns && child.end_ns() <= parent.end_ns();
}

}  // namespace

TEST(Marks, OpEventsNamesArgsAndTimesFromMarks) {
  Session s;
  const int slot = register_graph(simple_graph(kInference, 3, 7));
  const dft_id tags = intern_fragment("\"step\":4");
  begin_call(slot, 1, tags, 0);
  for (int i = 0; i <= 3; ++i) {
    mark(i);
    if (i < 3) work();
  }
  end_call(0);
  const auto all = s.finish();
  const auto ops = dynamo_events(all, "X");
  ASSERT_EQ(ops.size(), 4u);  // three op events, then the graph-call event
  for (int i = 0; i < 3; ++i) {
    const TracedEvent& op = ops[i];
    EXPECT_EQ(op.e.name, "function.op" + std::to_string(i));
    EXPECT_EQ(int_arg(op.e, "node"), i) << op.e.args_json;
    EXPECT_EQ(int_arg(op.e, "grad_enabled"), 1) << op.e.args_json;
    EXPECT_EQ(int_arg(op.e, "step"), 4) << op.e.args_json;
    EXPECT_GT(op.dur_ns, 0);
    // Node i runs from mark i to mark i+1: the slices tile the call.
    if (i > 0) EXPECT_EQ(op.ts_ns, ops[i - 1].end_ns());
  }
  const TracedEvent& call = ops[3];
  EXPECT_EQ(call.e.name, "graph.inference");
  EXPECT_EQ(int_arg(call.e, "graph"), 7) << call.e.args_json;
  EXPECT_EQ(int_arg(call.e, "grad_enabled"), 1);
  EXPECT_EQ(int_arg(call.e, "step"), 4);
  EXPECT_EQ(int_arg(call.e, "node"), -1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(inside(ops[i], call)) << i;
  // The closing mark (3 == number of nodes) ends node 2 and records nothing.
  EXPECT_EQ(named(ops, "function.op3").size(), 0u);
  EXPECT_EQ(call_depth(), 0);
}

TEST(Marks, NodeWithoutFragmentAndCallWithoutTags) {
  Session s;
  GraphSpec g = simple_graph(kInference, 2, 1);
  g.fragments[1] = "";
  g.fragment = "";
  const int slot = register_graph(g);
  run_call(slot, 2, 0, 0, 0, 0);
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(int_arg(ops[0].e, "node"), 0);
  for (int i : {1, 2}) {  // the node without a fragment, and the graph call
    EXPECT_EQ(int_arg(ops[i].e, "grad_enabled"), 0) << ops[i].e.args_json;
    EXPECT_EQ(int_arg(ops[i].e, "node"), -1) << ops[i].e.args_json;
    EXPECT_EQ(int_arg(ops[i].e, "graph"), -1) << ops[i].e.args_json;
  }
}

TEST(Marks, EveryCallRecordsItsOwnEvents) {
  Session s;
  const int slot = register_graph(simple_graph(kInference, 4, 1));
  constexpr int kCalls = 50;
  for (int c = 0; c < kCalls; ++c) run_call(slot, 4, c % 2, 0, 0, 0);
  const auto ops = dynamo_events(s.finish(), "X");
  EXPECT_EQ(named(ops, "graph.inference").size(), size_t{kCalls});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(named(ops, "function.op" + std::to_string(i)).size(), size_t{kCalls});
}

TEST(Marks, NestedCallIsInsideTheNodeThatRanIt) {
  Session s;
  const int outer = register_graph(simple_graph(kInference, 2, 1));
  const int inner = register_graph(inner_graph(2));
  begin_call(outer, 0, 0, 0);
  mark(0);
  EXPECT_EQ(call_depth(), 1);
  run_call(inner, 1, 0, 0, 0, 0);  // an op of the outer graph re-enters compiled code
  EXPECT_EQ(call_depth(), 1);
  mark(1);
  work();
  mark(2);
  end_call(0);
  EXPECT_EQ(call_depth(), 0);
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 5u);
  const auto in_call = named(ops, "graph.inner");
  const auto in_op = named(ops, "function.inner_op");
  const auto out_op0 = named(ops, "function.op0");
  const auto out_call = named(ops, "graph.inference");
  ASSERT_EQ(in_call.size(), 1u);
  ASSERT_EQ(in_op.size(), 1u);
  ASSERT_EQ(out_op0.size(), 1u);
  ASSERT_EQ(out_call.size(), 1u);
  EXPECT_TRUE(inside(in_op[0], in_call[0]));
  EXPECT_TRUE(inside(in_call[0], out_op0[0]));
  EXPECT_TRUE(inside(out_op0[0], out_call[0]));
  EXPECT_EQ(int_arg(in_op[0].e, "graph"), -1);  // the inner op's args are its own
  EXPECT_EQ(int_arg(in_call[0].e, "graph"), 2);
}

TEST(Marks, BeyondMaxDepthRecordsNothingAndStaysBalanced) {
  Session s;
  const int slot = register_graph(simple_graph(kInference, 1, 1));
  for (int d = 0; d < kMaxDepth + 2; ++d) {
    begin_call(slot, 0, 0, 0);
    mark(0);
  }
  EXPECT_EQ(call_depth(), kMaxDepth + 2);
  for (int d = 0; d < kMaxDepth + 2; ++d) {
    mark(1);
    end_call(0);
  }
  EXPECT_EQ(call_depth(), 0);
  end_call(0);  // one end too many: ignored
  EXPECT_EQ(call_depth(), 0);
  run_call(slot, 1, 0, 0, 0, 0);  // and the thread records normally again
  const auto ops = dynamo_events(s.finish(), "X");
  EXPECT_EQ(named(ops, "graph.inference").size(), size_t{kMaxDepth} + 1);
  EXPECT_EQ(named(ops, "function.op0").size(), size_t{kMaxDepth} + 1);
}

TEST(Marks, UnknownSlotRecordsNothingAndLeavesTheOuterCallIntact) {
  Session s;
  const int slot = register_graph(simple_graph(kInference, 2, 1));
  begin_call(slot, 0, 0, 0);
  mark(0);
  for (long bad : {-1L, 12345L, static_cast<long>(kMaxGraphs), 1L << 40}) {
    begin_call(bad, 0, 0, 0);
    mark(0);  // goes nowhere: not into the outer call's marks
    mark(1);
    end_call(0);
  }
  mark(1);
  mark(2);
  end_call(0);
  EXPECT_EQ(call_depth(), 0);
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].e.name, "function.op0");
  EXPECT_EQ(ops[1].e.name, "function.op1");
  EXPECT_EQ(ops[2].e.name, "graph.inference");
}

TEST(Marks, MarksOutsideACallAndOutOfRangeNodesAreIgnored) {
  Session s;
  const int slot = register_graph(simple_graph(kInference, 2, 1));
  mark(0);  // no call open
  end_call(0);
  EXPECT_EQ(call_depth(), 0);
  begin_call(slot, 0, 0, 0);
  mark(0);
  mark(99);  // not a node: closes node 0, opens nothing
  end_call(0);
  begin_call(slot, 0, 0, 0);
  mark(-5);
  mark(1);
  mark(2);
  end_call(0);
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].e.name, "function.op0");
  EXPECT_EQ(ops[1].e.name, "graph.inference");
  EXPECT_EQ(ops[2].e.name, "function.op1");
  EXPECT_EQ(ops[3].e.name, "graph.inference");
  // Node 0 ran until the next mark, whatever its index.
  EXPECT_LE(ops[0].end_ns(), ops[1].end_ns());
}

TEST(Marks, MoreMarksThanNodesAreDroppedNotWrittenPastTheScratch) {
  Session s;
  const int slot = register_graph(simple_graph(kInference, 2, 1));
  begin_call(slot, 0, 0, 0);
  for (int r = 0; r < 100; ++r) mark(r % 2);  // capacity is nodes + 1 = 3 marks
  end_call(0);
  const auto ops = dynamo_events(s.finish(), "X");
  EXPECT_EQ(named(ops, "function.op0").size(), 2u);
  EXPECT_EQ(named(ops, "function.op1").size(), 1u);
  EXPECT_EQ(named(ops, "graph.inference").size(), 1u);
}

TEST(Marks, CompiledRegionEventCarriesFragmentAndContext) {
  Session s;
  init_event_ids();
  const dft_id name = dft_intern_cstr("compiled.step");
  const dft_id frag = intern_fragment("\"fn\":\"train_step\"");
  const dft_id tags = intern_fragment("\"epoch\":2");
  const uint64_t t0 = dft_ticks();
  work();
  record_region(name, t0, frag, 1, tags);
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].e.name, "compiled.step");
  EXPECT_EQ(str_arg(ops[0].e, "fn"), "train_step");
  EXPECT_EQ(int_arg(ops[0].e, "grad_enabled"), 1);
  EXPECT_EQ(int_arg(ops[0].e, "epoch"), 2);
  EXPECT_GT(ops[0].dur_ns, 0);
}

TEST(Marks, CallsWhileTracingIsOffRecordNothingAndDoNotCrash) {
  const int slot = register_graph(simple_graph(kInference, 2, 1));
  run_call(slot, 2, 0, 0, 0, 0);  // before any dft_init
  EXPECT_EQ(call_depth(), 0);
  Session s;
  run_call(slot, 2, 0, 0, 0, 0);
  const auto ops = dynamo_events(s.finish(), "X");
  EXPECT_EQ(named(ops, "graph.inference").size(), 1u);
  run_call(slot, 2, 0, 0, 0, 0);  // after finalize
  EXPECT_EQ(call_depth(), 0);
}

TEST(Marks, BiggerGraphLaterOnTheSameThreadGetsAllItsMarks) {
  Session s;
  const int small = register_graph(simple_graph(kInference, 2, 1));
  const int big = register_graph(simple_graph(kInference, 500, 2));
  run_call(small, 2, 0, 0, 0, 0);
  run_call(big, 500, 0, 0, 0, 0);  // the thread's mark storage grows here
  run_call(small, 2, 0, 0, 0, 0);
  const auto calls = graph_calls(s.finish());
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].ops.size(), 2u);
  ASSERT_EQ(calls[1].ops.size(), 500u);
  EXPECT_EQ(calls[1].ops[499].e.name, "function.op499");
  EXPECT_EQ(calls[2].ops.size(), 2u);
}
