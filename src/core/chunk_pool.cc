#include "chunk_pool.h"

#include <chrono>
#include <cstdlib>
#include <new>

namespace dftracer {

void ChunkPool::configure(size_t cap_bytes, size_t chunk_bytes, Policy policy) {
  std::lock_guard<std::mutex> lock(mu_);
  chunk_bytes = (chunk_bytes + 63) & ~size_t{63};
  if (chunk_bytes != chunk_bytes_.load(std::memory_order_relaxed)) {
    for (Chunk* c : free_) {  // free chunks of the old size go back to the OS
      in_use_bytes_.fetch_sub(bytes_of(c), std::memory_order_relaxed);
      ::operator delete(c, std::align_val_t{64});
    }
    free_.clear();
    free_count_.store(0, std::memory_order_relaxed);
  }
  cap_bytes_.store(cap_bytes, std::memory_order_relaxed);
  chunk_bytes_.store(chunk_bytes, std::memory_order_relaxed);
  policy_ = policy;
}

Chunk* ChunkPool::allocate_locked() {
  if (!free_.empty()) {
    Chunk* c = free_.back();
    free_.pop_back();
    free_count_.store(free_.size(), std::memory_order_relaxed);
    c->reset();
    return c;
  }
  size_t chunk = chunk_bytes_.load(std::memory_order_relaxed);
  size_t total = sizeof(Chunk) + chunk + kChunkTailBytes;
  size_t used = in_use_bytes_.load(std::memory_order_relaxed);
  if (used + total > cap_bytes_.load(std::memory_order_relaxed)) return nullptr;
  void* mem = ::operator new(total, std::align_val_t{64}, std::nothrow);
  if (mem == nullptr) return nullptr;
  Chunk* c = new (mem) Chunk();
  c->capacity = static_cast<uint32_t>(chunk);
  used += total;
  in_use_bytes_.store(used, std::memory_order_relaxed);
  if (used > peak_bytes_.load(std::memory_order_relaxed)) peak_bytes_.store(used, std::memory_order_relaxed);
  return c;
}

Chunk* ChunkPool::acquire(bool may_block) {
  std::unique_lock<std::mutex> lock(mu_);
  Chunk* c = allocate_locked();
  if (c != nullptr || !may_block || policy_ == Policy::kDrop) return c;
  // Block until the writer returns a chunk. If no sealed chunk is waiting for
  // the writer, none can come back (every chunk is some live thread's
  // current one): waiting would deadlock, so the event is dropped instead.
  // A writer stuck for 10 s (a hung file system) also ends the wait.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((c = allocate_locked()) == nullptr) {
    if (sealed_waiting_.load(std::memory_order_relaxed) <= 0) return nullptr;
    if (returned_.wait_until(lock, deadline) == std::cv_status::timeout) return allocate_locked();
  }
  return c;
}

void ChunkPool::release(Chunk* c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (c->capacity != chunk_bytes_.load(std::memory_order_relaxed)) {
      in_use_bytes_.fetch_sub(bytes_of(c), std::memory_order_relaxed);
      ::operator delete(c, std::align_val_t{64});
    } else {
      free_.push_back(c);
      free_count_.store(free_.size(), std::memory_order_relaxed);
    }
  }
  returned_.notify_all();
}

void ChunkPool::free_chunk(Chunk* c) { ::operator delete(c, std::align_val_t{64}); }

void ChunkPool::reset_after_fork() {
  // Free chunks are plain memory and stay usable; in-use ones belonged to
  // the parent's threads and are forgotten.
  size_t kept = 0;
  for (Chunk* c : free_) kept += bytes_of(c);
  in_use_bytes_.store(kept, std::memory_order_relaxed);
  peak_bytes_.store(kept, std::memory_order_relaxed);
  sealed_waiting_.store(0, std::memory_order_relaxed);
  new (&returned_) std::condition_variable();
}

}  // namespace dftracer
