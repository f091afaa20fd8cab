// ThreadBuffer: one recording thread's chain of chunks. The owner appends
// records with no lock, allocation or syscall; the writer follows the chain
// from its read position. ThreadBuffer objects are never freed: a thread
// that exits seals its chain, the writer drains it and marks the object
// reusable for the next new thread, so a late reader never sees freed memory.
#ifndef DFTRACER_SRC_CORE_THREAD_BUFFER_H_
#define DFTRACER_SRC_CORE_THREAD_BUFFER_H_

#include <atomic>
#include <cstdint>

#include "chunk_pool.h"

namespace dftracer {

// Cache-line aligned, owner fields first: two threads' buffers never share
// a line, so recording on one thread never invalidates another's.
struct alignas(64) ThreadBuffer {
  // --- owner thread only (plus the writer once the owner has exited) ---
  Chunk* chunk = nullptr;  // current chunk (nullptr: none could be had yet)
  uint32_t off = 0;        // bytes used in `chunk`
  uint32_t cap = 0;        // chunk->capacity, or 0 without a chunk
  uint64_t session = 0;    // tracing session this buffer belongs to
  uint32_t refill_backoff = 0;  // drop path: events to skip before retrying the pool

  // --- read by the writer ---
  std::atomic<Chunk*> first{nullptr};  // first chunk of this session's chain
  std::atomic<uint64_t> recorded{0};   // owner-written, relaxed
  std::atomic<uint64_t> dropped{0};    // owner-written, relaxed
  std::atomic<bool> exited{false};     // owner has gone; chain is final
  int64_t tid = 0;
  char name[64] = {0};  // thread name at attach, for the thread_name event

  // --- writer only ---
  Chunk* rchunk = nullptr;
  uint32_t roff = 0;
  bool named = false;  // thread_name event written this session
  uint64_t accounted_drops = 0;

  // --- registry (guarded by the registry mutex) ---
  bool in_use = false;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_THREAD_BUFFER_H_
