// Shared by the dynamo capture suites: a tracing session into a fresh
// directory, read back with tests/support's reader (simdjson, never the code
// under test), plus the exact integer times and flow ids of each event,
// which tests/support's Event does not keep.
#ifndef DFTRACER_CAPTURE_DYNAMO_DYNAMO_TEST_TRACE_H_
#define DFTRACER_CAPTURE_DYNAMO_DYNAMO_TEST_TRACE_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "graph_table.h"
#include "trace_file.h"

namespace dynamo_test {

struct TracedEvent {
  dftracer_test::Event e;
  int64_t ts_ns = 0;   // "ts" (microseconds with three decimals) as integer ns
  int64_t dur_ns = 0;  // "dur" likewise; 0 when absent
  uint64_t flow_id = 0;  // "id" of a flow event ("ph":"s" / "f")
  int64_t end_ns() const { return ts_ns + dur_ns; }
};

// dft_init into a fresh temp dir (uncompressed); finish() finalizes and
// returns every event of the file.
class Session {
 public:
  Session();
  std::vector<TracedEvent> finish();

 private:
  std::string dir_;
  dftracer_test::ScopedEnv env_;
  std::string path_;
};

// Events of category "dynamo" with phase `ph` ("X", "s", "f").
std::vector<TracedEvent> dynamo_events(const std::vector<TracedEvent>& all, const std::string& ph);
// Those named `name`.
std::vector<TracedEvent> named(const std::vector<TracedEvent>& evs, const std::string& name);

// One graph call as the file tells it: its graph-call event, its op events
// and the flow ids they started ("s") or finished ("f"). end_call writes a
// call's op events and flows, then its graph-call event, all on the calling
// thread, whose events the file keeps in order; nested calls are not
// separated (tests using this run none).
struct GraphCall {
  TracedEvent call;
  std::vector<TracedEvent> ops;
  std::set<uint64_t> starts, finishes;
};
std::vector<GraphCall> graph_calls(const std::vector<TracedEvent>& all);

// A graph of `n` op nodes named "function.op<i>", node fragment `"node":<i>`,
// graph-call event "graph.<phase name>", fragment `"graph":<graph_id>`.
// `flows`: per node, or empty for none.
dftracer::dynamo::GraphSpec simple_graph(int phase, int n, int graph_id, std::vector<int> flows = {},
                                          uint32_t n_flow_groups = 0, int pair_slot = -1);

// A graph of one op node "function.inner_op", graph-call event "graph.inner":
// what a node of another graph calls in the nesting tests.
dftracer::dynamo::GraphSpec inner_graph(int graph_id);

// Runs one call of `slot` through every mark: begin, mark 0..n, end.
void run_call(int slot, int n, int grad, uint32_t tags, uint64_t begin_key, uint64_t end_key);

}  // namespace dynamo_test

#endif  // DFTRACER_CAPTURE_DYNAMO_DYNAMO_TEST_TRACE_H_
