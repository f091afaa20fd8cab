#include "graph_table.h"

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "call_context.h"

namespace dftracer::dynamo {

namespace detail {
std::atomic<GraphTable*> g_tables[kMaxGraphs];
}

namespace {
std::mutex g_register_mu;
std::atomic<uint32_t> g_n_tables{0};  // slots ever handed out (the high-water mark)
std::vector<uint32_t> g_free_slots;    // slots of unregistered graphs, reused first (guarded)
std::atomic<size_t> g_live{0};
}  // namespace

dft_id intern_fragment(const std::string& fragment) {
  if (fragment.empty()) return 0;
  const dft_id id = dft_intern_json_fragment(fragment.data(), fragment.size());
  if (id == 0) throw std::invalid_argument("not a JSON-members fragment: " + fragment.substr(0, 200));
  return id;
}

int register_graph(const GraphSpec& s) {
  init_event_ids();
  if (s.names.size() != s.fragments.size() || s.names.size() != s.flows.size())
    throw std::invalid_argument("dynamo_register_graph: names, fragments and flows differ in length");
  if (s.phase < kForward || s.phase > kInference)
    throw std::invalid_argument(
        "dynamo_register_graph: phase must be 0 (forward), 1 (backward) or 2 (inference)");
  // Built outside the lock: interning takes the core's own locks on first sight.
  auto t = std::make_unique<GraphTable>();
  t->event_name = dft_intern(s.event_name.data(), s.event_name.size());
  t->fragment = intern_fragment(s.fragment);
  t->phase = s.phase;
  t->n_flow_groups = s.n_flow_groups;
  t->pair_slot = s.pair_slot;
  t->nodes.reserve(s.names.size());
  for (size_t i = 0; i < s.names.size(); ++i) {
    t->nodes.push_back(NodeEntry{dft_intern(s.names[i].data(), s.names[i].size()),
                                 intern_fragment(s.fragments[i]), s.flows[i]});
  }
  std::lock_guard<std::mutex> lock(g_register_mu);
  uint32_t slot;
  if (!g_free_slots.empty()) {
    slot = g_free_slots.back();
    g_free_slots.pop_back();
  } else {
    slot = g_n_tables.load(std::memory_order_relaxed);
    if (slot >= kMaxGraphs)
      throw std::length_error("dynamo_register_graph: too many graphs (limit " + std::to_string(kMaxGraphs) +
                              " live per process)");
    g_n_tables.store(slot + 1, std::memory_order_relaxed);
  }
  detail::g_tables[slot].store(t.release(), std::memory_order_release);
  g_live.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(slot);
}

void unregister_graph(long slot) {
  if (slot < 0 || static_cast<size_t>(slot) >= kMaxGraphs) return;
  GraphTable* t;
  {
    std::lock_guard<std::mutex> lock(g_register_mu);
    t = detail::g_tables[slot].exchange(nullptr, std::memory_order_acq_rel);
    if (t == nullptr) return;
    g_free_slots.push_back(static_cast<uint32_t>(slot));
    g_live.fetch_sub(1, std::memory_order_relaxed);
  }
  delete t;
}

size_t registered_graphs() { return g_live.load(std::memory_order_relaxed); }

}  // namespace dftracer::dynamo
