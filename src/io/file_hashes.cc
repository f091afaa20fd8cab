#include "file_hashes.h"

namespace dftracer::io {

bool FileHashes::first_in_session_probe(uint64_t hash, uint64_t session) {
  if (hash == 0) hash = 1;  // 0 marks a free slot
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
    uint64_t old = s.session.load(std::memory_order_acquire);
    while (old != session) {
      if (s.session.compare_exchange_weak(old, session, std::memory_order_acq_rel)) return true;
    }
    return false;
  }
  return true;
}

}  // namespace dftracer::io
