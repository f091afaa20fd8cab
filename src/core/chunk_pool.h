// ChunkPool: the capped supply of buffer chunks that recording threads fill
// and the writer drains. Memory for traces never exceeds the cap: when every
// chunk is in use, a recording thread either waits for the writer to return
// one (`block`, the default) or drops the event and counts it (`drop`).
//
// A chunk is a header, `capacity` bytes of 16-byte slots and an unused tail
// (kChunkTailBytes). The owning
// thread appends records and publishes its fill level in `committed`
// (release); the writer reads [its offset, committed) at any time. When the
// owner moves on it links `next` and then sets `sealed`, after which
// `committed` is final and the writer may recycle the chunk once read.
#ifndef DFTRACER_SRC_CORE_CHUNK_POOL_H_
#define DFTRACER_SRC_CORE_CHUNK_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "prefetch_for_write.h"

namespace dftracer {

// Past its `capacity` each chunk has this many bytes that no record uses:
// the record path prefetches kPrefetchAheadBytes past its fill level with
// no bound check, and the line it asks for is always the chunk's own (never
// the next allocation's, perhaps a chunk the writer is reading).
constexpr size_t kChunkTailBytes = kPrefetchAheadBytes + kCacheLine;

struct Chunk {
  std::atomic<uint32_t> committed{0};
  std::atomic<bool> sealed{false};
  std::atomic<Chunk*> next{nullptr};
  uint32_t capacity = 0;
  alignas(64) unsigned char data[1];  // capacity bytes follow

  void reset() {
    committed.store(0, std::memory_order_relaxed);
    sealed.store(false, std::memory_order_relaxed);
    next.store(nullptr, std::memory_order_relaxed);
  }
};

class ChunkPool {
 public:
  enum class Policy { kBlock, kDrop };

  ChunkPool() = default;
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // Sets the cap and chunk size for the next session. Existing chunks of
  // another size are kept for their current owners and freed on release.
  void configure(size_t cap_bytes, size_t chunk_bytes, Policy policy);

  // A fresh chunk, or nullptr when the cap is reached and (kDrop) at once,
  // or (kBlock) when no chunk can come back because none is waiting for the
  // writer, or the wait exceeds `max_wait_ms`.
  Chunk* acquire(bool may_block);

  // Back from the writer (or from a thread that never used it).
  void release(Chunk* c);

  // A chunk was sealed and waits for the writer: a blocked acquire can
  // expect one back. Balanced by release of that chunk.
  void note_sealed() { sealed_waiting_.fetch_add(1, std::memory_order_relaxed); }
  void note_sealed_released() { sealed_waiting_.fetch_sub(1, std::memory_order_relaxed); }

  // Cheap check for the drop path: is a chunk likely available now?
  bool maybe_available() const {
    return free_count_.load(std::memory_order_relaxed) > 0 ||
           in_use_bytes_.load(std::memory_order_relaxed) + chunk_bytes_.load(std::memory_order_relaxed) <=
               cap_bytes_.load(std::memory_order_relaxed);
  }

  size_t in_use_bytes() const { return in_use_bytes_.load(std::memory_order_relaxed); }
  size_t peak_bytes() const { return peak_bytes_.load(std::memory_order_relaxed); }
  size_t cap_bytes() const { return cap_bytes_.load(std::memory_order_relaxed); }
  size_t chunk_bytes() const { return chunk_bytes_.load(std::memory_order_relaxed); }
  Policy policy() const { return policy_; }
  void reset_peak() { peak_bytes_.store(in_use_bytes(), std::memory_order_relaxed); }

  // fork(): the child forgets every chunk the parent's threads held (their
  // pages stay copy-on-write and untouched) and starts counting from zero.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }
  void reset_after_fork();
  // The free list, for the forked child only (one thread, no lock needed).
  const std::vector<Chunk*>& free_list_in_child() const { return free_; }
  // Frees a chunk outside the pool's accounting (the forked child's copies
  // of the parent's chunks).
  static void free_chunk(Chunk* c);

 private:
  static size_t bytes_of(const Chunk* c) { return sizeof(Chunk) + c->capacity + kChunkTailBytes; }
  Chunk* allocate_locked();

  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<Chunk*> free_;  // guarded by mu_
  std::atomic<size_t> free_count_{0};
  std::atomic<size_t> in_use_bytes_{0};  // allocated, free list included
  std::atomic<size_t> peak_bytes_{0};
  std::atomic<size_t> cap_bytes_{64u << 20};
  std::atomic<size_t> chunk_bytes_{256u << 10};
  std::atomic<long> sealed_waiting_{0};
  Policy policy_ = Policy::kBlock;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_CHUNK_POOL_H_
