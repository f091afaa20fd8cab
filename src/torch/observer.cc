// The LibTorch op observer: one global at::RecordFunction callback that
// turns every eager ATen op into a complete event in the core's per-thread
// buffers (include/dftracer/torch.h says what is recorded).
//
// Hot path (per op): the start callback reads the clock into a slot of a
// per-thread stack; the end callback looks the op's name up in a per-thread
// cache (interned once per name) and hands ids and ticks to
// dft_complete_ticks. No lock, no allocation, no formatting -- except the
// optional shapes string, formatted at start into a per-thread buffer
// because the inputs are only readable there.
//
// Start and end are paired through the stack by the RecordFunction's
// address (RecordFunctions are RAII objects, so they end in LIFO order on
// their thread); an end that does not match the top is looked for a few
// frames down, and an end that matches nothing is ignored, so an unusual
// pairing loses at most those events and never corrupts the stack.
//
// No double counting with the capture backend: while a frame of the
// compiled-function scopes is open on the thread, or the capture backend's
// probe reports an open instrumented graph, ops are skipped (as they are
// while the thread is suspended, e.g. compiling).
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "dftracer/dftracer.h"
#include "dftracer/torch.h"
#include "observer_internal.h"
#include "op_name_cache.h"

namespace dftracer {
namespace torch_observer {
namespace {

constexpr int kMaxDepth = 128;        // nesting deeper than this is not recorded
constexpr int kMaxPairSearch = 4;     // frames looked at below the top for an unmatched end
constexpr uint32_t kShapesCap = 480;  // bytes of one op's shapes string

enum FrameKind : uint8_t {
  kIgnored = 0,      // tracing off or nested in a compiled graph: no event
  kRecorded = 1,     // becomes an event at end
  kCompiled = 2,     // a compiled-function scope: ops inside are skipped
};

struct Frame {
  const at::RecordFunction* rf;
  uint64_t start;
  int64_t seq_nr;
  NameInfo info;
  uint8_t kind;
  uint8_t backward;  // BACKWARD_FUNCTION scope
  uint16_t shapes_len;
};

// Plain data (no constructor): thread_local access needs no init guard.
struct ThreadState {
  int depth;           // frames pushed, including those beyond kMaxDepth
  int compiled_depth;  // open kCompiled frames
  int suspended;       // suspend_this_thread() calls not yet resumed
  Frame frames[kMaxDepth];
  OpNameCache names;
};

thread_local ThreadState tl_state;
// Shapes strings, one per frame; allocated on a thread's first op with
// shapes on (so threads that never record shapes pay nothing).
thread_local std::unique_ptr<char[]> tl_shapes;

std::atomic<bool> g_shapes{false};
std::atomic<dftracer::torch::GraphDepthProbe> g_probe{nullptr};

// Interned once (by enable(), before the callback exists).
dft_id g_cat_aten, g_cat_autograd, g_cat_torch, g_key_seq, g_key_shapes;

// --------------------------------------------------------------- shapes

struct ShapeWriter {
  char* out;
  uint32_t cap;
  uint32_t len = 0;
  bool full = false;

  void put(const char* s, uint32_t n) {
    if (full) return;
    if (len + n > cap - 3) {  // room for "..."
      std::memcpy(out + len, "...", 3);
      len += 3;
      full = true;
      return;
    }
    std::memcpy(out + len, s, n);
    len += n;
  }
  void put(char c) { put(&c, 1); }
  void put_int(int64_t v) {
    char buf[24];
    const int n = std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    put(buf, static_cast<uint32_t>(n));
  }
  void sizes(const at::Tensor& t) {
    put('[');
    if (t.defined()) {
      const auto s = t.sizes();
      for (size_t i = 0; i < s.size(); ++i) {
        if (i) put(", ", 2);
        put_int(s[i]);
      }
    }
    put(']');
  }
};

// torch.profiler's "Input Dims" layout: one entry per input, a tensor's
// sizes, a list of sizes for a tensor list, [] for anything else.
uint16_t format_shapes(const at::RecordFunction& fn, char* out) {
  if (fn.inputs().empty()) return 0;  // no "shapes" arg at all
  ShapeWriter w{out, kShapesCap};
  w.put('[');
  bool first = true;
  for (const c10::IValue& v : fn.inputs()) {
    if (!first) w.put(", ", 2);
    first = false;
    if (v.isTensor()) {
      w.sizes(v.toTensor());
    } else if (v.isTensorList()) {
      w.put('[');
      bool f2 = true;
      for (const at::Tensor& t : v.toTensorList().vec()) {
        if (!f2) w.put(", ", 2);
        f2 = false;
        w.sizes(t);
      }
      w.put(']');
    } else {
      w.put("[]", 2);
    }
  }
  w.put(']');
  return static_cast<uint16_t>(w.len);
}

// ------------------------------------------------------------ callbacks

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  ThreadState& t = tl_state;
  const int d = t.depth++;
  if (d >= kMaxDepth) return nullptr;
  Frame& f = t.frames[d];
  f.rf = &fn;
  f.kind = kIgnored;
  if (!dft_enabled()) return nullptr;

  f.info = t.names.lookup(fn.name());
  const bool in_graph = t.compiled_depth > 0 || t.suspended > 0;
  if (f.info.flags & kCompiledScope) {
    f.kind = kCompiled;
    ++t.compiled_depth;
  }
  if (in_graph) return nullptr;
  if (const auto probe = g_probe.load(std::memory_order_relaxed)) {
    if (probe() > 0) return nullptr;
  }
  f.kind |= kRecorded;
  f.backward = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
  f.seq_nr = fn.seqNr();
  f.shapes_len = 0;
  if (g_shapes.load(std::memory_order_relaxed) && fn.needsInputs()) {
    if (!tl_shapes) tl_shapes.reset(new char[static_cast<size_t>(kMaxDepth) * kShapesCap]);
    f.shapes_len = format_shapes(fn, tl_shapes.get() + static_cast<size_t>(d) * kShapesCap);
  }
  f.start = dft_ticks();
  return nullptr;
}

void finish(ThreadState& t, int index, uint64_t end) {
  Frame& f = t.frames[index];
  if (f.kind & kCompiled) --t.compiled_depth;
  if (!(f.kind & kRecorded) || end == 0) return;
  dft_arg args[2];
  uint32_t n = 0;
  if (f.seq_nr >= 0) {
    args[n].key = g_key_seq;
    args[n].type = DFT_ARG_INT;
    args[n].v.i = f.seq_nr;
    ++n;
  }
  if (f.shapes_len > 0) {
    args[n].key = g_key_shapes;
    args[n].type = DFT_ARG_BYTES;
    args[n].v.str.ptr = tl_shapes.get() + static_cast<size_t>(index) * kShapesCap;
    args[n].v.str.len = f.shapes_len;
    ++n;
  }
  const dft_id cat = f.backward ? g_cat_autograd : (f.info.flags & kOperator) ? g_cat_aten : g_cat_torch;
  dft_complete_ticks(f.info.name, cat, f.start, end, n ? args : nullptr, n);
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* /*unused*/) {
  ThreadState& t = tl_state;
  const int d = t.depth;
  if (d <= 0) return;  // an end whose start ran on another thread
  if (d > kMaxDepth) {  // beyond the recorded depth: nothing to pair
    t.depth = d - 1;
    return;
  }
  const uint64_t end = t.frames[d - 1].kind & kRecorded ? dft_ticks() : 0;
  if (t.frames[d - 1].rf == &fn) {
    finish(t, d - 1, end);
    t.depth = d - 1;
    return;
  }
  // Not the top: an end out of order. Close it if it is a few frames down
  // (the frames above it are dropped), else leave the stack alone.
  for (int i = d - 2; i >= 0 && i >= d - 1 - kMaxPairSearch; --i) {
    if (t.frames[i].rf != &fn) continue;
    for (int j = d - 1; j > i; --j) {
      t.frames[j].kind &= static_cast<uint8_t>(~kRecorded);
      finish(t, j, 0);
    }
    finish(t, i, dft_ticks());
    t.depth = i;
    return;
  }
}

// --------------------------------------------------------- registration

std::mutex g_mu;
at::CallbackHandle g_handle = 0;
bool g_registered = false;

void intern_constants() {
  g_cat_aten = dft_intern_cstr("aten");
  g_cat_autograd = dft_intern_cstr("autograd");
  g_cat_torch = dft_intern_cstr("torch");
  g_key_seq = dft_intern_cstr("seq_nr");
  g_key_shapes = dft_intern_cstr("shapes");
}

}  // namespace
}  // namespace torch_observer

namespace torch {

using namespace torch_observer;

void enable(bool with_shapes) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_registered && g_shapes.load(std::memory_order_relaxed) == with_shapes) return;
  if (g_registered) at::removeCallback(g_handle);
  intern_constants();
  g_shapes.store(with_shapes, std::memory_order_relaxed);
  g_handle = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_start, &on_end)
          .needsInputs(with_shapes)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
  g_registered = true;
}

void disable() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_registered) return;
  at::removeCallback(g_handle);
  g_registered = false;
  g_shapes.store(false, std::memory_order_relaxed);
}

bool enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_registered;
}

bool shapes_enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_registered && g_shapes.load(std::memory_order_relaxed);
}

bool enable_from_env() {
  switch (parse_trace_eager_env()) {
    case EnvSetting::kOps:
      enable(false);
      break;
    case EnvSetting::kOpsWithShapes:
      enable(true);
      break;
    case EnvSetting::kOff:
    case EnvSetting::kInvalid:
      break;
  }
  return enabled();
}

void set_graph_depth_probe(GraphDepthProbe probe) { g_probe.store(probe, std::memory_order_relaxed); }

void suspend_this_thread() { ++tl_state.suspended; }

void resume_this_thread() {
  if (tl_state.suspended > 0) --tl_state.suspended;
}

}  // namespace torch
}  // namespace dftracer
