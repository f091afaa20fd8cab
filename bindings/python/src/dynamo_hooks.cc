// Hot path of the torch.compile capture backend (dftracer.python.dynamo).
//
// The backend instruments each ATen graph once, at compile time: before every
// op node it inserts a call `dynamo_mark(i)`, and before the output node a
// last `dynamo_mark(n)`. Node i runs from mark i to the next mark. So a graph
// with n op nodes makes n+1 calls into C per run, each passing one small int.
//
// Everything an event needs besides its two timestamps is static and lives in
// a GraphTable registered once per graph: the interned event name
// (`function.<op overload>`) and an interned JSON-members fragment with the
// node's static args (graph, node, module, shapes, flops, ...). The dynamic
// context of a call (grad mode, user tags) is one more interned fragment,
// chosen once per graph call by `dynamo_begin`. Nothing is formatted or
// allocated per node.
//
// A mark only stores {node, ticks} in the thread's scratch array; the
// events of a graph call are recorded (dft_complete_ticks, one binary record
// each) by `dynamo_end`, in one loop. Measured in-graph, between ATen ops,
// recording at each mark cost ~110-130 ns a node: the core's record path and
// the hook run cold after every op (instruction cache, branch predictors),
// while a mark that only stores a timestamp is a few cache lines. Recorded
// at the end of the call, the same records cost ~20-30 ns each in a hot loop.
// The price: a process killed in the middle of a graph call loses that call's
// op events (events of finished calls are in the core's buffers).
//
// The three per-node/per-call entry points (dynamo_begin / dynamo_mark /
// dynamo_end) are plain METH_FASTCALL CPython functions rather than nanobind
// bindings: the cheapest call there is, ~8 ns less than nanobind's dispatch
// for a call with int arguments (docs/performance.md), which matters
// when the whole per-node budget is ~100 ns.
//
// Per-thread state: a small stack of open graph calls (a graph can only be
// re-entered on the same thread through Python code run by an op, which is
// rare but legal; beyond kMaxDepth nested calls we stop recording instead of
// corrupting state).
//
// Forward/backward pairing for flow arrows and tags: a forward call takes a
// fresh block of flow ids (one per autograd seq_nr group of its graph) and,
// when it ends, pushes {flow base, tags, key} on its graph's pending stack.
// `key` identifies the call by one of the activations it saves for backward
// (its data pointer, taken by the Python wrapper); the backward of that call
// receives the same tensor as an input and looks its entry up by it, so
// forwards and backwards pair exactly in any order. Without a key (a graph
// that saves no activation of its own) the backward takes the newest entry
// (LIFO: the autograd engine runs the backward of the latest forward first,
// and a forward whose backward never runs stays at the bottom). The stack is
// capped; the oldest entries go first.

#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dftracer/dftracer.h"
#include "module.h"

namespace nb = nanobind;

namespace dft_py {
namespace {

enum Phase : int { kForward = 0, kBackward = 1, kInference = 2 };

struct NodeEntry {
  dft_id name;      // interned "function.<op>"
  dft_id fragment;  // interned static args fragment
  int32_t flow;     // forward: flow group started here; backward: group finished here; -1 none
};

struct PendingCall {
  uint64_t flow_base;
  uint64_t key;  // data pointer of a saved activation, 0 none
  dft_id tags;
};

struct GraphTable {
  dft_id event_name = 0;  // name of the graph-call event
  dft_id fragment = 0;    // static args of the graph-call event
  int phase = kInference;
  uint32_t n_flow_groups = 0;
  int32_t pair_slot = -1;  // backward: slot of its forward graph
  std::vector<NodeEntry> nodes;

  // Forward graphs only: calls waiting for their backward (see file comment).
  std::mutex pending_mu;
  std::vector<PendingCall> pending;
};

constexpr size_t kMaxGraphs = 1 << 16;
constexpr size_t kMaxPending = 1024;
constexpr int kMaxDepth = 8;

// Append-only table of graphs: registration takes a lock, readers do one
// acquire load, so the hot path never sees a vector being reallocated.
std::atomic<GraphTable*> g_tables[kMaxGraphs];
std::atomic<uint32_t> g_n_tables{0};
std::mutex g_register_mu;
std::atomic<uint64_t> g_next_flow{1};

dft_id g_cat = 0;         // "dynamo"
dft_id g_flow_name = 0;   // "autograd"

// Context fragments: "grad_enabled":<g> followed by the tags fragment, one
// interned id per distinct (grad, tags) pair, looked up once per graph call.
std::mutex g_ctx_mu;
std::unordered_map<uint64_t, dft_id> g_ctx_ids;

dft_id context_id(int grad, dft_id tags) {
  const uint64_t key = (static_cast<uint64_t>(tags) << 1) | (grad ? 1u : 0u);
  std::lock_guard<std::mutex> lock(g_ctx_mu);
  auto it = g_ctx_ids.find(key);
  if (it != g_ctx_ids.end()) return it->second;
  std::string frag = grad ? "\"grad_enabled\":1" : "\"grad_enabled\":0";
  size_t len = 0;
  const char* t = tags ? dft_string(tags, &len) : nullptr;
  if (t != nullptr && len > 0) {
    frag += ',';
    frag.append(t, len);
  }
  const dft_id id = dft_intern_json_fragment(frag.data(), frag.size());
  g_ctx_ids.emplace(key, id);
  return id;
}

// One mark: node `node` opened at `ticks` (the previous node closed then).
struct Mark {
  int64_t node;
  uint64_t ticks;
};

struct Frame {
  GraphTable* table;
  uint64_t begin_ticks;
  dft_id ctx;    // "grad_enabled":g[,tags]: the call's dynamic args, one fragment
  dft_id tags;   // tags fragment alone (handed to the backward of a forward call)
  uint64_t flow_base;  // 0: no flow arrows for this call
  Mark* marks;         // this call's marks, recorded as events at dynamo_end
  uint32_t n_marks;
  uint32_t cap;
};

// Per-thread state in one object (one TLS lookup per hook). `scratch[d]`
// holds the marks of the call at depth d; it grows at dynamo_begin when a
// bigger graph is first seen on the thread, never in dynamo_mark.
struct ThreadState {
  Frame frames[kMaxDepth];
  std::vector<Mark> scratch[kMaxDepth];
  int depth = 0;
};

thread_local ThreadState tl;

// For the LibTorch observer (dftracer._eager): ops run while a graph call is
// open on this thread are recorded here already, so the observer skips them.
// Exported as a capsule holding this function's address.
int dynamo_depth_probe() { return tl.depth; }

inline GraphTable* table_at(long slot) {
  if (slot < 0 || static_cast<size_t>(slot) >= kMaxGraphs) return nullptr;
  return g_tables[slot].load(std::memory_order_acquire);
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

// Records the op events of a graph call from its marks: node k of the marks
// ran from its mark to the next one (the last to `now`). Done once per call,
// at its end, in one tight loop: the per-node hook only stores a timestamp
// (see the file comment on why).
void record_marks(Frame& f, uint64_t now) {
  GraphTable* t = f.table;
  const size_t n_nodes = t->nodes.size();
  const bool forward = t->phase == kForward;
  dft_arg args[2];
  args[0].key = 0;
  args[0].type = DFT_ARG_JSON;
  args[1].key = 0;
  args[1].type = DFT_ARG_JSON;
  args[1].v.id = f.ctx;
  for (uint32_t k = 0; k < f.n_marks; ++k) {
    const int64_t i = f.marks[k].node;
    if (i < 0 || static_cast<size_t>(i) >= n_nodes) continue;  // the closing mark
    const uint64_t start = f.marks[k].ticks;
    const uint64_t end = k + 1 < f.n_marks ? f.marks[k + 1].ticks : now;
    const NodeEntry& e = t->nodes[i];
    uint32_t n = 0;
    if (e.fragment) args[n++].v.id = e.fragment;
    if (f.ctx) {
      args[n].v.id = f.ctx;
      ++n;
    }
    dft_complete_ticks(e.name, g_cat, start, end, args, n);
    if (e.flow >= 0 && f.flow_base != 0) {
      // Bind the flow point to the middle of the slice: Perfetto attaches it
      // to the slice enclosing that instant on this thread.
      dft_flow(g_flow_name, g_cat, f.flow_base + static_cast<uint64_t>(e.flow), forward ? 1 : 0,
               start + (end - start) / 2);
    }
  }
  f.n_marks = 0;
}

inline bool parse_long(PyObject* o, long* out) {
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) return false;
  *out = v;
  return true;
}

// dynamo_mark(i): node i starts now (and the previous node ends); i == n
// (the number of op nodes) only ends the last one. Stores the time only.
PyObject* py_mark(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1) {
    PyErr_SetString(PyExc_TypeError, "dynamo_mark(node_index) takes one int");
    return nullptr;
  }
  long i;
  if (!parse_long(args[0], &i)) return nullptr;
  ThreadState& ts = tl;
  const int d = ts.depth;
  if (d <= 0 || d > kMaxDepth) Py_RETURN_NONE;
  Frame& f = ts.frames[d - 1];
  if (f.n_marks < f.cap) {
    Mark& m = f.marks[f.n_marks++];
    m.node = i;
    m.ticks = dft_ticks_inline();
  }
  Py_RETURN_NONE;
}

inline bool parse_u64(PyObject* o, uint64_t* out) {
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
  *out = v;
  return true;
}

// dynamo_begin(slot, grad_enabled, tags_fragment_id[, key]): a graph call
// starts. `key` (backward graphs): data pointer of the saved activation that
// identifies the forward call it belongs to, 0 for none.
PyObject* py_begin(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 && nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "dynamo_begin(slot, grad_enabled, tags_id[, key]) takes three or four ints");
    return nullptr;
  }
  long slot, grad, tags;
  uint64_t key = 0;
  if (!parse_long(args[0], &slot) || !parse_long(args[1], &grad) || !parse_long(args[2], &tags) ||
      (nargs == 4 && !parse_u64(args[3], &key)))
    return nullptr;
  ThreadState& ts = tl;
  const int d = ts.depth++;
  if (d >= kMaxDepth) Py_RETURN_NONE;  // counted, so dynamo_end stays balanced
  GraphTable* t = table_at(slot);
  Frame& f = ts.frames[d];
  f.table = t;
  f.tags = static_cast<dft_id>(tags);
  f.flow_base = 0;
  f.n_marks = 0;
  f.cap = 0;
  f.marks = nullptr;
  // Unknown slot: the frame stays (dynamo_end stays balanced), nothing is recorded.
  if (t == nullptr) Py_RETURN_NONE;
  std::vector<Mark>& v = ts.scratch[d];
  const size_t need = t->nodes.size() + 1;  // n op nodes + the closing mark
  if (v.size() < need) v.resize(need);
  f.marks = v.data();
  f.cap = static_cast<uint32_t>(v.size());
  if (t->phase == kForward && t->n_flow_groups > 0) {
    f.flow_base = g_next_flow.fetch_add(t->n_flow_groups, std::memory_order_relaxed);
  } else if (t->phase == kBackward) {
    if (GraphTable* fw = table_at(t->pair_slot)) {
      std::lock_guard<std::mutex> lock(fw->pending_mu);
      auto& q = fw->pending;
      if (!q.empty()) {
        size_t at = q.size() - 1;  // LIFO unless the key finds the exact call
        if (key != 0) {
          for (size_t j = q.size(); j-- > 0;) {
            if (q[j].key == key) {
              at = j;
              break;
            }
          }
        }
        f.flow_base = q[at].flow_base;
        f.tags = q[at].tags;  // the backward carries the tags of its forward call
        q.erase(q.begin() + static_cast<std::ptrdiff_t>(at));
      }
    }
  }
  f.ctx = context_id(static_cast<int>(grad), f.tags);
  f.begin_ticks = dft_ticks_inline();
  Py_RETURN_NONE;
}

// dynamo_end([key]): closes the last node and records the graph-call event.
// `key` (forward graphs): data pointer of the saved activation its backward
// will receive, 0 for none.
PyObject* py_end(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  uint64_t key = 0;
  if (nargs > 1) {
    PyErr_SetString(PyExc_TypeError, "dynamo_end([key]) takes at most one int");
    return nullptr;
  }
  if (nargs == 1 && !parse_u64(args[0], &key)) return nullptr;
  ThreadState& ts = tl;
  const int d = ts.depth;
  if (d <= 0) Py_RETURN_NONE;
  ts.depth = d - 1;
  if (d > kMaxDepth) Py_RETURN_NONE;
  Frame& f = ts.frames[d - 1];
  GraphTable* t = f.table;
  if (t == nullptr) Py_RETURN_NONE;
  const uint64_t now = dft_ticks_inline();
  record_marks(f, now);
  dft_arg a[2];
  const uint32_t n = fill_args(a, t->fragment, f.ctx);
  dft_complete_ticks(t->event_name, g_cat, f.begin_ticks, now, a, n);
  if (t->phase == kForward) {
    std::lock_guard<std::mutex> lock(t->pending_mu);
    if (t->pending.size() >= kMaxPending) t->pending.erase(t->pending.begin());
    t->pending.push_back(PendingCall{f.flow_base, key, f.tags});
  }
  Py_RETURN_NONE;
}

PyMethodDef g_fast_methods[] = {
    {"dynamo_mark", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_mark)),
     METH_FASTCALL, "dynamo_mark(i): close the open node of this thread's graph call, open node i."},
    {"dynamo_begin", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_begin)),
     METH_FASTCALL, "dynamo_begin(slot, grad_enabled, tags_id[, key]): a call of graph `slot` starts."},
    {"dynamo_end", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_end)),
     METH_FASTCALL, "dynamo_end([key]): the innermost graph call of this thread ends."},
    {nullptr, nullptr, 0, nullptr}};

dft_id intern_fragment_or_throw(const std::string& s) {
  if (s.empty()) return 0;
  dft_id id = dft_intern_json_fragment(s.data(), s.size());
  if (id == 0) throw nb::value_error(("not a JSON-members fragment: " + s.substr(0, 200)).c_str());
  return id;
}

void init_ids() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_cat = dft_intern_cstr("dynamo");
    g_flow_name = dft_intern_cstr("autograd");
  });
}

// Registers a graph; returns its slot. `names`, `fragments` and `flows` are
// per op node, in execution order (node i is what dynamo_mark(i) opens).
int register_graph(const std::string& event_name, const std::string& fragment, int phase,
                   const std::vector<std::string>& names,
                   const std::vector<std::string>& fragments, const std::vector<int>& flows,
                   uint32_t n_flow_groups, int pair_slot) {
  init_ids();
  if (names.size() != fragments.size() || names.size() != flows.size())
    throw nb::value_error("dynamo_register_graph: names, fragments and flows differ in length");
  if (phase < kForward || phase > kInference)
    throw nb::value_error("dynamo_register_graph: phase must be 0 (forward), 1 (backward) or 2 (inference)");
  auto t = std::make_unique<GraphTable>();
  t->event_name = dft_intern(event_name.data(), event_name.size());
  t->fragment = intern_fragment_or_throw(fragment);
  t->phase = phase;
  t->n_flow_groups = n_flow_groups;
  t->pair_slot = pair_slot;
  t->nodes.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    t->nodes.push_back(NodeEntry{dft_intern(names[i].data(), names[i].size()),
                                 intern_fragment_or_throw(fragments[i]), flows[i]});
  }
  std::lock_guard<std::mutex> lock(g_register_mu);
  const uint32_t slot = g_n_tables.load(std::memory_order_relaxed);
  if (slot >= kMaxGraphs) throw nb::value_error("dynamo_register_graph: too many graphs (65536)");
  g_tables[slot].store(t.release(), std::memory_order_release);
  g_n_tables.store(slot + 1, std::memory_order_relaxed);
  return static_cast<int>(slot);
}

// Records a compiled-region event (the @dynamo.compile wrapper) from
// `begin_ticks` to now.
void region_end(uint32_t name_id, uint64_t begin_ticks, uint32_t fragment_id, int grad,
                uint32_t tags_id) {
  init_ids();
  dft_arg a[2];
  const uint32_t n = fill_args(a, fragment_id, context_id(grad, tags_id));
  dft_complete_ticks(name_id, g_cat, begin_ticks, dft_ticks_inline(), a, n);
}

}  // namespace

void register_dynamo(nb::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), g_fast_methods) != 0) throw nb::python_error();
  m.def("dynamo_register_graph", &register_graph, nb::arg("event_name"), nb::arg("fragment"),
        nb::arg("phase"), nb::arg("names"), nb::arg("fragments"), nb::arg("flows"),
        nb::arg("n_flow_groups"), nb::arg("pair_slot"),
        "Registers an instrumented graph's node table; returns its slot.");
  m.def(
      "dynamo_intern_fragment",
      [](const std::string& s) { return intern_fragment_or_throw(s); }, nb::arg("fragment"),
      "Interns a JSON-members fragment (`\"k\":v,...`); ValueError when it is not one.");
  m.def(
      "dynamo_intern", [](const std::string& s) { return dft_intern(s.data(), s.size()); },
      nb::arg("s"), "Interns a string; returns its id.");
  m.def("dynamo_ticks", &dft_ticks, "The core's raw clock (dft_ticks).");
  m.def("dynamo_region_end", &region_end, nb::arg("name_id"), nb::arg("begin_ticks"),
        nb::arg("fragment_id"), nb::arg("grad_enabled"), nb::arg("tags_id"),
        "Records a compiled-region event from begin_ticks to now.");
  m.def(
      "dynamo_metadata",
      [](const std::string& k, const std::string& v) { dft_metadata(k.c_str(), v.c_str()); },
      nb::arg("key"), nb::arg("value"), "Records a metadata event.");
  m.def(
      "dynamo_enabled", [] { return dft_enabled_inline() != 0; }, "True while tracing is on.");
  m.attr("dynamo_depth_fn") =
      nb::capsule(reinterpret_cast<void*>(&dynamo_depth_probe), "dftracer.dynamo_depth_fn");
  m.def(
      "dynamo_depth", [] { return tl.depth; },
      "Open graph calls on this thread (for tests: 0 between calls).");
}

}  // namespace dft_py
