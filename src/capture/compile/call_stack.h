// Per-thread state of the torch.compile capture: the open graph calls and
// their marks, and mark(), the per-node hot path.
//
// The backend instruments each ATen graph once, at compile time: before every
// op node it inserts a call `dynamo_mark(i)`, and before the output node a
// last `dynamo_mark(n)`. Node i runs from mark i to the next mark. So a graph
// with n op nodes makes n+1 calls into C per run, each passing one small int.
//
// A mark only stores {node, ticks} in the open call's scratch array; the
// events of a graph call are recorded (dft_complete_ticks, one binary record
// each) by end_call (graph_call.h), in one loop. Measured in-graph, between
// ATen ops, recording at each mark cost ~110-130 ns a node: the core's record
// path and the hook run cold after every op (instruction cache, branch
// predictors), while a mark that only stores a timestamp is a few cache
// lines. Recorded at the end of the call, the same records cost ~20-30 ns
// each in a hot loop. The price: a process killed in the middle of a graph
// call loses that call's op events (events of finished calls are in the
// core's buffers).
//
// mark() is inline here so the Python shim's METH_FASTCALL function compiles
// it in place: no call, one TLS lookup. The thread state it reads is
// constant-initialized and trivially destructible, so that lookup needs no
// guard or TLS wrapper call either; the owner of the marks' storage (vectors,
// freed at thread exit) is a separate thread-local that begin_call touches
// only when the storage must grow.
//
// Device launches (dft_launch_scope, set while a device capture source
// records): each node runs inside a launch scope of its own, pushed at its
// mark and popped at the next, so the kernels it launches carry its id
// ("External id" of its event). Off, mark() pays one load and one branch.
//
// Memory capture (the LibTorch observer's allocation reports, reaching
// add_memory() through the probe dftracer._eager installs): bytes allocated
// and freed while a node is open count on that node's event, as an eager
// op's self bytes count on its event. They go into a second scratch array,
// one entry per mark that saw an allocation or free, so mark() stays as it
// is and a call without memory capture records nothing more.
//
// A small stack of open graph calls: a graph can only be re-entered on the
// same thread through Python code run by an op, which is rare but legal.
// Beyond kMaxDepth nested calls we stop recording instead of corrupting
// state; the depth is still counted, so begin/end stay balanced.
#ifndef DFTRACER_CAPTURE_DYNAMO_CALL_STACK_H_
#define DFTRACER_CAPTURE_DYNAMO_CALL_STACK_H_

#include <cstdint>

#include "dftracer/dftracer.h"
#include "graph_table.h"

namespace dftracer::dynamo {

constexpr int kMaxDepth = 8;

// One mark: node `node` opened at `ticks` (the previous node closed then).
struct Mark {
  int64_t node;
  uint64_t ticks;
  uint64_t external_id;  // the node's launch scope id; 0: none
};

// Bytes allocated and freed while the node of mark `mark` was open: on the
// CPU, and on other devices (dev_).
struct MemEntry {
  uint32_t mark;
  uint64_t alloc, freed, dev_alloc, dev_freed;
};

// One open graph call.
struct Frame {
  GraphTable* table;    // nullptr: unknown slot, nothing is recorded
  uint64_t begin_ticks;
  dft_id ctx;           // "grad_enabled":g[,tags]: the call's dynamic args, one fragment
  dft_id tags;          // tags fragment alone (handed to the backward of a forward call)
  uint64_t flow_base;   // 0: no flow arrows for this call
  Mark* marks;          // this call's marks, recorded as events at end_call
  uint32_t n_marks;
  uint32_t cap;
  MemEntry* mem;        // memory of this call's nodes, in mark order (as many entries as marks at most)
  uint32_t n_mem;
  const dft_launch_scope* pushed;  // the scope holding this call's open node's id, popped at the next mark
};

// Per-thread state in one object (one TLS lookup per hook).
struct CallStack {
  Frame frames[kMaxDepth];
  // Mark storage of the call at each depth: owned by a separate thread-local
  // (graph_call.cc) that grows it when a bigger graph is first seen on the
  // thread and frees it at thread exit; never touched by mark().
  Mark* scratch[kMaxDepth];
  MemEntry* mem_scratch[kMaxDepth];  // as many entries as scratch_cap
  uint32_t scratch_cap[kMaxDepth];
  int depth;  // open calls, including those beyond kMaxDepth
};

// Constant-initialized, trivially destructible: see the file comment.
inline thread_local CallStack tl_calls{};

// Pops the open node's launch scope id and pushes one for `node` (none for
// the closing mark) into m.external_id. Out of line: only with a device
// capture source on.
void switch_launch_scope(Frame& f, Mark& m, const dft_launch_scope* scope);

// mark(i): node i starts now (and the previous node ends); i == n (the
// number of op nodes) only ends the last one. Stores the time only; a mark
// outside any call, beyond kMaxDepth, in an unknown slot's call or past the
// call's capacity is ignored.
inline void mark(long node) {
  CallStack& cs = tl_calls;
  const int d = cs.depth;
  if (d <= 0 || d > kMaxDepth) return;
  Frame& f = cs.frames[d - 1];
  if (f.n_marks < f.cap) {
    Mark& m = f.marks[f.n_marks++];
    m.node = node;
    m.external_id = 0;
    const dft_launch_scope* scope = dft_launch_scope_inline();
    if (__builtin_expect(scope != nullptr || f.pushed != nullptr, 0)) switch_launch_scope(f, m, scope);
    m.ticks = dft_ticks_inline();
  }
}

// Open graph calls on this thread (0 between calls).
inline int call_depth() { return tl_calls.depth; }

// The same, as a plain function whose address the LibTorch observer calls
// (dftracer._eager): ops run while a graph call is open on this thread are
// recorded by this capture already, so the observer skips them.
int call_depth_probe();

// One allocation (bytes > 0) or free (bytes < 0) reported on this thread, on
// the CPU (cpu != 0) or another device: counted on the node open in the
// innermost graph call, whose event name it returns; 0 (nothing counted)
// when no node is open (no call, before the first mark, after the closing
// mark, an unknown slot). The LibTorch observer calls it from its allocation
// report, before its own ops (dftracer._eager: it records no op inside an
// open graph call). No lock, no allocation.
dft_id add_memory(int64_t bytes, int cpu);

}  // namespace dftracer::dynamo

#endif  // DFTRACER_CAPTURE_DYNAMO_CALL_STACK_H_
