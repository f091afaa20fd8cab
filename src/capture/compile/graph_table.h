// Graph tables of the torch.compile capture: what is static about each
// instrumented graph, registered once per graph at compile time.
//
// Everything an op event needs besides its two timestamps lives here: the
// interned event name (`function.<op overload>`) and an interned JSON-members
// fragment with the node's static args (graph, node, module, shapes, flops,
// ...). Nothing is formatted or allocated per node at run time.
//
// The registry has kMaxGraphs slots: a registration takes a lock, a reader
// does one acquire load, so the hot path never sees a table being built or a
// vector being reallocated. A table is freed, and its slot reused, only by
// unregister_graph(), which the Python side calls when the graph's compiled
// callable is gone (a recompile evicted it, torch._dynamo.reset(), a dropped
// model): no call of it can be running then, and a backward graph keeps its
// forward graph registered (it takes the forward's pending calls).
#ifndef DFTRACER_CAPTURE_DYNAMO_GRAPH_TABLE_H_
#define DFTRACER_CAPTURE_DYNAMO_GRAPH_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dftracer/dftracer.h"
#include "pending_calls.h"

namespace dftracer::dynamo {

enum Phase : int { kForward = 0, kBackward = 1, kInference = 2 };

// Most graphs registered at once (dead graphs' slots are reused).
constexpr size_t kMaxGraphs = size_t{1} << 16;

struct NodeEntry {
  dft_id name;      // interned "function.<op>"
  dft_id fragment;  // interned static args fragment, 0 none
  int32_t flow;     // forward: flow group started here; backward: group finished here; -1 none
};

struct GraphTable {
  dft_id event_name = 0;  // name of the graph-call event
  dft_id fragment = 0;    // static args of the graph-call event
  int phase = kInference;
  uint32_t n_flow_groups = 0;
  // Backward: slot of its forward graph. Forward: -1, or, for a size variant
  // (the same graph's table with args evaluated at other dynamic sizes), the
  // slot of the graph it varies: its calls wait in that graph's pending list.
  int32_t pair_slot = -1;
  std::vector<NodeEntry> nodes;
  // Forward graphs only: calls waiting for their backward (pending_calls.h).
  PendingCalls pending;
};

// A graph as the compiler describes it. `names`, `fragments` and `flows` are
// per op node, in execution order (node i is what mark(i) opens); an empty
// fragment means none.
struct GraphSpec {
  std::string event_name;
  std::string fragment;
  int phase = kInference;
  std::vector<std::string> names;
  std::vector<std::string> fragments;
  std::vector<int> flows;
  uint32_t n_flow_groups = 0;
  int pair_slot = -1;
};

// Registers a graph; returns its slot. Throws std::invalid_argument when the
// spec is malformed (lengths differ, bad phase, a fragment that is not JSON
// members) and std::length_error when kMaxGraphs graphs are registered
// (and alive) already; the message names what was wrong. Thread-safe.
int register_graph(const GraphSpec& spec);

// Interns a JSON-members fragment (`"k":v,...`); 0 for "". Throws
// std::invalid_argument naming the fragment when it is not one.
dft_id intern_fragment(const std::string& fragment);

// Frees the table of `slot` and makes the slot reusable. The caller
// guarantees nothing can call the graph any more (see above). Unknown or
// already free slots are ignored.
void unregister_graph(long slot);

// Graphs registered now (registered minus unregistered).
size_t registered_graphs();

namespace detail {
extern std::atomic<GraphTable*> g_tables[kMaxGraphs];
}

// The table of `slot`, or nullptr for a slot never registered or out of
// range. One acquire load: safe while other threads register.
inline GraphTable* table_at(long slot) {
  if (slot < 0 || static_cast<size_t>(slot) >= kMaxGraphs) return nullptr;
  return detail::g_tables[slot].load(std::memory_order_acquire);
}

}  // namespace dftracer::dynamo

#endif  // DFTRACER_CAPTURE_DYNAMO_GRAPH_TABLE_H_
