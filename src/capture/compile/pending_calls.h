// Forward/backward pairing, for flow arrows and tags.
//
// A forward call takes a fresh block of flow ids (one per autograd seq_nr
// group of its graph) and, when it ends, pushes {flow base, tags, key} on its
// graph's pending calls. `key` identifies the call by one of the activations
// it saves for backward (its data pointer, taken by the Python wrapper); the
// backward of that call receives the same tensor as an input and looks its
// entry up by it, so forwards and backwards pair exactly in any order.
// Without a key (a graph that saves no activation of its own), or with a key
// no entry has, the backward takes the newest entry (LIFO: the autograd
// engine runs the backward of the latest forward first, and a forward whose
// backward never runs stays at the bottom). The entries are capped at
// kMaxPending; the oldest go first, so forwards whose backward never runs
// (inference under grad mode, a loss never backpropagated) cannot grow it.
//
// Once per graph call, never per node: a mutex is fine here.
#ifndef DFTRACER_CAPTURE_DYNAMO_PENDING_CALLS_H_
#define DFTRACER_CAPTURE_DYNAMO_PENDING_CALLS_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "dftracer/dftracer.h"

namespace dftracer::dynamo {

constexpr size_t kMaxPending = 1024;

struct PendingCall {
  uint64_t flow_base;  // first flow id of the forward call, 0 none
  uint64_t key;        // data pointer of a saved activation, 0 none
  dft_id tags;         // the forward call's tags fragment, 0 none
};

class PendingCalls {
 public:
  // A forward call ended; evicts the oldest entry when kMaxPending are held.
  void push(const PendingCall& call);
  // The entry of the forward call a backward belongs to (see above), removed;
  // false when there is none.
  bool take(uint64_t key, PendingCall* out);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<PendingCall> calls_;  // oldest first
};

}  // namespace dftracer::dynamo

#endif  // DFTRACER_CAPTURE_DYNAMO_PENDING_CALLS_H_
