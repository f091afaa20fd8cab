#include "dir_names.h"

#include <cstdlib>
#include <cstring>

namespace dftracer::io {

void DirNames::remember(uint64_t hash, const char* name) {
  if (hash == 0 || name == nullptr || name[0] != '/') return;
  size_t i = static_cast<size_t>(hash) & (kSlots - 1);
  for (size_t probes = 0; probes < kProbes; ++probes, i = (i + 1) & (kSlots - 1)) {
    Slot& s = slots_[i];
    uint64_t h = s.hash.load(std::memory_order_acquire);
    if (h == 0) {
      uint64_t expected = 0;
      h = s.hash.compare_exchange_strong(expected, hash, std::memory_order_acq_rel) ? hash : expected;
    }
    if (h != hash) continue;
    if (s.name.load(std::memory_order_acquire) != nullptr) return;
    char* copy = strdup(name);
    if (copy == nullptr) return;
    const char* none = nullptr;
    // Two threads opening the same new directory at once: one copy wins.
    if (!s.name.compare_exchange_strong(none, copy, std::memory_order_acq_rel)) std::free(copy);
    return;
  }
}

const char* DirNames::find(uint64_t hash) const {
  if (hash == 0) return nullptr;
  size_t i = static_cast<size_t>(hash) & (kSlots - 1);
  for (size_t probes = 0; probes < kProbes; ++probes, i = (i + 1) & (kSlots - 1)) {
    const Slot& s = slots_[i];
    const uint64_t h = s.hash.load(std::memory_order_acquire);
    if (h == 0) return nullptr;
    if (h == hash) return s.name.load(std::memory_order_acquire);
  }
  return nullptr;
}

}  // namespace dftracer::io
