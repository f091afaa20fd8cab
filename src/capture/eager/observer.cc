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
// Scopes: FUNCTION and USER_SCOPE. Not BACKWARD_FUNCTION: its event per
// autograd node sits inside the engine's FUNCTION-scope event for the same
// node ("autograd::engine::evaluate_function: <node>") and adds nothing but
// cost -- registering that scope makes torch demangle the node's type name
// into a new std::string per node, ~240 instructions per op on a training
// step (bench/torch/bench_eager_instructions.py). The engine's event is
// written as the node (its name, cat "autograd", the node's seq_nr).
//
// Device launches: while a device capture source records (dft_launch_scope),
// each recorded op runs inside a launch scope, pushed at its start and
// popped at its end, so the kernels it launches carry its id ("External id"
// of its event; the innermost op's, as CUPTI reports the top of the
// thread's stack). Off: one load and one branch per op.
//
// No double counting with the capture backend: while the capture backend's
// probe reports an open instrumented graph, ops are skipped (as they are
// while the thread is suspended, e.g. compiling). Inside a compiled-function
// scope of a graph the backend did not instrument (plain torch.compile),
// only the graph's own work is recorded: the ATen ops called right under
// the scope (Inductor's extern kernels and fallbacks) and Inductor's kernel
// scopes, not the ops nested in those.
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "dftracer/dftracer.h"
#include "dftracer/torch.h"
#include "flop_formulas.h"
#include "memory_args.hpp"
#include "observer_internal.h"
#include "op_name_cache.h"
#include "torch_compat.h"  // lookup_name(): the one read of a private RecordFunction member

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
  // Grad mode (the analyzer's inference work, docs/analyzer.md "Steps"):
  // asked only of a thread's outermost work, so that an op or scope inside
  // an op, an autograd node, an optimizer scope or a grad-off frame never
  // pays for the read nor writes the arg.
  kShadows = 4,      // frames inside this one do not ask: an op, node, compiled or optimizer scope, grad off, or inside one
  kGradOff = 8,      // recorded with grad mode off: written with "grad": 0
  // The phase (args.phase, the values the capture backend writes), in the
  // same byte: decided with kShadows by a thread's outermost work (grad mode
  // on: forward, off: inference), by an autograd node (backward) and by an
  // optimizer's step or zero_grad scope (optimizer) wherever they open, none
  // for a DataLoader's next batch, data on a DataLoader worker's or
  // pin-memory thread; a frame a shadowing one encloses copies it.
  kPhaseShift = 4,
  kPhaseMask = 7 << kPhaseShift,
  kPhaseHidden = 128,  // a region whose grad mode decided its work's phase: its own event carries none
};
enum Phase : uint8_t { kNoPhase = 0, kForward, kBackward, kOptimizer, kInference, kData, kPhases };
constexpr uint8_t phase_bits(Phase p) { return static_cast<uint8_t>(p << kPhaseShift); }

struct Frame {
  const at::RecordFunction* rf;
  uint64_t start;
  // Memory capture: bytes allocated and freed while this frame was the
  // innermost recorded one on its thread (self, like self time), on the CPU
  // and on other devices.
  uint64_t alloc, freed, dev_alloc, dev_freed;
  int64_t seq_nr;
  uint64_t external_id;            // the op's launch scope id; 0: none pushed
  const dft_launch_scope* scope;   // the scope that pushed it (popped at end)
  NameInfo info;
  uint8_t kind;
  uint8_t flop_op;  // 1: an op with a FLOP formula (counted in ThreadState::flop_open while open)
  uint16_t shapes_len;
  int32_t outer_graph_frame;  // kCompiled frames: the thread's graph_frame before this one opened
  // Module attribution: the module path id written as args.module (0: none),
  // and for an autograd node and the frames inside it, the thread's module
  // depth when the node started (-1: the frame takes the thread's module).
  dft_id module;
  int32_t node_module_depth;
};
// Every op indexes the thread's frames several times; at 96 bytes that is a
// lea and a shift (see frame_flops).
static_assert(sizeof(Frame) == 96, "Frame grew: per-op frame indexing costs more instructions");

// The counter track of one device, per thread: when this thread last wrote
// a sample, and the highest total its allocations reached since, and when
// (written before the next sample, so the exact peak is on the track
// however samples are spaced).
struct MemSeries {
  uint64_t last;
  uint64_t peak;
  uint64_t peak_at;
  // The least total this thread's next allocation writes (one more than the
  // highest it wrote) in the trace file `total_session` names (dft_hot.session).
  uint64_t total_next;
  int total_session;
};
constexpr int kMemDevices = 9;  // cpu, cuda:0 .. cuda:7

struct ThreadState {
  int depth;           // frames pushed, including those beyond kMaxDepth
  int compiled_depth;  // open kCompiled frames
  int graph_frame;     // index of the innermost open kCompiled frame (valid while compiled_depth > 0)
  int suspended;       // suspend_this_thread() calls not yet resumed
  int flop_open;       // open frames of ops with a FLOP formula (only the outermost one counts)
  char* shapes;        // kMaxDepth shapes strings, allocated on first use
  MemSeries mem[kMemDevices];
  // set_optimizer_number(): the frame (index + 1; 0: none) of the optimizer
  // step scope to write with args.opt = opt_number.
  int opt_frame;
  int64_t opt_number;
  // set_closure_step(): the optimizer step scope (index + 1; 0: none) that
  // runs a closure (`optimizer.step(closure)`: LBFGS, Lightning's automatic
  // optimization): its direct children opened with grad mode on are the
  // closure's forward, decided as outermost work, not the update's.
  int closure_frame;
  // set_module(): the module the thread runs in now and how many module
  // calls are open on it; RecordFunction's id of this thread (what a node
  // keeps of the thread that ran its forward op).
  dft_id module;
  int module_depth;
  uint64_t rf_thread;
  // set_in_backward(): the phase of the thread's outermost work with grad
  // mode on (forward, or backward inside a backward call: its seed gradient).
  uint8_t grad_on_phase;
  // The phase of the thread's outermost work with grad mode off outside a
  // module call: inference, or optimizer from the end of a backward() call
  // to the next backward() or optimizer scope -- gradient processing
  // (clip_grad_norm_, a GradScaler's unscale_), which runs under no_grad
  // and belongs to the update, as Megatron's optimizer timer counts it. A
  // model called meanwhile (an evaluation) is still inference.
  uint8_t grad_off_phase;
  // The phase of grad-mode-off work inside the thread's outermost module
  // call: inference when the call began with grad mode off (an evaluation),
  // forward when it began with grad mode on -- a training forward that
  // turns grad mode off inside (a reentrant activation checkpoint runs its
  // segment under no_grad; a frozen backbone called under no_grad) is the
  // step's forward work.
  uint8_t module_grad_off_phase;
  // set_data_thread(): a DataLoader worker's or pin-memory thread; every
  // phase above stays data.
  uint8_t data_thread;
  // The thread's outermost module call (set_module() from depth 0 to 1) and
  // its Tensor.backward call (set_in_backward() off to on): when each began
  // (0: none open or not recorded), what to write at its end. They hold the
  // Python time between the ops (module __call__, hooks, the engine's start)
  // that no op event holds.
  uint64_t call_begin;
  dft_id call_name;
  dft_id call_module;
  uint8_t call_phase;
  uint64_t backward_begin;
  Frame frames[kMaxDepth];
  // args.flops of the frame at each depth whose op has a FLOP formula (-1:
  // none). Beside the frames, not in them: a Frame of 96 bytes indexes in two
  // instructions, one of 112 in four, and that indexing is on every op.
  int64_t frame_flops[kMaxDepth];
  OpNameCache names;
};

// The thread's state lives on the heap; thread-local storage holds only a
// pointer to it. Why: the state is ~30 KB, and a dlopen'ed library's TLS
// that large never fits the static TLS surplus, so every access went
// through __tls_get_addr. One pointer (plain data, no init guard) fits, so
// with TLS descriptors (-mtls-dialect=gnu2, see CMakeLists.txt) the loader
// places it in static TLS when it can and each access is a single load --
// and when it cannot, it falls back to dynamic TLS instead of failing to
// load (which initial-exec TLS would do).
thread_local ThreadState* tl_state = nullptr;
thread_local bool tl_state_gone = false;  // set once the thread's state was freed at exit

// Frees the state at thread exit. A separate thread_local with a
// destructor, touched only when the state is created, so the hot path
// never pays its guard.
struct StateReaper {
  ThreadState* state = nullptr;
  ~StateReaper() {
    tl_state = nullptr;
    tl_state_gone = true;  // an op ending during teardown is ignored, not re-allocated
    if (state != nullptr) delete[] state->shapes;
    delete state;
  }
};

__attribute__((noinline)) ThreadState* create_state() {
  if (tl_state_gone) return nullptr;
  static thread_local StateReaper reaper;
  auto* st = new (std::nothrow) ThreadState();  // value-initialised: zeroed
  if (st == nullptr) return nullptr;
  reaper.state = st;
  st->rf_thread = at::RecordFunction::currentThreadId();
  st->grad_on_phase = phase_bits(kForward);
  st->grad_off_phase = phase_bits(kInference);
  st->module_grad_off_phase = phase_bits(kInference);
  tl_state = st;
  return st;
}

inline ThreadState* state() {
  ThreadState* st = tl_state;
  return __builtin_expect(st != nullptr, 1) ? st : create_state();
}

std::atomic<bool> g_shapes{false};
std::atomic<bool> g_flops{false};
std::atomic<dftracer::torch::GraphDepthProbe> g_probe{nullptr};
std::atomic<dftracer::torch::GraphMemoryProbe> g_mem_probe{nullptr};
static_assert(sizeof(dft_id) == sizeof(uint32_t), "GraphMemoryProbe returns a dft_id");

// Interned once (by enable(), before the callback exists).
dft_id g_name_backward_call = 0;
dft_id g_cat_aten, g_cat_autograd, g_cat_torch, g_cat_inductor, g_key_seq, g_key_shapes, g_key_external, g_key_grad,
    g_key_opt, g_key_phase, g_key_module, g_key_flops;
dft_id g_phase_value[kPhases];  // by Phase

// Memory capture (enable_memory()): interned once before it turns on.
std::atomic<bool> g_memory{false};
uint64_t g_mem_interval_ticks = 0;  // the least ticks between two samples of one thread's track
dft_id g_key_alloc, g_key_free, g_key_dev_alloc, g_key_dev_free, g_mem_track, g_cat_memory;
dft_id g_mem_device_key[kMemDevices];
// The per-allocation events: names "alloc" (args addr, size, total: the
// allocator's bytes allocated after it, when a new high for the thread, op:
// the innermost recorded op's name) and "free" (addr); dev on both for
// devices other than the CPU.
dft_id g_name_alloc, g_name_free, g_key_addr, g_key_size, g_key_total, g_key_op, g_key_dev;

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

// ---------------------------------------------------------------- FLOPs
//
// An op with a FLOP formula (flop_formulas.h) reads the sizes it needs from
// its boxed inputs: tensors' sizes (no reference taken), int lists' values
// (the list shared, not copied), bools. Only the ops FlopCounterMode counts
// get here -- a few per layer -- so the rest pay only the boxing.

Dims tensor_dims(const c10::IValue& v) {
  if (!v.isTensor()) return Dims{nullptr, -1};
  const at::Tensor& t = v.toTensor();
  if (!t.defined()) return Dims{nullptr, -1};
  const auto s = t.sizes();  // nested or symbolic sizes throw: the caller catches
  return Dims{s.data(), static_cast<int>(s.size())};
}

// An int list argument's values, copied into `out` (at most 8).
int int_list(const c10::IValue& v, int64_t* out) {
  if (!v.isIntList()) return -1;
  const auto& list = v.toListRef();
  if (list.size() > 8) return -1;
  for (size_t i = 0; i < list.size(); ++i) out[i] = list[i].toInt();
  return static_cast<int>(list.size());
}

bool bool_at(const c10::IValue& v, size_t i) {
  if (v.isBoolList()) {
    const auto& list = v.toListRef();
    return i < list.size() && list[i].toBool();
  }
  return false;
}

// Inputs past `i` that are an undefined tensor or None (a nested tensor's
// cumulative sequence lengths are tensors: those formulas read their values,
// which the observer does not; such an op carries no FLOPs).
bool absent(c10::ArrayRef<c10::IValue> in, size_t i) {
  return i >= in.size() || in[i].isNone() || (in[i].isTensor() && !in[i].toTensor().defined());
}

int64_t conv_from_inputs(c10::ArrayRef<c10::IValue> in) {
  // (input, weight, bias, stride, padding, dilation, transposed, ...)
  if (in.size() < 7 || !in[6].isBool()) return -1;
  const Dims x = tensor_dims(in[0]), w = tensor_dims(in[1]);
  const bool transposed = in[6].toBool();
  if (transposed) return conv_flops(x, w, nullptr, true);
  int64_t stride[8], padding[8], dilation[8], out[8];
  const int ns = int_list(in[3], stride), np = int_list(in[4], padding), nd = int_list(in[5], dilation);
  if (ns < 0 || np < 0 || nd < 0 || x.n < 3 || x.n - 2 > 8) return -1;
  if (!conv_out_spatial(x, w, stride, ns, padding, np, dilation, nd, out)) return -1;
  return conv_flops(x, w, out, false);
}

__attribute__((noinline)) int64_t eager_flops(uint8_t formula, const at::RecordFunction& fn) {
  const c10::ArrayRef<c10::IValue> in = fn.inputs();
  try {
    switch (formula) {
      case kMmFlops:
        return in.size() >= 2 ? mm_flops(tensor_dims(in[0]), tensor_dims(in[1])) : -1;
      case kAddmmFlops:
        return in.size() >= 3 ? mm_flops(tensor_dims(in[1]), tensor_dims(in[2])) : -1;
      case kBmmFlops:
        return in.size() >= 2 ? bmm_flops(tensor_dims(in[0]), tensor_dims(in[1])) : -1;
      case kBaddbmmFlops:
        return in.size() >= 3 ? bmm_flops(tensor_dims(in[1]), tensor_dims(in[2])) : -1;
      case kConvFlops:
        return conv_from_inputs(in);
      case kConvBackwardFlops:
        // (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask)
        if (in.size() < 11 || !in[7].isBool()) return -1;
        return conv_backward_flops(tensor_dims(in[0]), tensor_dims(in[1]), tensor_dims(in[2]), in[7].toBool(),
                                   bool_at(in[10], 0), bool_at(in[10], 1));
      case kSdpaFlops:
        return in.size() >= 3 ? sdpa_flops(tensor_dims(in[0]), tensor_dims(in[1]), tensor_dims(in[2])) : -1;
      case kSdpaBackwardFlops:
        return in.size() >= 4 ? sdpa_backward_flops(tensor_dims(in[0]), tensor_dims(in[1]), tensor_dims(in[2]),
                                                    tensor_dims(in[3]))
                              : -1;
      case kFlashForwardFlops:  // (q, k, v, cum_seq_q, cum_seq_k, ...)
      case kEffForwardFlops:    // (q, k, v, bias, cu_seqlens_q, cu_seqlens_k, ...)
      {
        const size_t cum = formula == kFlashForwardFlops ? 3 : 4;
        if (in.size() < 3 || !absent(in, cum) || !absent(in, cum + 1)) return -1;
        return sdpa_flops(tensor_dims(in[0]), tensor_dims(in[1]), tensor_dims(in[2]));
      }
      case kFlashBackwardFlops:  // (grad_out, q, k, v, out, logsumexp, cum_seq_q, cum_seq_k, ...)
      case kEffBackwardFlops:    // (grad_out, q, k, v, bias, out, cu_seqlens_q, cu_seqlens_k, ...)
        if (in.size() < 4 || !absent(in, 6) || !absent(in, 7)) return -1;
        return sdpa_backward_flops(tensor_dims(in[0]), tensor_dims(in[1]), tensor_dims(in[2]), tensor_dims(in[3]));
      default:
        return -1;
    }
  } catch (...) {  // sizes torch will not give (nested, symbolic): no FLOPs, never an error in the program
    return -1;
  }
}

// -------------------------------------------------------------- modules
//
// args.module of an eager op: the nn.Module whose forward ran it. dftracer's
// Python module hooks (dftracer.python.eager.modules) resolve each module
// call's path once and hand the thread's innermost one to set_module(); a
// frame takes the thread's module when it starts. Backward: an autograd node
// takes the module of the forward op that made it, found at the node's start
// by (forward thread, seq_nr) in a table every recorded forward op writes
// its module into; the ops inside the node take the node's module, unless a
// module call opened inside the node (activation checkpointing's recompute)
// is open around them.
//
// The table: one relaxed 64-bit store per recorded forward op that has a
// seq_nr and a module, one load per node; no lock. A slot holds the module
// id and a check of (seq_nr, thread); a node whose slot was overwritten (its
// forward op ran more than kSeqModuleSlots sequence numbers of its thread
// before, or a collision) or never written gets no module.
constexpr int kSeqModuleBits = 16;
constexpr uint32_t kSeqModuleSlots = 1u << kSeqModuleBits;
std::atomic<uint64_t> g_seq_module[kSeqModuleSlots];

inline uint32_t seq_module_slot(uint64_t seq, uint64_t thread) {
  return static_cast<uint32_t>(seq ^ (thread * 0x9E3779B97F4A7C15ull >> 40)) & (kSeqModuleSlots - 1);
}
inline uint64_t seq_module_check(uint64_t seq, uint64_t thread) {
  return static_cast<uint64_t>(static_cast<uint32_t>(seq) + static_cast<uint32_t>(thread) * 0x9E3779B1u) << 32;
}

// A frame's module as it starts: the thread's, or the node's it runs in.
inline void inherit_module(const ThreadState& t, int d, Frame& f) {
  f.module = t.module;
  f.node_module_depth = -1;
  if (d == 0) return;
  const Frame& p = t.frames[d - 1];
  if (p.node_module_depth >= 0 && t.module_depth <= p.node_module_depth) {
    f.module = p.module;
    f.node_module_depth = p.node_module_depth;
  }
}

inline void remember_forward_module(const ThreadState& t, const Frame& f) {
  const uint64_t seq = static_cast<uint64_t>(f.seq_nr);
  g_seq_module[seq_module_slot(seq, t.rf_thread)].store(seq_module_check(seq, t.rf_thread) | f.module,
                                                        std::memory_order_relaxed);
}

// ------------------------------------------------------------ callbacks

// The sequence number of the autograd node the engine is running on this
// thread (it sets the current node before opening its
// "autograd::engine::evaluate_function: <node>" scope): the forward op that
// made the node carries the same number. Once per node, not per op. The
// node's module is its forward op's, looked up by that number and the
// thread that ran the forward (seq_nr counts per thread).
__attribute__((noinline)) int64_t node_seq_nr(const ThreadState& t, Frame& f) {
  const auto node = ::torch::autograd::get_current_node();
  f.module = 0;
  f.node_module_depth = t.module_depth;
  if (!node) return -1;
  const uint64_t seq = node->sequence_nr();
  const uint64_t v = g_seq_module[seq_module_slot(seq, node->thread_id())].load(std::memory_order_relaxed);
  if ((v & ~0xFFFFFFFFull) == seq_module_check(seq, node->thread_id())) f.module = static_cast<dft_id>(v);
  return static_cast<int64_t>(seq);
}

// Out of line: with shapes off (the default) the start callback does not
// carry the formatting code.
__attribute__((noinline)) void record_shapes(ThreadState& t, int d, const at::RecordFunction& fn) {
  if (t.shapes == nullptr) t.shapes = new (std::nothrow) char[static_cast<size_t>(kMaxDepth) * kShapesCap];
  if (t.shapes != nullptr) t.frames[d].shapes_len = format_shapes(fn, t.shapes + static_cast<size_t>(d) * kShapesCap);
}

// A closure's work inside its optimizer step (set_closure_step): a direct
// child of the step scope opened with grad mode on is decided as a thread's
// outermost work, the scope's shadow dropped (torch's optimizers update
// under no_grad and call the closure under enable_grad). Asked of shadowed
// frames only; most never get past the depth compare.
inline bool closure_work(const ThreadState& t, int d, Frame& f) {
  if (__builtin_expect(d != t.closure_frame, 1) || !c10::GradMode::is_enabled()) return false;
  f.kind = static_cast<uint8_t>(f.kind & ~(kShadows | kPhaseMask));
  return true;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  ThreadState* const st = state();
  if (st == nullptr) return nullptr;
  ThreadState& t = *st;
  const int d = t.depth++;
  if (d >= kMaxDepth) return nullptr;
  Frame& f = t.frames[d];
  f.rf = &fn;
  const uint8_t outer = d > 0 ? t.frames[d - 1].kind : uint8_t{0};
  f.kind = static_cast<uint8_t>(outer & kShadows ? outer & (kShadows | kPhaseMask) : 0);
  f.external_id = 0;
  f.flop_op = 0;
  f.node_module_depth = -1;  // a frame's children read it: never stale
  if (!dft_enabled_inline()) return nullptr;

  f.info = lookup_name(t.names, fn);
  // FlopCounterMode counts an op where torch dispatches it from above the
  // autograd layer, not the ops its kernel calls: aten::convolution, not the
  // aten::_convolution inside it. Only the outermost op with a formula open
  // on the thread counts (whether or not it is recorded).
  if (__builtin_expect(f.info.formula != kNoFormula, 0)) {
    f.flop_op = 1;
    ++t.flop_open;
  }
  inherit_module(t, d, f);
  const bool in_graph = t.compiled_depth > 0 || t.suspended > 0;
  const int graph_frame = t.graph_frame;  // before this frame opens one
  if (f.info.flags & kCompiledScope) {
    f.kind |= kCompiled;
    f.outer_graph_frame = graph_frame;
    t.graph_frame = d;
    ++t.compiled_depth;
  }
  // Inside a compiled graph (never while compiling: suspended) two kinds of
  // scope are the graph's own work and recorded: Inductor's kernel scopes,
  // and the ATen ops its code calls directly (the frame right under the
  // compiled scope: Inductor's extern kernels and fallbacks, aot_eager's
  // ops), not the ops those run inside them. A graph our capture backend
  // instrumented is skipped whole by the probe below: it records them itself.
  if (in_graph && !(t.suspended == 0 && ((f.info.flags & kInductorKernel) ||
                                         ((f.info.flags & kOperator) && d == graph_frame + 1))))
    return nullptr;
  if (const auto probe = g_probe.load(std::memory_order_relaxed)) {
    if (probe() > 0) return nullptr;
  }
  // An operator called directly inside an operator of the same name is that
  // call redispatching to another overload (aten::div_ with a Scalar
  // calling aten::div_ with a Tensor): one op, as torch.profiler counts it
  // (it merges such a child into its parent). Not recorded: its time, and
  // its memory, are its parent's.
  if (d > 0 && (f.info.flags & kOperator) && (t.frames[d - 1].kind & kRecorded) &&
      t.frames[d - 1].info.name == f.info.name)
    return nullptr;
  f.kind |= kRecorded;
  if (__builtin_expect(f.info.flags & (kAutogradNode | kOptimizerScope | kDataScope), 0)) {
    // Its own phase wherever it runs (an optimizer stepping in a backward
    // hook, a node under a user's region); a DataLoader's batch (collate's
    // ops) is no forward. Grad mode is not asked of a node (the engine runs
    // backward with grad mode off) nor of an optimizer's scope.
    if (!(f.kind & kShadows) && (f.info.flags & kDataScope) && !c10::GradMode::is_enabled()) f.kind |= kGradOff;
    const Phase p = (f.info.flags & kAutogradNode) ? kBackward : (f.info.flags & kOptimizerScope) ? kOptimizer : kNoPhase;
    if (p == kOptimizer && !t.data_thread) t.grad_off_phase = phase_bits(kInference);  // the update began: what follows is not its
    f.kind = static_cast<uint8_t>((f.kind & ~kPhaseMask) | kShadows | phase_bits(p));
  } else if (!(f.kind & kShadows) || closure_work(t, d, f)) {
    // The thread's outermost work: says whether grad mode is off. A region
    // with grad mode on is no work (a wrapper around a step or a loop): no
    // phase, and what runs in it decides its own.
    const bool work = f.info.flags & (kOperator | kCompiledScope | kInductorKernel);
    if (!c10::GradMode::is_enabled()) {
      const uint8_t off = t.module_depth > 0 ? t.module_grad_off_phase : t.grad_off_phase;
      // Between backward() and the update, or in a training forward, a region
      // is a wrapper: the work in it decides (a model call an evaluation's,
      // the clipping the update's).
      if (work || off == phase_bits(kInference)) f.kind |= kShadows | kGradOff | off | (work ? 0 : kPhaseHidden);
      else if (t.module_depth > 0 && off == phase_bits(kForward)) f.kind |= kGradOff | off;  // own time: as below
      else f.kind |= kGradOff;
    } else if (work) {
      f.kind |= kShadows | t.grad_on_phase;
    } else if (t.module_depth > 0 && t.grad_on_phase == phase_bits(kForward)) {
      // A scope inside a training forward (a custom autograd Function's
      // apply: a reentrant checkpoint's CheckpointFunction, a fused
      // kernel's Function): its own time is the forward's Python, so its
      // event carries the phase; it shadows nothing, what runs in it (a
      // checkpoint's segment under no_grad) decides its own.
      f.kind |= phase_bits(kForward);
    }
  }
  f.alloc = f.freed = f.dev_alloc = f.dev_freed = 0;
  f.seq_nr = (f.info.flags & kAutogradNode) ? node_seq_nr(t, f) : fn.seqNr();
  if (f.seq_nr >= 0 && f.module != 0 && !(f.info.flags & kAutogradNode)) remember_forward_module(t, f);
  f.shapes_len = 0;
  if (g_shapes.load(std::memory_order_relaxed) && fn.needsInputs()) record_shapes(t, d, fn);
  if (__builtin_expect(f.flop_op, 0))
    t.frame_flops[d] = t.flop_open == 1 && g_flops.load(std::memory_order_relaxed) && fn.needsInputs()
                           ? eager_flops(f.info.formula, fn)
                           : -1;
  if (const dft_launch_scope* scope = dft_launch_scope_inline()) {
    f.scope = scope;
    f.external_id = scope->push();
  }
  f.start = dft_ticks_inline();
  return nullptr;
}

// The op's memory args: only those that are not zero.
__attribute__((noinline)) void add_memory_args(const Frame& f, dft_arg* args, uint32_t& n) {
  const struct {
    dft_id key;
    uint64_t v;
  } all[] = {{g_key_alloc, f.alloc}, {g_key_free, f.freed}, {g_key_dev_alloc, f.dev_alloc}, {g_key_dev_free, f.dev_freed}};
  for (const auto& a : all) {
    if (a.v == 0) continue;
    args[n].key = a.key;
    args[n].type = DFT_ARG_UINT;
    args[n].v.u = a.v;
    ++n;
  }
}

void finish(ThreadState& t, int index, uint64_t end) {
  Frame& f = t.frames[index];
  if (f.kind & kCompiled) {
    --t.compiled_depth;
    t.graph_frame = f.outer_graph_frame;
  }
  t.flop_open -= f.flop_op;
  if (!(f.kind & kRecorded) || end == 0) {
    if (__builtin_expect(t.closure_frame == index + 1, 0)) t.closure_frame = 0;  // a step scope closed out of order
    return;
  }
  dft_arg args[12];  // 4 memory + seq, External id, phase, grad, opt, module, flops, shapes: 12 at most
  uint32_t n = 0;
  if ((f.alloc | f.freed | f.dev_alloc | f.dev_freed) != 0) add_memory_args(f, args, n);
  if (f.seq_nr >= 0) {
    args[n].key = g_key_seq;
    args[n].type = DFT_ARG_INT;
    args[n].v.i = f.seq_nr;
    ++n;
  }
  if (f.external_id != 0) {
    args[n].key = g_key_external;
    args[n].type = DFT_ARG_UINT;
    args[n].v.u = f.external_id;
    ++n;
  }
  const unsigned phase = static_cast<unsigned>(f.kind) >> kPhaseShift;  // kPhaseHidden: kPhases or more
  if (phase != kNoPhase && phase < kPhases) {
    args[n].key = g_key_phase;
    args[n].type = DFT_ARG_STR;
    args[n].v.id = g_phase_value[phase];
    ++n;
  }
  if (f.kind & kGradOff) {
    args[n].key = g_key_grad;
    args[n].type = DFT_ARG_INT;
    args[n].v.i = 0;
    ++n;
  }
  if (__builtin_expect(f.info.flags & kOptimizerStep, 0) && t.opt_frame == index + 1) {
    args[n].key = g_key_opt;
    args[n].type = DFT_ARG_INT;
    args[n].v.i = t.opt_number;
    ++n;
    t.opt_frame = 0;
  }
  if (__builtin_expect(f.info.flags & kOptimizerStep, 0) && t.closure_frame == index + 1) {
    t.closure_frame = 0;
    // The closure's backward() left grad-off work the update's; the update
    // is over (as an optimizer scope's start ends it where no closure runs).
    if (!t.data_thread) t.grad_off_phase = phase_bits(kInference);
  }
  if (f.module != 0) {
    args[n].key = g_key_module;
    args[n].type = DFT_ARG_STR;
    args[n].v.id = f.module;
    ++n;
  }
  if (__builtin_expect(f.flop_op, 0) && t.frame_flops[index] >= 0) {
    args[n].key = g_key_flops;
    args[n].type = DFT_ARG_INT;
    args[n].v.i = t.frame_flops[index];
    ++n;
  }
  if (f.shapes_len > 0) {
    args[n].key = g_key_shapes;
    args[n].type = DFT_ARG_BYTES;
    args[n].v.str.ptr = t.shapes + static_cast<size_t>(index) * kShapesCap;
    args[n].v.str.len = f.shapes_len;
    ++n;
  }
  const dft_id cat = (f.info.flags & kAutogradNode)     ? g_cat_autograd
                    : (f.info.flags & kOperator)       ? g_cat_aten
                    : (f.info.flags & kInductorKernel) ? g_cat_inductor
                                                       : g_cat_torch;
  dft_complete_ticks(f.info.name, cat, f.start, end, n ? args : nullptr, n);
}

// finish(), then the frame's launch scope popped, also for a frame not
// written (the scopes stay balanced). After finish, not inside it: a call in
// the middle of finish costs every op its registers (measured: ~20
// instructions an op with no device source).
inline void finish_frame(ThreadState& t, int index, uint64_t end) {
  finish(t, index, end);
  const Frame& f = t.frames[index];
  if (__builtin_expect(f.external_id != 0, 0)) f.scope->pop();
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* /*unused*/) {
  ThreadState* const st = tl_state;  // null: no start ran on this thread
  if (st == nullptr) return;
  ThreadState& t = *st;
  const int d = t.depth;
  if (d <= 0) return;  // an end whose start ran on another thread
  if (d > kMaxDepth) {  // beyond the recorded depth: nothing to pair
    t.depth = d - 1;
    return;
  }
  const uint64_t end = t.frames[d - 1].kind & kRecorded ? dft_ticks_inline() : 0;
  if (t.frames[d - 1].rf == &fn) {
    finish_frame(t, d - 1, end);
    t.depth = d - 1;
    return;
  }
  // Not the top: an end out of order. Close it if it is a few frames down
  // (the frames above it are dropped), else leave the stack alone.
  for (int i = d - 2; i >= 0 && i >= d - 1 - kMaxPairSearch; --i) {
    if (t.frames[i].rf != &fn) continue;
    for (int j = d - 1; j > i; --j) {
      t.frames[j].kind &= static_cast<uint8_t>(~kRecorded);
      finish_frame(t, j, 0);
    }
    finish_frame(t, i, dft_ticks_inline());
    t.depth = i;
    return;
  }
}


// --------------------------------------------------------------- memory
//
// c10's allocators report each allocation (size > 0) and free (size < 0)
// to the MemoryReportingInfoBase in the allocating thread's debug info,
// with the allocator's new total (torch_compat.h). On that thread, with no
// lock, allocation or formatting: the bytes are added to the open node of an
// instrumented graph (the capture backend's, through its memory probe), else
// to the innermost recorded op's frame (written as its args when it ends), an "alloc" or
// "free" event with the block's address goes into the thread's buffer (the
// analyzer replays them: what is live at the peak), and the device's
// counter track gets a sample when this thread wrote none for
// g_mem_interval_ticks -- preceded by the highest total an allocation of
// this thread reached since the last sample, at that allocation's time, so
// the track holds the exact peak and points to the allocation that reached it.

// The track's series for a device; -1: not drawn (devices past cuda:7, others).
inline int mem_device_slot(c10::Device device, bool cpu) {
  if (cpu) return 0;
  if (device.is_cuda() && device.index() >= 0 && device.index() < kMemDevices - 1) return 1 + device.index();
  return -1;
}

__attribute__((noinline)) void write_mem_sample(int slot, uint64_t at, uint64_t total) {
  dft_arg a;
  a.key = g_mem_device_key[slot];
  a.type = DFT_ARG_UINT;
  a.v.u = total;
  dft_counter_ticks(g_mem_track, g_cat_memory, at, &a, 1);
}

// One allocation or free: what the analyzer replays to know which blocks
// are live at the peak (docs/DESIGN.md, "What holds the peak"). The record
// goes into the thread's buffer like any event (no lock, no formatting).
// A free carries its address alone: the replay takes its size from the
// allocation, and a free's total (lower than the event's before it) is
// never the peak; the counter track has the totals after frees. Half the
// events, so about a third fewer bytes to format and compress per block.
// An allocation carries its total only when it is higher than every total
// this thread wrote before in this trace file: the peak (the highest total,
// the earliest of equal ones) is always such an allocation -- any earlier
// event of its thread wrote a lower total or none -- so the analyzer finds
// the same peak event, and after the first steps of a training loop most
// allocations write no total (fewer bytes to format and compress).
void write_block_event(const void* ptr, int64_t size, uint64_t total, dft_id op, int slot, uint64_t now,
                       MemSeries& s) {
  dft_arg a[5];
  uint32_t n = 0;
  a[n].key = g_key_addr;
  a[n].type = DFT_ARG_UINT;
  a[n++].v.u = reinterpret_cast<uintptr_t>(ptr);
  if (size >= 0) {
    a[n].key = g_key_size;
    a[n].type = DFT_ARG_UINT;
    a[n++].v.u = static_cast<uint64_t>(size);
    const int session = __atomic_load_n(&dft_hot.session, __ATOMIC_RELAXED);
    if (s.total_session != session) {  // a new trace file (init, a forked child): its own highs
      s.total_session = session;
      s.total_next = 0;
    }
    if (total >= s.total_next) {
      a[n].key = g_key_total;
      a[n].type = DFT_ARG_UINT;
      a[n++].v.u = total;
      s.total_next = total + 1;
    }
  }
  if (size >= 0 && op != 0) {
    a[n].key = g_key_op;
    a[n].type = DFT_ARG_STR;
    a[n++].v.id = op;
  }
  if (slot > 0) {
    a[n].key = g_key_dev;
    a[n].type = DFT_ARG_STR;
    a[n++].v.id = g_mem_device_key[slot];
  }
  dft_instant_ticks(size >= 0 ? g_name_alloc : g_name_free, g_cat_memory, now, a, n);
}

void on_memory(const void* ptr, int64_t size, uint64_t total, c10::Device device) {
  if (!dft_enabled_inline()) return;
  ThreadState* const st = state();
  if (st == nullptr) return;
  ThreadState& t = *st;
  const c10::DeviceType type = device.type();
  const bool cpu = type == c10::DeviceType::CPU || type == c10::DeviceType::MKLDNN || type == c10::DeviceType::IDEEP;
  // A node of an instrumented graph open on this thread is the innermost op
  // (no op is recorded here while one is open): the capture backend counts
  // the bytes on its event.
  const auto probe = g_mem_probe.load(std::memory_order_relaxed);
  dft_id op = probe != nullptr ? probe(size, cpu ? 1 : 0) : 0;
  for (int i = (t.depth < kMaxDepth ? t.depth : kMaxDepth) - 1; op == 0 && i >= 0; --i) {
    Frame& f = t.frames[i];
    if (!(f.kind & kRecorded)) continue;
    if (size >= 0) (cpu ? f.alloc : f.dev_alloc) += static_cast<uint64_t>(size);
    else (cpu ? f.freed : f.dev_freed) += static_cast<uint64_t>(-size);
    op = f.info.name;
    break;
  }
  const int slot = mem_device_slot(device, cpu);
  if (slot < 0) return;
  const uint64_t now = dft_ticks_inline();
  MemSeries& s = t.mem[slot];
  write_block_event(ptr, size, total, op, slot, now, s);
  // The highest since the last sample is an allocation's (a total only
  // rises at one), the earliest of equal ones: its sample has that
  // allocation's time and thread, which the analyzer follows to the block
  // event when the event carries no total (docs/DESIGN.md).
  if (size >= 0 && total > s.peak) {
    s.peak = total;
    s.peak_at = now;
  }
  if (now - s.last < g_mem_interval_ticks) return;
  if (s.peak > total || (s.peak == total && s.peak_at != now)) write_mem_sample(slot, s.peak_at, s.peak);
  write_mem_sample(slot, now, total);
  s.last = now;
  s.peak = 0;
}

// This thread's peaks not yet on the track (memory capture turning off).
void flush_mem_peaks() {
  ThreadState* const st = tl_state;
  if (st == nullptr || !dft_enabled_inline()) return;
  for (int slot = 0; slot < kMemDevices; ++slot) {
    MemSeries& s = st->mem[slot];
    if (s.peak != 0) write_mem_sample(slot, s.peak_at, s.peak);
    s.peak = 0;
  }
}

class MemoryReporter final : public MemoryReporterBase {
 public:
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t total_allocated, size_t /*total_reserved*/,
                         c10::Device device) override {
    on_memory(ptr, alloc_size, total_allocated, device);
  }
  bool memoryProfilingEnabled() const override { return g_memory.load(std::memory_order_relaxed); }
};

// Never destroyed: a thread where it is still installed (torch's own
// threads carry it in their ThreadLocalState) may free memory after exit()
// has run static destructors.
MemoryReporter* const g_reporter = new MemoryReporter;

// Ticks in `us` microseconds of the core's clock.
uint64_t ticks_for_us(uint64_t us) {
  const uint64_t t0 = dft_ticks();
  constexpr uint64_t kProbe = 1000000000ull;
  const uint64_t ns = dft_ticks_to_ns(t0 + kProbe) - dft_ticks_to_ns(t0);
  if (ns == 0) return us * 1000;
  return static_cast<uint64_t>(static_cast<double>(us) * 1000.0 * static_cast<double>(kProbe) / static_cast<double>(ns));
}

void intern_memory_constants() {
  g_key_alloc = dft_intern_cstr(format::kArgAllocBytes);
  g_key_free = dft_intern_cstr(format::kArgFreeBytes);
  g_key_dev_alloc = dft_intern_cstr(format::kArgDevAllocBytes);
  g_key_dev_free = dft_intern_cstr(format::kArgDevFreeBytes);
  g_mem_track = dft_intern_cstr(format::kMemoryTrack);
  g_cat_memory = dft_intern_cstr(format::kMemoryCat);
  g_name_alloc = dft_intern_cstr(format::kBlockAllocName);
  g_name_free = dft_intern_cstr(format::kBlockFreeName);
  g_key_addr = dft_intern_cstr(format::kBlockArgAddr);
  g_key_size = dft_intern_cstr(format::kBlockArgSize);
  g_key_total = dft_intern_cstr(format::kBlockArgTotal);
  g_key_op = dft_intern_cstr(format::kBlockArgOp);
  g_key_dev = dft_intern_cstr(format::kBlockArgDev);
  g_mem_device_key[0] = dft_intern_cstr(format::kMemoryDeviceCpu);
  for (int i = 1; i < kMemDevices; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "cuda:%d", i - 1);
    g_mem_device_key[i] = dft_intern_cstr(key);
  }
}

// --------------------------------------------------------- registration

// What the one registered callback is.
// kNoopWithInputs: the no-op callback asking for the inputs, what boxing
// every op's arguments costs alone.
enum class Mode { kOff, kOps, kOpsWithShapes, kNoop, kNoopWithInputs };

std::mutex g_mu;
at::CallbackHandle g_handle = 0;
Mode g_mode = Mode::kOff;
bool g_mode_flops = false;  // the registered kOps/kOpsWithShapes callback counts FLOPs (and so takes inputs)

void intern_constants() {
  g_cat_aten = dft_intern_cstr("aten");
  g_cat_autograd = dft_intern_cstr("autograd");
  g_cat_torch = dft_intern_cstr("torch");
  g_cat_inductor = dft_intern_cstr("inductor");
  g_key_seq = dft_intern_cstr("seq_nr");
  g_key_shapes = dft_intern_cstr("shapes");
  g_key_external = dft_intern_cstr("External id");
  g_key_grad = dft_intern_cstr("grad");
  g_key_opt = dft_intern_cstr("opt");
  g_key_phase = dft_intern_cstr("phase");
  g_phase_value[kNoPhase] = 0;
  g_phase_value[kForward] = dft_intern_cstr("forward");
  g_phase_value[kBackward] = dft_intern_cstr("backward");
  g_phase_value[kOptimizer] = dft_intern_cstr("optimizer");
  g_phase_value[kInference] = dft_intern_cstr("inference");
  g_phase_value[kData] = dft_intern_cstr("data");
  g_key_module = dft_intern_cstr("module");
  g_key_flops = dft_intern_cstr("flops");
  g_name_backward_call = dft_intern_cstr("Tensor.backward");
}

// The benchmark floor: the same registration with callbacks that do
// nothing, so what remains is RecordFunction's own cost for these scopes.
std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

// Replaces the registered callback (if any) by the one for `mode` (with
// FLOPs: `flops`, for kOps and kOpsWithShapes). Called with g_mu held.
void set_mode_locked(Mode mode, bool flops = false) {
  flops = flops && (mode == Mode::kOps || mode == Mode::kOpsWithShapes);
  if (mode == g_mode && flops == g_mode_flops) return;
  if (g_mode != Mode::kOff) at::removeCallback(g_handle);
  g_mode = Mode::kOff;
  g_mode_flops = false;
  g_shapes.store(mode == Mode::kOpsWithShapes, std::memory_order_relaxed);
  g_flops.store(flops, std::memory_order_relaxed);
  if (mode == Mode::kOff) return;
  intern_constants();
  static bool warned_fallback = false;
  if (kRfNameFallbackWarning != nullptr && !warned_fallback) {
    warned_fallback = true;
    dft_warn(kRfNameFallbackWarning);
  }
  const bool noop = mode == Mode::kNoop || mode == Mode::kNoopWithInputs;
  // The dispatcher boxes an op's arguments only when a callback asks for
  // them, and then for every op: what shapes and FLOPs cost.
  g_handle = at::addGlobalCallback(
      at::RecordFunctionCallback(noop ? &noop_start : &on_start, noop ? &noop_end : &on_end)
          .needsInputs(mode == Mode::kOpsWithShapes || mode == Mode::kNoopWithInputs || flops)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  g_mode = mode;
  g_mode_flops = flops;
}

}  // namespace
}  // namespace torch_observer

namespace torch {

using namespace torch_observer;

void enable(bool with_shapes, bool with_flops) {
  std::lock_guard<std::mutex> lock(g_mu);
  set_mode_locked(with_shapes ? Mode::kOpsWithShapes : Mode::kOps, with_flops);
}

void disable() {
  std::lock_guard<std::mutex> lock(g_mu);
  set_mode_locked(Mode::kOff);
}

bool enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_mode == Mode::kOps || g_mode == Mode::kOpsWithShapes;
}

bool shapes_enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_mode == Mode::kOpsWithShapes;
}

bool flops_enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_mode_flops;
}

void enable_noop_for_benchmark(bool with_inputs) {
  std::lock_guard<std::mutex> lock(g_mu);
  set_mode_locked(with_inputs ? Mode::kNoopWithInputs : Mode::kNoop);
}

bool enable_from_env() {
  switch (parse_trace_eager_env()) {
    case EnvSetting::kOps:
      enable(false, parse_eager_flops_env());
      break;
    case EnvSetting::kOpsWithShapes:
      enable(true, parse_eager_flops_env());
      break;
    case EnvSetting::kOff:
    case EnvSetting::kInvalid:
      break;
  }
  if (parse_memory_env()) enable_memory(true);
  return enabled();
}

void enable_memory(bool on) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (on) {
    static bool interned = false;
    if (!interned) {
      intern_memory_constants();
      interned = true;
    }
    g_mem_interval_ticks = ticks_for_us(parse_memory_interval_env());
    g_memory.store(true, std::memory_order_relaxed);
    install_memory_reporter(g_reporter);
  } else {
    if (!g_memory.load(std::memory_order_relaxed)) return;
    g_memory.store(false, std::memory_order_relaxed);
    flush_mem_peaks();
    remove_memory_reporter(g_reporter);
  }
}

bool memory_enabled() { return g_memory.load(std::memory_order_relaxed); }

bool memory_reported_on_this_thread() { return g_memory.load(std::memory_order_relaxed) && memory_reporter_installed(g_reporter); }

void set_graph_depth_probe(GraphDepthProbe probe) { g_probe.store(probe, std::memory_order_relaxed); }

void set_graph_memory_probe(GraphMemoryProbe probe) { g_mem_probe.store(probe, std::memory_order_relaxed); }

void suspend_this_thread() {
  if (ThreadState* st = state()) ++st->suspended;
}

void resume_this_thread() {
  ThreadState* st = tl_state;
  if (st != nullptr && st->suspended > 0) --st->suspended;
}

namespace {
// Outermost work only: not inside a recorded op, autograd node, optimizer
// step or grad-off scope (a checkpoint's recompute, an LBFGS closure's
// forward, an evaluation region), which already holds this time.
bool inside_work(const ThreadState& t) {
  const int d = t.depth < kMaxDepth ? t.depth : kMaxDepth;
  // (A closure's model call inside its optimizer step is outermost work: on_start.)
  return d > 0 && (t.frames[d - 1].kind & kShadows) && !(d == t.closure_frame && c10::GradMode::is_enabled());
}

void write_call(dft_id name, uint64_t begin, uint8_t phase, dft_id module) {
  dft_arg a[2];
  uint32_t n = 0;
  a[n].key = g_key_phase;
  a[n].type = DFT_ARG_STR;
  a[n].v.id = g_phase_value[phase];
  ++n;
  if (module != 0) {
    a[n].key = g_key_module;
    a[n].type = DFT_ARG_STR;
    a[n].v.id = module;
    ++n;
  }
  dft_complete_ticks(name, g_cat_torch, begin, dft_ticks_inline(), a, n);
}
}  // namespace

void set_module(uint32_t module, int depth, uint32_t call_name) {
  ThreadState* st = state();
  if (st == nullptr) return;
  if (st->data_thread) call_name = 0;  // no call event; the phases stay data
  else if (depth == 1 && st->module_depth == 0)
    st->module_grad_off_phase = phase_bits(c10::GradMode::is_enabled() ? kForward : kInference);
  if (depth == 1 && st->module_depth == 0 && call_name != 0) {
    st->call_begin = 0;
    if (g_cat_torch != 0 && dft_enabled_inline() && st->grad_on_phase != phase_bits(kBackward) && !inside_work(*st)) {
      st->call_name = call_name;
      st->call_module = module;
      st->call_phase = c10::GradMode::is_enabled() ? kForward : kInference;
      st->call_begin = dft_ticks_inline();
    }
  } else if (depth == 0 && st->call_begin != 0) {
    if (dft_enabled_inline()) write_call(st->call_name, st->call_begin, st->call_phase, st->call_module);
    st->call_begin = 0;
  }
  st->module = module;
  st->module_depth = depth;
}

bool set_in_backward(bool on) {
  ThreadState* st = state();
  if (st == nullptr || st->data_thread) return false;
  const bool was = st->grad_on_phase == phase_bits(kBackward);
  if (on && !was) {
    st->grad_off_phase = phase_bits(kInference);
    st->backward_begin = g_cat_torch != 0 && dft_enabled_inline() ? dft_ticks_inline() : 0;
  } else if (!on && was) {
    if (st->backward_begin != 0 && dft_enabled_inline()) write_call(g_name_backward_call, st->backward_begin, kBackward, 0);
    st->backward_begin = 0;
    st->grad_off_phase = phase_bits(kOptimizer);  // until an optimizer scope or another backward()
  }
  st->grad_on_phase = phase_bits(on ? kBackward : kForward);
  return was;
}

bool set_in_update(bool on) {
  ThreadState* st = state();
  if (st == nullptr || st->data_thread || st->grad_on_phase == phase_bits(kBackward)) return false;
  const bool was = st->grad_on_phase == phase_bits(kOptimizer);
  if (on) {
    st->grad_on_phase = st->grad_off_phase = phase_bits(kOptimizer);
  } else if (was) {
    st->grad_on_phase = phase_bits(kForward);
    st->grad_off_phase = phase_bits(kInference);  // the update is over, its optimizer step taken or not
  }
  return was;
}

void set_data_thread() {
  ThreadState* st = state();
  if (st == nullptr) return;
  st->data_thread = 1;
  st->grad_on_phase = st->grad_off_phase = st->module_grad_off_phase = phase_bits(kData);
}

void set_optimizer_number(long long n) {
  ThreadState* st = tl_state;
  if (st == nullptr || st->depth <= 0 || st->depth > kMaxDepth) return;
  const Frame& f = st->frames[st->depth - 1];
  if (!(f.kind & kRecorded) || !(f.info.flags & kOptimizerStep)) return;
  st->opt_frame = st->depth;
  st->opt_number = n;
}

void set_closure_step(bool on) {
  ThreadState* st = tl_state;
  if (st == nullptr || st->depth <= 0 || st->depth > kMaxDepth) return;
  const Frame& f = st->frames[st->depth - 1];
  if (!(f.kind & kRecorded) || !(f.info.flags & kOptimizerStep)) return;
  // Off clears this scope's mark only: a wrapper optimizer's step (SAM's)
  // calling its base optimizer's step without a closure keeps its own.
  if (on) st->closure_frame = st->depth;
  else if (st->closure_frame == st->depth) st->closure_frame = 0;
}

}  // namespace torch
}  // namespace dftracer
