// dftracer::torch: the LibTorch op observer.
//
//   #include <dftracer/torch.h>
//   dft_init_opt_in("trace", nullptr, -1);  // or DFTRACER_ENABLE=1 + dft_init_from_env()
//   dftracer::torch::enable();           // every eager ATen op from now on
//   model->forward(x);
//   dftracer::torch::disable();
//   dft_finalize();
//
// enable() registers one global at::RecordFunction callback, so ops on every
// thread are recorded, each with the OS thread id of the thread that ran it
// (autograd engine threads included). Each op becomes a complete event in
// the same per-thread buffers as every other event of the process:
//   name  the RecordFunction name, as torch.profiler shows it ("aten::mm");
//         for each autograd node the engine runs, the node's name
//         ("MmBackward0": one event for torch.profiler's two,
//         "autograd::engine::evaluate_function: MmBackward0" and the node's
//         own BACKWARD_FUNCTION scope, which is not registered)
//   cat   "aten" for operators, "autograd" for autograd nodes, "torch" for
//         other scopes (compiled regions, user scopes, other RecordFunctions)
//   args  seq_nr (autograd sequence number, when the op has one; a node's is
//         the forward op's); "grad": 0 on an op or scope that starts with
//         grad mode off (no_grad, inference_mode) outside any recorded op,
//         autograd node, optimizer step or grad-off scope of its thread --
//         only the outermost of such work, not autograd nodes (the engine
//         runs them with grad mode off); "opt" on an optimizer's
//         "Optimizer.step#..." scope given a number by set_optimizer_number();
//         with shapes on, "shapes": the input sizes ("[[4, 8], [8, 3], []]");
//         with FLOPs on, "flops" on the ops torch's FlopCounterMode counts;
//         "module": the module path set_module() gave the thread (an
//         autograd node and its ops: the forward op's module).
// Events are recorded only while the core is tracing (dft_enabled()).
//
// Ops that run inside compiled graphs (torch.compile with an AOT-autograd
// backend, forward and backward) are not recorded: the capture backend
// records them already, with more context. See set_graph_depth_probe().
//
// This header is hermetic (no torch headers); link the `dftracer::torch`
// CMake target, which brings LibTorch's libraries.
#ifndef DFTRACER_TORCH_H_
#define DFTRACER_TORCH_H_

#if defined(_WIN32)
#define DFT_TORCH_API
#else
#define DFT_TORCH_API __attribute__((visibility("default")))
#endif

#include <cstdint>

namespace dftracer {
namespace torch {

// Starts recording ATen ops. `with_shapes` also records each op's input
// sizes, which makes the dispatcher box every op's arguments: several times
// the cost of the observer alone. `with_flops`: each op that
// torch.utils.flop_counter has a formula for carries args.flops, its FLOPs as
// FlopCounterMode counts them (the outermost such op only: aten::convolution,
// not the aten::_convolution inside it, so no FLOP is counted twice); reading
// the sizes makes the dispatcher box every op's arguments too
// (docs/performance.md has both costs). Calling it again with other flags
// switches; with the same ones it does nothing. Thread-safe.
DFT_TORCH_API void enable(bool with_shapes = false, bool with_flops = false);

// Stops recording. Ops already running when it is called may still be
// recorded when they end. Thread-safe, idempotent.
DFT_TORCH_API void disable();

// True between enable() and disable().
DFT_TORCH_API bool enabled();

// True when enabled with shapes.
DFT_TORCH_API bool shapes_enabled();

// True when enabled with FLOPs.
DFT_TORCH_API bool flops_enabled();

// For benchmarks only: registers the same RecordFunction callback as
// enable() (same scopes, no inputs) with bodies that do nothing, and records
// nothing. What a program pays with it on is torch's RecordFunction
// machinery alone -- the floor under any RecordFunction observer, ours or
// torch.profiler's. `with_inputs`: the callback asks for the inputs, so the
// dispatcher boxes every op's arguments (the floor under shapes and FLOPs).
// Replaces enable(); disable() removes it; enabled() is false while it is on.
DFT_TORCH_API void enable_noop_for_benchmark(bool with_inputs = false);

// Memory capture: every allocation and free that c10's allocators report
// (the CPU allocator; CUDA's caching allocator where present) -- the
// reporting torch.profiler's profile_memory uses. On the calling thread and
// the threads that inherit its torch thread-local state (the autograd
// engine's, at::launch's); off by default. While on and tracing:
//   - each recorded op carries what was allocated and freed while it was the
//     innermost recorded op on its thread (self bytes): args "alloc_bytes",
//     "free_bytes" (CPU), "dev_alloc_bytes", "dev_free_bytes" (other
//     devices), each only when not zero;
//   - a counter track "memory" (cat "memory", "ph":"C"), one series per
//     device ("cpu", "cuda:0" .. "cuda:7"): the allocator's bytes allocated,
//     sampled at most once per DFTRACER_MEMORY_INTERVAL_US (default 500) per
//     thread, plus the highest value between two samples, so the track's
//     maximum is the exact peak.
// Independent of enable(): without the op observer only the track is
// written. enable_memory(false) removes it from the calling thread (call
// it on the thread that turned it on). While torch.profiler profiles memory
// on a thread, the reports go to it, not here. Thread-safe.
DFT_TORCH_API void enable_memory(bool on = true);

// True between enable_memory() and enable_memory(false).
DFT_TORCH_API bool memory_enabled();

// True when memory capture is on and reports reach it on the calling thread.
DFT_TORCH_API bool memory_reported_on_this_thread();

// Reads DFTRACER_TRACE_EAGER and enables accordingly: "1"/"true"/"yes"/"on"
// record ops, "shapes" records ops with input shapes, unset/""/"0"/"false"/
// "no"/"off" does nothing; either way with FLOPs when DFTRACER_EAGER_FLOPS is
// 1/true/yes/on (another value than those or 0/false/no/off/"" warns once). Any other value warns once (one line naming the
// variable and the value) and does nothing. Then DFTRACER_MEMORY=1 (or
// true/yes/on) calls enable_memory() on the calling thread. Returns enabled().
DFT_TORCH_API bool enable_from_env();

// The capture backend's instrumented graphs (dftracer.python.dynamo) record
// their own ops. A probe returns how many instrumented graph calls are open
// on the calling thread; while it is non-zero the observer records nothing.
// Without a probe, ops inside AOT-autograd compiled functions (the
// "CompiledFunction" / "CompiledFunctionBackward" scopes, i.e. training
// forward and backward) are still skipped; inference graphs need the probe.
// nullptr removes it. The probe is called once per op start: make it cheap.
using GraphDepthProbe = int (*)();
DFT_TORCH_API void set_graph_depth_probe(GraphDepthProbe probe);

// Memory capture inside those graphs: the observer records no op there, so
// the bytes an allocation or free moves while a graph node runs would count
// on the op around the graph call ("CompiledFunction"). A memory probe gets
// each allocation (bytes > 0) or free (bytes < 0) reported on the calling
// thread first, `cpu` non-zero for the CPU: it counts it on the graph node
// open on that thread and returns the node's event name (an interned id of
// the core, written as the "op" arg of the "alloc" event), or 0 when no node
// is open, and the observer then counts it as without a probe. Called on
// every report while memory capture is on: no lock, no allocation.
// nullptr removes it.
using GraphMemoryProbe = uint32_t (*)(int64_t bytes, int cpu);
DFT_TORCH_API void set_graph_memory_probe(GraphMemoryProbe probe);

// Pauses recording on the calling thread until the matching resume (calls
// nest). The Python switch pauses while torch.compile compiles, so the ops
// Dynamo and AOT autograd run on fake tensors to trace a graph are not
// mistaken for the program's own. resume without suspend does nothing.
DFT_TORCH_API void suspend_this_thread();
DFT_TORCH_API void resume_this_thread();

// Module attribution: the nn.Module the calling thread runs in now, as an
// interned path id (dft_intern: "encoder.layer.0.attention", "" for the
// outermost module called; 0: none), and how many module calls are open on
// the thread (`depth`). Each op that starts on the thread afterwards carries
// it as args.module; an autograd node and the ops inside it carry the module
// of the forward op that made the node (found by the node's seq_nr), unless a
// module call opened inside the node is open around them (depth above the
// node's). dftracer.python's module hooks call it at each module call's start
// and end; a LibTorch program may call it around its own modules.
// `call_name` (an interned name, "nn.Module: Net") on the call that opens the
// thread's first module call (depth 0 to 1) records that call, up to the
// next depth 0, as one event (cat torch, args.phase forward, inference with
// grad mode off, args.module) unless it starts inside other work (an op, an
// autograd node, an optimizer step, a grad-off scope, a backward call).
DFT_TORCH_API void set_module(uint32_t module, int depth, uint32_t call_name = 0);

// Marks the calling thread as inside a backward call (Tensor.backward) or
// not; returns the previous mark, to restore when the call ends. While
// marked, the thread's outermost work with grad mode on (the seed gradient,
// the ops that run in Python before the engine starts) is written with phase
// backward instead of forward; the marked span (the outermost one) is one
// event, "Tensor.backward" (cat torch, args.phase backward). dftracer.python's wrapper around
// Tensor.backward calls it; a LibTorch program may call it around its own
// backward calls.
DFT_TORCH_API bool set_in_backward(bool on);

// Marks the calling thread as inside an update that is not an optimizer's
// own scope (a GradScaler's step and update: the unscale, the scale's
// update) or not; returns the previous mark. While marked, the thread's
// outermost work is written with phase optimizer, grad mode on or off; the
// mark's end ends the update as an optimizer scope's start does (grad-off
// work after it is inference again, also where the scaler skipped the
// optimizer's step). Ignored inside a backward call. dftracer.python's
// wrappers around GradScaler.step and GradScaler.update call it.
DFT_TORCH_API bool set_in_update(bool on);

// Marks the calling thread as a data-loading thread for good: a DataLoader
// worker process's thread, or its pin-memory thread. Its ops are the
// dataset's transforms and copies, not the model's, so they carry no
// args.phase (grad mode on would make them forward), and its module calls,
// if any, record no call event. dftracer.python calls it where torch names
// such a thread ("pt_data_worker", "pt_data_pin").
DFT_TORCH_API void set_data_thread();

// Numbers the optimizer step scope ("Optimizer.step#<Class>.step") open
// innermost on the calling thread: its event gets args.opt = n (the Python
// optimizer step hooks call it, from inside torch's scope). Does nothing when
// the innermost open scope is not a recorded optimizer step.
DFT_TORCH_API void set_optimizer_number(long long n);

// Says whether the optimizer step scope open innermost on the calling
// thread runs a closure (`optimizer.step(closure)`: LBFGS, Lightning's
// automatic optimization, which call it inside the step): while it is
// open, the work its closure opens with grad mode on gets the phase of a
// thread's outermost work (forward; backward inside a backward call), not
// optimizer, and the grad-off work after the scope is inference again. Not
// inside a zero_grad scope, nor grad-off work (the update's). The Python
// optimizer step pre hook calls it; off clears that scope's mark (an outer
// step's stays); without a recorded step scope open innermost it does
// nothing.
DFT_TORCH_API void set_closure_step(bool on);

}  // namespace torch
}  // namespace dftracer

#endif  // DFTRACER_TORCH_H_
