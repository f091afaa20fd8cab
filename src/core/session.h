// Session: the one per-process tracing session. It starts and ends tracing
// (init / finalize: names the trace file, opens the sink, starts the
// writer), and owns what recording needs: the buffer registry
// (buffer_registry.h), the chunk pool and the writer. What the process does
// to it from outside (atexit, SIGTERM/SIGINT, fork) is in process_hooks.cc.
//
// The hot path (reserve / commit) is inline: one relaxed load of `enabled_`,
// a thread-local buffer pointer, a bounds check, a memcpy-sized store, a
// release store of the fill level and a prefetch for write a few records
// ahead (prefetch_for_write.h).
#ifndef DFTRACER_SRC_CORE_SESSION_H_
#define DFTRACER_SRC_CORE_SESSION_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "buffer_registry.h"
#include "chunk_pool.h"
#include "config.h"
#include "prefetch_for_write.h"
#include "record.h"
#include "thread_buffer.h"

namespace dftracer {

class Writer;

class Session {
 public:
  static Session& instance();

  // --- lifecycle (not hot) ---
  int init(const char* log_file, const char* data_dir, int64_t process_id);
  int init_from_env();
  // Tracing goes on in a file named from `log_file` (a prefix, as for
  // init): the current file is renamed, its events kept. 0 on success, -1
  // (one-line *error, nothing changed) otherwise or when tracing is off.
  int relocate(const char* log_file, std::string* error);
  void finalize();
  // Before the process image ends without exit() (_exit, _Exit, exec*):
  // finalizes as finalize() does, and then removes the file if no thread
  // recorded anything into it (a forked child that only exec'd leaves no
  // stub: the exec'd image, if traced, writes its own file).
  void finalize_before_image_ends();
  // exec*: finalize_before_image_ends(), remembering to start again with
  // the same settings if the exec fails (resume_after_failed_exec).
  void suspend_for_exec();
  void resume_after_failed_exec();
  void flush();
  const char* trace_path() const;
  const char* trace_prefix() const;  // the <prefix> of trace_path()
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  int64_t pid() const { return pid_; }

  // --- hot path ---
  // Space for a record of `nslots` slots in the caller's buffer, or nullptr
  // (tracing off, or dropped). Follow with commit(*tb_out, nslots) on the
  // same thread. (The buffer is returned so the thread-local is read once.)
  inline unsigned char* reserve(uint32_t nslots, ThreadBuffer** tb_out) {
    if (!enabled_.load(std::memory_order_relaxed)) {
      if (finalized_once_.load(std::memory_order_relaxed)) after_finalize_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    ThreadBuffer* tb = tls_buffer_;
    if (__builtin_expect(tb == nullptr || tb->session != session_.load(std::memory_order_relaxed), 0)) {
      tb = attach_thread();
      if (tb == nullptr) return nullptr;
    }
    uint32_t bytes = nslots * kSlot;
    if (__builtin_expect(tb->off + bytes > tb->cap, 0)) {
      if (!refill(tb, bytes)) return nullptr;
    }
    *tb_out = tb;
    return tb->chunk->data + tb->off;
  }
  static inline void commit(ThreadBuffer* tb, uint32_t nslots) {
    Chunk* c = tb->chunk;
    uint32_t off = tb->off + nslots * kSlot;
    tb->off = off;
    c->committed.store(off, std::memory_order_release);
    tb->recorded.store(tb->recorded.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // The line a few records ahead, inside this chunk (past its end lies
    // another chunk, perhaps being read by the writer).
    if (__builtin_expect(off + kPrefetchAheadBytes < tb->cap, 1)) prefetch_for_write(c->data + off + kPrefetchAheadBytes);
  }

  // --- used by the writer and dft_get_stats ---
  BufferRegistry& registry() { return registry_; }
  ChunkPool& pool() { return pool_; }
  uint64_t after_finalize_count() const { return after_finalize_.load(std::memory_order_relaxed); }
  Writer* writer() { return writer_.get(); }
  uint64_t session() const { return session_.load(std::memory_order_relaxed); }

  // The calling thread's events are written as the main thread's from here
  // on (dft_record_cut). False when tracing is off.
  bool write_as_main_thread();
  uint64_t start_ticks() const { return start_ticks_.load(std::memory_order_relaxed); }

  // Thread exit (from a thread_local destructor).
  void on_thread_exit(ThreadBuffer* tb);

  // --- process hooks (process_hooks.cc) ---
  // pthread_atfork: hold every lock across fork(), so the child's copies
  // are consistent; the child abandons the parent's events and, if tracing
  // was on, starts its own file.
  void prepare_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

  static thread_local ThreadBuffer* tls_buffer_;

 private:
  Session() = default;
  ThreadBuffer* attach_thread();
  bool refill(ThreadBuffer* tb, uint32_t bytes);
  int start_session(const Config& cfg, int64_t process_id, std::string* error);
  void finalize_locked(bool discard_if_empty);

  std::mutex lifecycle_mu_;  // init / finalize / fork
  void set_enabled(bool on);  // enabled_ and its public mirror dft_hot.enabled
  std::atomic<bool> enabled_{false};
  std::atomic<bool> finalized_once_{false};
  bool suspended_for_exec_ = false;  // guarded by lifecycle_mu_
  std::atomic<uint64_t> session_{0};
  std::atomic<uint64_t> after_finalize_{0};
  Config config_;
  int64_t pid_ = 0;
  int64_t main_tid_ = 0;  // the thread that started the session
  std::atomic<uint64_t> start_ticks_{0};  // Clock ticks when the session started
  std::string path_;
  std::string app_;  // the <app> of path_

  BufferRegistry registry_;
  ChunkPool pool_;
  std::unique_ptr<Writer> writer_;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_SESSION_H_
