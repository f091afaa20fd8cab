#include "graph_call.h"

#include <vector>

#include "call_context.h"
#include "call_stack.h"
#include "graph_table.h"

namespace dftracer::dynamo {

namespace {

std::atomic<uint64_t> g_next_flow{1};

// Owner of the marks' storage: at_depth[d] holds those of the call at depth
// d, and tl_calls.scratch[d] points into it. Kept apart from tl_calls because
// its vectors need a destructor (which makes every access check an init
// guard), and touched only when a call needs more marks than the thread has
// held so far.
struct MarkStorage {
  std::vector<Mark> at_depth[kMaxDepth];
  std::vector<MemEntry> mem_at_depth[kMaxDepth];
  ~MarkStorage() {
    for (int d = 0; d < kMaxDepth; ++d) {
      tl_calls.scratch[d] = nullptr;
      tl_calls.mem_scratch[d] = nullptr;
      tl_calls.scratch_cap[d] = 0;
    }
  }
};
thread_local MarkStorage tl_mark_storage;

__attribute__((noinline)) void grow_scratch(CallStack& cs, int d, size_t need) {
  std::vector<Mark>& v = tl_mark_storage.at_depth[d];
  v.resize(need);
  std::vector<MemEntry>& mem = tl_mark_storage.mem_at_depth[d];
  mem.resize(need);
  cs.scratch[d] = v.data();
  cs.mem_scratch[d] = mem.data();
  cs.scratch_cap[d] = static_cast<uint32_t>(v.size());
}

// The open node's id off the scope that pushed it.
inline void pop_launch_scope(Frame& f) {
  if (f.pushed == nullptr) return;
  f.pushed->pop();
  f.pushed = nullptr;
}

inline uint32_t fill_args(dft_arg* args, dft_id static_frag, dft_id ctx) {
  uint32_t n = 0;
  if (static_frag) {
    args[n].key = 0;
    args[n].type = DFT_ARG_JSON;
    args[n].v.id = static_frag;
    ++n;
  }
  if (ctx) {
    args[n].key = 0;
    args[n].type = DFT_ARG_JSON;
    args[n].v.id = ctx;
    ++n;
  }
  return n;
}

// A node's memory args: those that are not zero.
__attribute__((noinline)) void add_memory_args(const MemEntry& m, dft_arg* args, uint32_t& n) {
  const struct {
    dft_id key;
    uint64_t v;
  } all[] = {{g_event_ids.alloc_bytes, m.alloc},
             {g_event_ids.free_bytes, m.freed},
             {g_event_ids.dev_alloc_bytes, m.dev_alloc},
             {g_event_ids.dev_free_bytes, m.dev_freed}};
  for (const auto& a : all) {
    if (a.v == 0) continue;
    args[n].key = a.key;
    args[n].type = DFT_ARG_UINT;
    args[n++].v.u = a.v;
  }
}

// Records the op events of a graph call from its marks: node k of the marks
// ran from its mark to the next one (the last to `now`). Done once per call,
// at its end, in one tight loop: the per-node hook only stores a timestamp
// (call_stack.h says why).
void record_marks(Frame& f, uint64_t now) {
  const GraphTable* t = f.table;
  const size_t n_nodes = t->nodes.size();
  const bool forward = t->phase == kForward;
  const dft_id cat = g_event_ids.cat;
  // The frame's fields in locals: the frame lives in thread-local storage,
  // which the compiler would look up again (__tls_get_addr) after every
  // record call of the loop to reread them.
  const Mark* const marks = f.marks;
  const uint32_t n_marks = f.n_marks;
  const MemEntry* const mem = f.mem;  // in mark order
  const uint32_t n_mem = f.n_mem;
  const dft_id ctx = f.ctx;
  const uint64_t flow_base = f.flow_base;
  // Every arg is a fragment id (DFT_ARG_JSON) or a number, never copied
  // bytes: the _plain record path, one slot per arg with no per-arg type
  // checks. The whole 64-bit value is set, as that path writes v.u.
  dft_arg args[7];
  uint32_t next_mem = 0;
  for (uint32_t k = 0; k < n_marks; ++k) {
    const int64_t i = marks[k].node;
    if (i < 0 || static_cast<size_t>(i) >= n_nodes) continue;  // the closing mark
    const uint64_t start = marks[k].ticks;
    const uint64_t end = k + 1 < n_marks ? marks[k + 1].ticks : now;
    const NodeEntry& e = t->nodes[i];
    uint32_t n = 0;
    if (e.fragment) {
      args[n].key = 0;
      args[n].type = DFT_ARG_JSON;
      args[n++].v.u = e.fragment;
    }
    if (ctx) {
      args[n].key = 0;
      args[n].type = DFT_ARG_JSON;
      args[n++].v.u = ctx;
    }
    if (const uint64_t ext = marks[k].external_id) {
      args[n].key = g_event_ids.external;
      args[n].type = DFT_ARG_UINT;
      args[n++].v.u = ext;
    }
    if (next_mem < n_mem && mem[next_mem].mark == k) add_memory_args(mem[next_mem++], args, n);
    dft_complete_ticks_plain(e.name, cat, start, end, args, n);
    if (e.flow >= 0 && flow_base != 0) {
      // Bind the flow point to the middle of the slice: Perfetto attaches it
      // to the slice enclosing that instant on this thread.
      dft_flow(g_event_ids.flow, cat, flow_base + static_cast<uint64_t>(e.flow), forward ? 1 : 0,
               start + (end - start) / 2);
    }
  }
  f.n_marks = 0;
  f.n_mem = 0;
}

}  // namespace

int call_depth_probe() { return tl_calls.depth; }

dft_id add_memory(int64_t bytes, int cpu) {
  CallStack& cs = tl_calls;
  const int d = cs.depth;
  if (d <= 0 || d > kMaxDepth) return 0;
  Frame& f = cs.frames[d - 1];
  if (f.table == nullptr || f.n_marks == 0) return 0;
  const uint32_t k = f.n_marks - 1;
  const int64_t node = f.marks[k].node;
  if (node < 0 || static_cast<size_t>(node) >= f.table->nodes.size()) return 0;  // the closing mark
  MemEntry* m = f.n_mem > 0 ? &f.mem[f.n_mem - 1] : nullptr;
  if (m == nullptr || m->mark != k) {
    if (f.n_mem >= f.cap) return 0;
    m = &f.mem[f.n_mem++];
    *m = MemEntry{k, 0, 0, 0, 0};
  }
  if (bytes >= 0) (cpu ? m->alloc : m->dev_alloc) += static_cast<uint64_t>(bytes);
  else (cpu ? m->freed : m->dev_freed) += static_cast<uint64_t>(-bytes);
  return f.table->nodes[static_cast<size_t>(node)].name;
}

void switch_launch_scope(Frame& f, Mark& m, const dft_launch_scope* scope) {
  pop_launch_scope(f);
  if (scope == nullptr || f.table == nullptr) return;
  if (m.node < 0 || static_cast<size_t>(m.node) >= f.table->nodes.size()) return;  // the closing mark
  init_event_ids();
  m.external_id = scope->push();
  f.pushed = scope;
}

void begin_call(long slot, int grad, dft_id tags, uint64_t key) {
  CallStack& cs = tl_calls;
  const int d = cs.depth++;
  if (d >= kMaxDepth) return;  // counted, so end_call stays balanced
  GraphTable* t = table_at(slot);
  Frame& f = cs.frames[d];
  f.table = t;
  f.tags = tags;
  f.flow_base = 0;
  f.pushed = nullptr;
  f.n_marks = 0;
  f.cap = 0;
  f.marks = nullptr;
  f.mem = nullptr;
  f.n_mem = 0;
  if (t == nullptr) return;  // unknown slot: the frame stays, nothing is recorded
  const size_t need = t->nodes.size() + 1;  // n op nodes + the closing mark
  if (cs.scratch_cap[d] < need) grow_scratch(cs, d, need);
  f.marks = cs.scratch[d];
  f.mem = cs.mem_scratch[d];
  f.cap = cs.scratch_cap[d];
  if (t->phase == kForward && t->n_flow_groups > 0) {
    f.flow_base = g_next_flow.fetch_add(t->n_flow_groups, std::memory_order_relaxed);
  } else if (t->phase == kBackward) {
    PendingCall fw_call;
    GraphTable* fw = table_at(t->pair_slot);
    if (fw != nullptr && fw->pending.take(key, &fw_call)) {
      f.flow_base = fw_call.flow_base;
      f.tags = fw_call.tags;  // the backward carries the tags of its forward call
    }
  }
  f.ctx = context_id(grad, f.tags);
  f.begin_ticks = dft_ticks_inline();
}

void end_call(uint64_t key) {
  CallStack& cs = tl_calls;
  const int d = cs.depth;
  if (d <= 0) return;
  cs.depth = d - 1;
  if (d > kMaxDepth) return;
  Frame& f = cs.frames[d - 1];
  GraphTable* t = f.table;
  if (t == nullptr) return;
  pop_launch_scope(f);  // a call left without its closing mark (an exception)
  const uint64_t now = dft_ticks_inline();
  record_marks(f, now);
  dft_arg a[2];
  const uint32_t n = fill_args(a, t->fragment, f.ctx);
  dft_complete_ticks(t->event_name, g_event_ids.cat, f.begin_ticks, now, a, n);
  if (t->phase == kForward) {
    // A size variant's calls wait in the pending list of the graph it is a
    // variant of, where that graph's backward looks for them.
    GraphTable* owner = t->pair_slot >= 0 ? table_at(t->pair_slot) : t;
    (owner != nullptr ? owner : t)->pending.push(PendingCall{f.flow_base, key, f.tags});
  }
}

void record_region(dft_id name, uint64_t begin_ticks, dft_id fragment, int grad, dft_id tags) {
  init_event_ids();
  dft_arg a[2];
  const uint32_t n = fill_args(a, fragment, context_id(grad, tags));
  dft_complete_ticks(name, g_event_ids.cat, begin_ticks, dft_ticks_inline(), a, n);
}

}  // namespace dftracer::dynamo
