#include "buffer_registry.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <set>

#include "session.h"
#include "writer.h"

namespace dftracer {
namespace {

// Hands the thread's buffer back when the thread exits. Only constructed on
// a thread's first record, so the hot path's thread_local stays trivial.
struct ThreadExitHook {
  ThreadBuffer* tb = nullptr;
  ~ThreadExitHook() {
    if (tb != nullptr) Session::instance().on_thread_exit(tb);
  }
};
thread_local ThreadExitHook tls_exit_hook;

}  // namespace

void BufferRegistry::clear_for_reuse(ThreadBuffer* tb) {
  // The buffer's count leaves with it: keep it, or dft_get_stats would
  // forget the events of every thread that has exited.
  if (tb->in_use && tb->session == current_session_) recorded_by_gone_ += tb->recorded.load(std::memory_order_relaxed);
  tb->recorded.store(0, std::memory_order_relaxed);
  tb->first.store(nullptr, std::memory_order_relaxed);
  tb->rchunk = nullptr;
  tb->exited.store(false, std::memory_order_relaxed);
  tb->in_use = false;
}

uint64_t BufferRegistry::events_recorded() {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = recorded_by_gone_;
  for (ThreadBuffer* tb : buffers_)
    if (tb->in_use && tb->session == current_session_) n += tb->recorded.load(std::memory_order_relaxed);
  return n;
}

ThreadBuffer* BufferRegistry::attach(ThreadBuffer* tb, uint64_t session) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tb == nullptr) {
    for (ThreadBuffer* b : buffers_) {
      if (!b->in_use) { tb = b; break; }
    }
    if (tb == nullptr) {
      tb = new ThreadBuffer();
      buffers_.push_back(tb);
    }
    tb->in_use = true;
    tb->exited.store(false, std::memory_order_relaxed);
    tb->chunk = nullptr;
    tb->first.store(nullptr, std::memory_order_relaxed);
    tb->rchunk = nullptr;
    tb->roff = 0;
    tb->named = false;
    tb->dropped.store(0, std::memory_order_relaxed);
    tb->accounted_drops = 0;
    tb->tid = static_cast<int64_t>(syscall(SYS_gettid));
    tb->name[0] = '\0';
    pthread_getname_np(pthread_self(), tb->name, sizeof tb->name);
    tls_exit_hook.tb = tb;
  }
  // Keep the chunk this thread already holds (from an earlier session),
  // emptied; otherwise get one on the first record. Its count starts over:
  // stats are per session.
  if (tb->chunk != nullptr) tb->chunk->reset();
  tb->recorded.store(0, std::memory_order_relaxed);
  tb->off = 0;
  tb->cap = tb->chunk != nullptr ? tb->chunk->capacity : 0;
  tb->session = session;
  tb->first.store(tb->chunk, std::memory_order_release);
  return tb;
}

void BufferRegistry::write_as(ThreadBuffer* tb, int64_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  tb->tid = tid;
  tb->named = true;
}

void BufferRegistry::begin_session(std::atomic<uint64_t>* session) {
  std::lock_guard<std::mutex> lock(mu_);
  current_session_ = session->fetch_add(1, std::memory_order_relaxed) + 1;
  session_open_ = true;
  recorded_by_gone_ = 0;
  for (ThreadBuffer* tb : buffers_) {
    tb->first.store(nullptr, std::memory_order_relaxed);
    tb->rchunk = nullptr;
    tb->roff = 0;
    tb->named = false;
    tb->accounted_drops = tb->dropped.load(std::memory_order_relaxed);
  }
}

void BufferRegistry::end_session(ChunkPool* pool) {
  // Chunks that are some thread's current one stay with that thread; the
  // rest went back to the pool in the writer's last cycle, except those of
  // threads that exited after it.
  std::lock_guard<std::mutex> lock(mu_);
  session_open_ = false;
  for (ThreadBuffer* tb : buffers_) {
    if (!tb->in_use || !tb->exited.load(std::memory_order_acquire)) continue;
    Chunk* c = tb->rchunk != nullptr ? tb->rchunk : tb->first.load(std::memory_order_acquire);
    while (c != nullptr) {
      Chunk* next = c->next.load(std::memory_order_acquire);
      pool->release(c);
      pool->note_sealed_released();
      c = next;
    }
    clear_for_reuse(tb);
  }
}

bool BufferRegistry::on_thread_exit(ThreadBuffer* tb, const std::atomic<uint64_t>& session, ChunkPool* pool) {
  std::lock_guard<std::mutex> lock(mu_);
  if (session_open_ && tb->session == session.load(std::memory_order_relaxed)) {
    // Seal with no successor: the writer drains it (and counts the thread's
    // drops), then retires the buffer.
    if (tb->chunk != nullptr) {
      pool->note_sealed();
      tb->chunk->sealed.store(true, std::memory_order_release);
      tb->chunk = nullptr;
    }
    tb->exited.store(true, std::memory_order_release);
    return true;
  }
  // Tracing is off (or this buffer is from an old session): nothing to write.
  if (tb->chunk != nullptr) pool->release(tb->chunk);
  tb->chunk = nullptr;
  clear_for_reuse(tb);
  return false;
}

void BufferRegistry::retire(ThreadBuffer* tb) {
  std::lock_guard<std::mutex> lock(mu_);
  clear_for_reuse(tb);
}

void BufferRegistry::snapshot(std::vector<ThreadBuffer*>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (ThreadBuffer* tb : buffers_)
    if (tb->in_use) out->push_back(tb);
}

void BufferRegistry::abandon_after_fork(const std::vector<Chunk*>& pool_free) {
  const std::set<Chunk*> pooled(pool_free.begin(), pool_free.end());
  std::set<Chunk*> parents_chunks;
  for (ThreadBuffer* tb : buffers_) {
    for (Chunk* c = tb->rchunk ? tb->rchunk : tb->first.load(std::memory_order_relaxed); c != nullptr;
         c = c->next.load(std::memory_order_relaxed))
      parents_chunks.insert(c);
    if (tb->chunk != nullptr) parents_chunks.insert(tb->chunk);
    tb->chunk = nullptr;
    clear_for_reuse(tb);
  }
  tls_exit_hook.tb = nullptr;
  recorded_by_gone_ = 0;  // the parent's events, not the child's
  for (Chunk* c : parents_chunks)
    if (!pooled.count(c)) ChunkPool::free_chunk(c);
}

}  // namespace dftracer
