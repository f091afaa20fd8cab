// Graph registration: slots, the errors a malformed graph gets, and the slot
// limit. (Registrations racing with running calls: concurrency_test.cc.)
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "dynamo_test_trace.h"
#include "graph_call.h"
#include "graph_table.h"

using namespace dftracer::dynamo;
using namespace dynamo_test;

namespace {

// The message of the exception `f` throws as E, or "<no exception>".
template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

// A dead graph's slot is freed and reused, so recompiles
// and torch._dynamo.reset() never use up the registry; a freed slot records
// nothing until a new graph takes it, and then records that graph's ops.
TEST(Registry, UnregisteredSlotsAreReused) {
  Session s;
  const GraphSpec g = simple_graph(kInference, 1, 1);
  for (size_t i = 0; i < kMaxGraphs; ++i) ASSERT_EQ(register_graph(g), static_cast<int>(i));
  unregister_graph(7);
  unregister_graph(7);   // twice: ignored
  unregister_graph(-1);  // unknown: ignored
  EXPECT_EQ(registered_graphs(), kMaxGraphs - 1);
  run_call(7, 1, 0, 0, 0, 0);  // a freed slot: nothing recorded
  GraphSpec other = simple_graph(kInference, 1, 1);
  other.names[0] = "function.reused";
  EXPECT_EQ(register_graph(other), 7);
  EXPECT_EQ(registered_graphs(), kMaxGraphs);
  run_call(7, 1, 0, 0, 0, 0);
  const auto ops = dynamo_events(s.finish(), "X");
  EXPECT_EQ(named(ops, "function.reused").size(), 1u);
  EXPECT_EQ(named(ops, "function.op0").size(), 0u);
}

}  // namespace

TEST(Registry, SlotsAreHandedOutInOrder) {
  EXPECT_EQ(register_graph(simple_graph(kInference, 1, 1)), 0);
  EXPECT_EQ(register_graph(simple_graph(kForward, 2, 2)), 1);
  EXPECT_EQ(registered_graphs(), 2u);
  EXPECT_NE(table_at(1), nullptr);
  EXPECT_EQ(table_at(1)->nodes.size(), 2u);
  EXPECT_EQ(table_at(2), nullptr);
  EXPECT_EQ(table_at(-1), nullptr);
}

TEST(Registry, MalformedGraphsGetAnErrorNamingTheProblem) {
  GraphSpec g = simple_graph(kInference, 2, 1);
  g.flows.pop_back();
  EXPECT_EQ(error_of<std::invalid_argument>([&] { register_graph(g); }),
            "dynamo_register_graph: names, fragments and flows differ in length");
  g = simple_graph(kInference, 2, 1);
  g.phase = 3;
  EXPECT_EQ(error_of<std::invalid_argument>([&] { register_graph(g); }),
            "dynamo_register_graph: phase must be 0 (forward), 1 (backward) or 2 (inference)");
  g = simple_graph(kInference, 2, 1);
  g.fragments[1] = "\"node\":";
  EXPECT_EQ(error_of<std::invalid_argument>([&] { register_graph(g); }),
            "not a JSON-members fragment: \"node\":");
  g = simple_graph(kInference, 2, 1);
  g.fragment = "{\"graph\":1}";  // an object, not its members
  EXPECT_EQ(error_of<std::invalid_argument>([&] { register_graph(g); }),
            "not a JSON-members fragment: {\"graph\":1}");
  EXPECT_EQ(registered_graphs(), 0u);  // none of them took a slot
}

TEST(Registry, LongBadFragmentIsCutInTheMessage) {
  const std::string bad(1000, 'x');
  const std::string msg = error_of<std::invalid_argument>([&] { intern_fragment(bad); });
  EXPECT_EQ(msg, "not a JSON-members fragment: " + std::string(200, 'x'));
  EXPECT_EQ(intern_fragment(""), 0u);
}

TEST(Registry, SlotLimitGivesAClearErrorAndKeepsEarlierGraphsWorking) {
  Session s;
  const GraphSpec g = simple_graph(kInference, 1, 1);
  for (size_t i = 0; i < kMaxGraphs; ++i) ASSERT_EQ(register_graph(g), static_cast<int>(i));
  EXPECT_EQ(error_of<std::length_error>([&] { register_graph(g); }),
            "dynamo_register_graph: too many graphs (limit 65536 live per process)");
  EXPECT_EQ(registered_graphs(), kMaxGraphs);
  run_call(static_cast<int>(kMaxGraphs) - 1, 1, 0, 0, 0, 0);
  run_call(static_cast<int>(kMaxGraphs), 1, 0, 0, 0, 0);  // the refused one: an unknown slot
  const auto ops = dynamo_events(s.finish(), "X");
  EXPECT_EQ(named(ops, "graph.inference").size(), 1u);
  EXPECT_EQ(named(ops, "function.op0").size(), 1u);
}
