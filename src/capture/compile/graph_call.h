// A graph call from begin to end, and the compiled-region event.
//
// begin_call opens a frame on the thread's call stack (call_stack.h), picks
// the call's context fragment and, for the two autograd phases, its flow ids
// (a fresh block for a forward call; the paired forward's for a backward,
// pending_calls.h). end_call records the call's op events from its marks and
// the graph-call event, then, for a forward call, leaves its entry for the
// backward. Once per graph call each: locks are allowed here (context cache,
// pending calls), never in mark().
#ifndef DFTRACER_CAPTURE_DYNAMO_GRAPH_CALL_H_
#define DFTRACER_CAPTURE_DYNAMO_GRAPH_CALL_H_

#include <cstdint>

#include "dftracer/dftracer.h"

namespace dftracer::dynamo {

// A call of graph `slot` starts on this thread. `tags`: the call's tags
// fragment (0 none; a backward call takes its forward's instead). `key`
// (backward graphs): data pointer of the saved activation that identifies
// the forward call it belongs to, 0 for none. An unknown slot opens a frame
// that records nothing, so end_call stays balanced.
void begin_call(long slot, int grad, dft_id tags, uint64_t key);

// The innermost graph call of this thread ends: records its op events and
// the graph-call event. `key` (forward graphs): data pointer of the saved
// activation its backward will receive, 0 for none. Without an open call,
// does nothing.
void end_call(uint64_t key);

// Records a compiled-region event (the @dynamo.compile wrapper) named
// `name`, from `begin_ticks` to now, with the static `fragment` and the
// (grad, tags) context as args.
void record_region(dft_id name, uint64_t begin_ticks, dft_id fragment, int grad, dft_id tags);

}  // namespace dftracer::dynamo

#endif  // DFTRACER_CAPTURE_DYNAMO_GRAPH_CALL_H_
