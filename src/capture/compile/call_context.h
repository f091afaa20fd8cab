// The dynamic args of a graph call, and the ids every dynamo event shares.
//
// A call's dynamic context (grad mode, user tags) is one interned fragment,
// `"grad_enabled":<g>[,<tags>]`, chosen once per graph call (not per node):
// one id per distinct (grad, tags) pair, cached.
#ifndef DFTRACER_CAPTURE_DYNAMO_CALL_CONTEXT_H_
#define DFTRACER_CAPTURE_DYNAMO_CALL_CONTEXT_H_

#include "dftracer/dftracer.h"

namespace dftracer::dynamo {

// Interned names shared by every event of this capture source; set by
// init_event_ids() (idempotent, thread-safe), which registration and
// record_region call before anything is recorded.
struct EventIds {
  dft_id cat = 0;   // "dynamo"
  dft_id flow = 0;  // "autograd": name of the forward->backward flow arrows
  dft_id external = 0;  // "External id": the launch scope's id (dft_launch_scope)
  // Memory capture's per-op args (format/memory_args.hpp).
  dft_id alloc_bytes = 0, free_bytes = 0, dev_alloc_bytes = 0, dev_free_bytes = 0;
};
extern EventIds g_event_ids;
void init_event_ids();

// The context fragment for (grad, tags): `"grad_enabled":0|1` followed by the
// members of the `tags` fragment (0: none). Takes a lock: once per call.
dft_id context_id(int grad, dft_id tags);

}  // namespace dftracer::dynamo

#endif  // DFTRACER_CAPTURE_DYNAMO_CALL_CONTEXT_H_
