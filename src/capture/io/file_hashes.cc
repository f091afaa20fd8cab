#include "file_hashes.h"

namespace dftracer::io {

unsigned FileHashes::see_probe(uint64_t hash, uint64_t session) {
  if (hash == 0) hash = 1;  // 0 marks a free slot
  const uint64_t fresh = session << kKindBits;
  size_t i = static_cast<size_t>(hash) & (kSlots - 1);
  for (size_t probes = 0; probes < kSlots; ++probes, i = (i + 1) & (kSlots - 1)) {
    Slot& s = slots_[i];
    uint64_t h = s.hash.load(std::memory_order_acquire);
    if (h == 0) {
      uint64_t expected = 0;
      if (!s.hash.compare_exchange_strong(expected, hash, std::memory_order_acq_rel)) h = expected;
      else h = hash;
    }
    if (h != hash) continue;
    uint64_t old = s.state.load(std::memory_order_acquire);
    while ((old >> kKindBits) != session) {
      if (s.state.compare_exchange_weak(old, fresh, std::memory_order_acq_rel)) return kFirst;
    }
    return static_cast<unsigned>(old) & kKindMask;
  }
  return kFirst | kNoRoom;
}

void FileHashes::set_kind(uint64_t hash, uint64_t session, unsigned kind) {
  if (hash == 0) hash = 1;
  size_t i = static_cast<size_t>(hash) & (kSlots - 1);
  for (size_t probes = 0; probes < kSlots; ++probes, i = (i + 1) & (kSlots - 1)) {
    Slot& s = slots_[i];
    const uint64_t h = s.hash.load(std::memory_order_acquire);
    if (h == 0) return;  // never claimed: the path is not in the set
    if (h != hash) continue;
    uint64_t unknown = session << kKindBits;  // only over "not looked at yet" in this session
    s.state.compare_exchange_strong(unknown, unknown | (kind & kKindMask), std::memory_order_acq_rel);
    return;
  }
}

}  // namespace dftracer::io
