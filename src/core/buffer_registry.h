// BufferRegistry: every recording thread's ThreadBuffer, for the session
// (attach on a thread's first record, hand back at thread exit) and the
// writer (snapshot to drain, retire once drained). ThreadBuffer objects are
// never freed, only reused, so the writer never reads freed memory. All of
// it is off the hot path: a thread comes here once a session.
#ifndef DFTRACER_SRC_CORE_BUFFER_REGISTRY_H_
#define DFTRACER_SRC_CORE_BUFFER_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "chunk_pool.h"
#include "thread_buffer.h"

namespace dftracer {


class BufferRegistry {
 public:
  // The calling thread's buffer for session `session`: `tb` (its old one,
  // emptied, keeping its chunk) or, when tb is null, a free or new one
  // named after the thread. Arranges for on_thread_exit at thread exit.
  ThreadBuffer* attach(ThreadBuffer* tb, uint64_t session);
  // The buffer's events are written with `tid` (another thread's), and no
  // thread_name line of its own (dft_record_cut, on the signal thread).
  void write_as(ThreadBuffer* tb, int64_t tid);

  // A new session: bumps `*session` (so every live thread re-attaches on
  // its next record) and has the writer start every chain afresh. Both under
  // the registry lock: a thread attaching meanwhile must not keep a chain
  // this reset cleared.
  void begin_session(std::atomic<uint64_t>* session);
  // The writer's last drain is done: chains of threads that exited after it
  // are freed (their events came too late).
  void end_session(ChunkPool* pool);
  // The thread owning `tb` exits. If its buffer belongs to the live session
  // its chain is sealed for the writer to drain and this returns true: the
  // caller then wakes the writer, after the registry lock is released (see
  // the lock order in process_hooks.cc). Otherwise its chunk goes back to
  // `pool`. (`session` is read under the lock, where begin_session bumps it.)
  bool on_thread_exit(ThreadBuffer* tb, const std::atomic<uint64_t>& session, ChunkPool* pool);

  // --- the writer ---
  void snapshot(std::vector<ThreadBuffer*>* out);  // buffers in use
  void retire(ThreadBuffer* tb);                   // exited and drained: reusable

  // --- dft_get_stats ---
  // Events recorded in the last session begun, by every thread, those that
  // have exited (their buffers retired or reused) included: it never goes
  // down until the next begin_session, so "nothing recorded" is reliable.
  uint64_t events_recorded();

  // --- fork ---
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }
  // In the child: every buffer holds the parent's events. Frees all their
  // chunks and marks every buffer free, without locking (one thread left).
  // `pool_free`: the pool's free list, whose chunks must not be freed here: a
  // buffer that was drained and retired may still point at chunks the writer
  // already gave back to the pool (freeing them left the free list dangling:
  // heap-use-after-free in the child, found by the ASan fork test).
  void abandon_after_fork(const std::vector<Chunk*>& pool_free);

 private:
  std::mutex mu_;
  std::vector<ThreadBuffer*> buffers_;  // never shrinks; entries reused
  // From begin_session until end_session (guarded by mu_). A thread exiting
  // meanwhile hands its chain to the writer even though recording is
  // already off: finalize may be draining it.
  bool session_open_ = false;
  // The session begin_session started, and what threads recorded in it
  // before their buffers were cleared for reuse (guarded by mu_).
  uint64_t current_session_ = 0;
  uint64_t recorded_by_gone_ = 0;
  // Marks `tb` free for the next new thread, its chain forgotten and its
  // events counted in recorded_by_gone_ (caller holds mu_).
  void clear_for_reuse(ThreadBuffer* tb);
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_BUFFER_REGISTRY_H_
