// Per-thread cache from a RecordFunction's name to its interned ids.
//
// Dispatcher ops name themselves with a pointer into their schema, which is
// stable for the life of the process, so the cache is keyed by the pointer.
// Other RecordFunctions (autograd nodes, user scopes) own their name string,
// so the same address can later hold another name: every hit is confirmed
// with strcmp against the interned copy (a few ns for an op name), and a
// mismatch is handled as a miss. A miss interns the name in the core (no
// lock for a string the core already knows) and overwrites the slot.
//
// Plain data with no constructor, so a thread_local of it needs no
// initialisation guard on the hot path; no allocation after the first
// sight of a name.
#ifndef DFTRACER_SRC_TORCH_OP_NAME_CACHE_H_
#define DFTRACER_SRC_TORCH_OP_NAME_CACHE_H_

#include <cstdint>
#include <cstring>

#include "dftracer/dftracer.h"

namespace dftracer {
namespace torch_observer {

// What a name is, decided once per name.
enum NameFlags : uint8_t {
  kOperator = 1,       // "ns::op" (an ATen or custom operator)
  kCompiledScope = 2,  // AOT autograd's compiled forward/backward
};

struct NameInfo {
  dft_id name;
  uint8_t flags;
};

// Classifies a name the first time it is seen (not on the hot path).
uint8_t classify_name(const char* name);

class OpNameCache {
 public:
  static constexpr uint32_t kSlots = 1024;  // power of two
  static constexpr uint32_t kProbe = 4;

  // The interned name and flags for `name` (NUL-terminated, non-null).
  NameInfo lookup(const char* name) {
    const uint32_t h = slot_of(name);
    for (uint32_t i = 0; i < kProbe; ++i) {
      Slot& s = slots_[(h + i) & (kSlots - 1)];
      if (s.key == name) {
        if (std::strcmp(name, s.text) == 0) return s.info;
        return refill(s, name);  // same address, another string now
      }
      if (s.key == nullptr) return refill(s, name);
    }
    // Probe window full: replace its first slot (rare; names are few).
    return refill(slots_[h & (kSlots - 1)], name);
  }

 private:
  struct Slot {
    const char* key;   // the RecordFunction's name pointer
    const char* text;  // the core's interned copy (lives as long as the process)
    NameInfo info;
  };

  static uint32_t slot_of(const char* p) {
    const uint64_t v = reinterpret_cast<uintptr_t>(p) * 0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(v >> 54);  // top 10 bits: kSlots == 1024
  }

  static NameInfo refill(Slot& s, const char* name) {
    const dft_id id = dft_intern_cstr(name);
    size_t len = 0;
    const char* text = dft_string(id, &len);
    s.info.name = id;
    s.info.flags = classify_name(name);
    // Should the core ever fail to intern, keep the slot unmatchable so
    // the next call retries instead of trusting a stale key.
    s.key = text != nullptr ? name : nullptr;
    s.text = text != nullptr ? text : "";
    return s.info;
  }

  Slot slots_[kSlots];
};

static_assert(OpNameCache::kSlots == 1024, "slot_of keeps the top 10 bits");

}  // namespace torch_observer
}  // namespace dftracer

#endif  // DFTRACER_SRC_TORCH_OP_NAME_CACHE_H_
