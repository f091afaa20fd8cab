#include "session_key.h"

#include <dftracer/dftracer.h>

#include <cstring>

namespace dftracer::io {

namespace {

// Word `i` of a name of `len` bytes, zero-padded past its end (so the
// comparison never reads beyond the caller's string). A whole word is one
// fixed-size copy (one load): a copy of variable size went through the
// stack byte-wise and cost about as much as hashing the name (perf).
uint64_t word_at(const char* name, size_t len, size_t i) {
  uint64_t w = 0;
  size_t at = i * 8;
  if (len - at >= 8)
    std::memcpy(&w, name + at, 8);
  else
    std::memcpy(&w, name + at, len - at);
  return w;
}

}  // namespace

bool SessionKey::lookup(const char* name, size_t len, uint64_t* hash) const {
  uint64_t s = seq_.load(std::memory_order_acquire);
  if (s & 1) return false;  // being replaced
  if (len_.load(std::memory_order_relaxed) != len) return false;
  for (size_t i = 0; i * 8 < len; ++i)
    if (words_[i].load(std::memory_order_relaxed) != word_at(name, len, i)) return false;
  uint64_t h = hash_.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (seq_.load(std::memory_order_relaxed) != s) return false;  // replaced while we read
  *hash = h;
  return true;
}

void SessionKey::publish(const char* name, size_t len, uint64_t hash) {
  uint64_t s = seq_.load(std::memory_order_relaxed);
  // Another thread replacing it now: leave it to that one.
  if ((s & 1) || !seq_.compare_exchange_strong(s, s + 1, std::memory_order_acquire)) return;
  std::atomic_thread_fence(std::memory_order_release);
  len_.store(len, std::memory_order_relaxed);
  for (size_t i = 0; i * 8 < len; ++i) words_[i].store(word_at(name, len, i), std::memory_order_relaxed);
  hash_.store(hash, std::memory_order_relaxed);
  seq_.store(s + 2, std::memory_order_release);
}

uint64_t SessionKey::of(const char* name) {
  if (name == nullptr) return 0;
  size_t len = std::strlen(name);
  uint64_t h;
  if (lookup(name, len, &h)) return h;
  h = dft_hash64(name, len);
  if (len <= kWords * 8) publish(name, len, h);
  return h;
}

}  // namespace dftracer::io
