// Logger: the one per-process tracing session. It owns the registry of
// thread buffers, the chunk pool, the writer thread and the trace file, and
// handles the process lifecycle: init / finalize, atexit, SIGTERM/SIGINT,
// and fork (the child starts its own file and writes none of the parent's
// events).
//
// The hot path (Logger::record) is inline: one relaxed load of `enabled_`,
// a thread-local buffer pointer, a bounds check, a memcpy-sized store and a
// release store of the fill level.
#ifndef DFTRACER_SRC_CORE_LOGGER_H_
#define DFTRACER_SRC_CORE_LOGGER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chunk_pool.h"
#include "config.h"
#include "record.h"
#include "thread_buffer.h"

namespace dftracer {

class Writer;

class Logger {
 public:
  static Logger& instance();

  // --- lifecycle (not hot) ---
  int init(const char* log_file, const char* data_dir, int64_t process_id);
  int init_from_env();
  void finalize();
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
    tb->off += nslots * kSlot;
    tb->chunk->committed.store(tb->off, std::memory_order_release);
    tb->recorded.store(tb->recorded.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // --- used by the writer ---
  void snapshot_buffers(std::vector<ThreadBuffer*>* out);
  void retire_buffer(ThreadBuffer* tb);  // exited and drained: reusable
  ChunkPool& pool() { return pool_; }
  uint64_t after_finalize_count() const { return after_finalize_.load(std::memory_order_relaxed); }
  Writer* writer() { return writer_.get(); }
  uint64_t session() const { return session_.load(std::memory_order_relaxed); }

  // Thread exit (from a thread_local destructor).
  void on_thread_exit(ThreadBuffer* tb);

  static thread_local ThreadBuffer* tls_buffer_;

 private:
  Logger() = default;
  ThreadBuffer* attach_thread();
  bool refill(ThreadBuffer* tb, uint32_t bytes);
  int start_session(const Config& cfg, int64_t process_id, std::string* error);
  void install_process_hooks();
  void finalize_locked();

  static void at_exit();
  static void on_signal(int sig);
  static void fork_prepare();
  static void fork_parent();
  static void fork_child();

  std::mutex lifecycle_mu_;  // init / finalize / fork
  void set_enabled(bool on);  // enabled_ and its public mirror dft_hot.enabled
  std::atomic<bool> enabled_{false};
  std::atomic<bool> finalized_once_{false};
  std::atomic<uint64_t> session_{0};
  std::atomic<uint64_t> after_finalize_{0};
  Config config_;
  int64_t pid_ = 0;
  int64_t process_id_override_ = -1;
  std::string path_;

  std::mutex registry_mu_;
  std::vector<ThreadBuffer*> buffers_;  // never shrinks; entries reused
  // From start_session until the writer's last drain is done (guarded by
  // registry_mu_). A thread exiting meanwhile hands its chain to the writer
  // even though recording is already off: finalize may be draining it.
  bool session_open_ = false;

  ChunkPool pool_;
  std::unique_ptr<Writer> writer_;
  std::once_flag hooks_once_;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_LOGGER_H_
