// Memory capture inside graph calls: add_memory() (what the LibTorch
// observer's allocation report calls through its memory probe) counts bytes
// on the node open on the thread, and end_call writes them as that node's
// memory args. Real trace files read back.
#include <gtest/gtest.h>

#include <string>

#include "call_stack.h"
#include "dftracer/dftracer.h"
#include "dynamo_test_trace.h"
#include "graph_call.h"
#include "graph_table.h"

using namespace dftracer::dynamo;
using namespace dynamo_test;
using dftracer_test::int_arg;

namespace {

std::string name_of(dft_id id) {
  size_t len = 0;
  const char* s = dft_string(id, &len);
  return s == nullptr ? std::string() : std::string(s, len);
}

}  // namespace

TEST(Memory, BytesCountOnTheOpenNodeAndNameIt) {
  Session s;
  const int slot = register_graph(simple_graph(kForward, 3, 1));
  EXPECT_EQ(add_memory(64, 1), 0u);  // no call open
  begin_call(slot, 1, 0, 0);
  EXPECT_EQ(add_memory(64, 1), 0u);  // before the first mark: no node open
  mark(0);
  EXPECT_EQ(name_of(add_memory(1000, 1)), "function.op0");
  EXPECT_EQ(name_of(add_memory(24, 1)), "function.op0");
  EXPECT_EQ(name_of(add_memory(-512, 1)), "function.op0");
  EXPECT_EQ(name_of(add_memory(4096, 0)), "function.op0");  // a device's
  EXPECT_EQ(name_of(add_memory(-4096, 0)), "function.op0");
  mark(1);  // node 1 reports nothing
  mark(2);
  EXPECT_EQ(name_of(add_memory(-1024, 1)), "function.op2");
  mark(3);  // the closing mark: no node open
  EXPECT_EQ(add_memory(8, 1), 0u);
  end_call(0);
  EXPECT_EQ(add_memory(8, 1), 0u);
  const auto ops = dynamo_events(s.finish(), "X");
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(int_arg(ops[0].e, "alloc_bytes"), 1024) << ops[0].e.args_json;
  EXPECT_EQ(int_arg(ops[0].e, "free_bytes"), 512);
  EXPECT_EQ(int_arg(ops[0].e, "dev_alloc_bytes"), 4096);
  EXPECT_EQ(int_arg(ops[0].e, "dev_free_bytes"), 4096);
  EXPECT_EQ(int_arg(ops[0].e, "node"), 0);  // the node's own args stay
  for (const char* key : {"alloc_bytes", "free_bytes", "dev_alloc_bytes", "dev_free_bytes"})
    EXPECT_EQ(int_arg(ops[1].e, key), -1) << key << " " << ops[1].e.args_json;
  EXPECT_EQ(int_arg(ops[2].e, "free_bytes"), 1024) << ops[2].e.args_json;
  EXPECT_EQ(int_arg(ops[2].e, "alloc_bytes"), -1);
  EXPECT_EQ(ops[3].e.name, "graph.forward");  // the graph call carries none
  EXPECT_EQ(int_arg(ops[3].e, "alloc_bytes"), -1) << ops[3].e.args_json;
}

TEST(Memory, EachCallCountsItsOwnAndANestedCallItsOwn) {
  Session s;
  const int outer = register_graph(simple_graph(kInference, 2, 1));
  const int inner = register_graph(inner_graph(2));
  for (int c = 0; c < 2; ++c) {
    begin_call(outer, 0, 0, 0);
    mark(0);
    add_memory(100, 1);
    begin_call(inner, 0, 0, 0);  // node 0 re-enters compiled code
    mark(0);
    EXPECT_EQ(name_of(add_memory(7, 1)), "function.inner_op");
    mark(1);
    end_call(0);
    EXPECT_EQ(name_of(add_memory(10, 1)), "function.op0");
    mark(1);
    add_memory(3, 1);
    mark(2);
    end_call(0);
  }
  const auto ops = dynamo_events(s.finish(), "X");
  const auto op0 = named(ops, "function.op0"), op1 = named(ops, "function.op1"),
             in = named(ops, "function.inner_op");
  ASSERT_EQ(op0.size(), 2u);
  ASSERT_EQ(op1.size(), 2u);
  ASSERT_EQ(in.size(), 2u);
  for (int c = 0; c < 2; ++c) {  // the second call starts from zero
    EXPECT_EQ(int_arg(op0[c].e, "alloc_bytes"), 110) << op0[c].e.args_json;
    EXPECT_EQ(int_arg(op1[c].e, "alloc_bytes"), 3);
    EXPECT_EQ(int_arg(in[c].e, "alloc_bytes"), 7);
  }
}
