// Session: the one per-process tracing session. It starts and ends tracing
// (init / finalize: names the trace file, opens the sink, starts the
// writer), and owns what recording needs: the buffer registry
// (buffer_registry.h), the chunk pool and the writer. What the process does
// to it from outside (atexit, SIGTERM/SIGINT, fork) is in process_hooks.cc.
//
// The hot path (reserve / commit) is inline and static: one relaxed load of
// `enabled_`, a thread-local buffer pointer, a bounds check, a memcpy-sized
// store, a release store of the fill level and a prefetch for write a few
// records ahead (prefetch_for_write.h). What it reads of the session
// (`enabled_`, `session_`) are static, hidden, constant-initialized members:
// one PC-relative load each, no call to instance() and no guard check.
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

// Internal to the library: read PC-relative, not through the GOT.
#define DFTRACER_HIDDEN __attribute__((visibility("hidden")))

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
  // Whether a finalize stops the device source (dft_launch_scope::
  // before_finalize) first: only where the program's own thread finalizes
  // (dft_finalize, the exit handler, stop_tracing_threads). The signal
  // thread (SIGTERM/SIGINT, _exit) has no descriptors of the program's and
  // may finalize while the thread it interrupted holds a lock the source's
  // flush needs; an exec may fail and go on tracing.
  enum class DeviceSource { kStop, kLeave };
  void finalize(DeviceSource device = DeviceSource::kStop);
  // Before the process image ends without exit() (_exit, _Exit, exec*):
  // finalizes as finalize() does, and then removes the file if no thread
  // recorded anything into it (a forked child that only exec'd leaves no
  // stub: the exec'd image, if traced, writes its own file).
  void finalize_before_image_ends(DeviceSource device);
  // exec*: finalize_before_image_ends(kLeave), remembering to start again
  // with the same settings if the exec fails (resume_after_failed_exec).
  void suspend_for_exec();
  void resume_after_failed_exec();
  void flush();
  const char* trace_path() const;
  const char* trace_prefix() const;  // the <prefix> of trace_path()
  static bool enabled() { return enabled_.load(std::memory_order_relaxed); }
  int64_t pid() const { return pid_; }

  // --- hot path ---
  // Space reserved for one record: where to write it and what commit()
  // needs, carried in registers (the record's stores may alias the
  // buffer's fields, which would otherwise be read again).
  struct Reservation {
    unsigned char* p = nullptr;  // nullptr: tracing off, or dropped
    ThreadBuffer* tb = nullptr;
    Chunk* chunk = nullptr;
    uint32_t end = 0;  // the chunk's fill level once committed
  };

  // Space for a record of `nslots` slots in the caller's buffer (p nullptr:
  // tracing off, or dropped). Follow with commit() on the same thread.
  static inline Reservation reserve(uint32_t nslots) {
    if (!enabled_.load(std::memory_order_relaxed)) {
      note_call_while_off();
      return Reservation{};
    }
    Reservation r = reserve_in_chunk(nslots);
    if (__builtin_expect(r.p == nullptr, 0)) r = instance().reserve_slow(nslots);
    return r;
  }
  // The fast half, for a caller that has seen tracing on: space in the
  // thread's current chunk, or p nullptr when reserve() must decide (a
  // thread or session new to the buffer, the chunk full). No call, so the
  // caller's fast path needs no stack frame.
  static inline Reservation reserve_in_chunk(uint32_t nslots) {
    Reservation r;
    ThreadBuffer* tb = tls_buffer_;
    if (__builtin_expect(tb == nullptr || tb->session != session_.load(std::memory_order_relaxed), 0)) return r;
    const uint32_t off = tb->off;
    const uint32_t cap = tb->cap;
    const uint32_t end = off + nslots * kSlot;
    if (__builtin_expect(end > cap, 0)) return r;  // also no chunk yet (cap 0)
    r.tb = tb;
    r.chunk = tb->chunk;
    r.p = r.chunk->data + off;
    r.end = end;
    return r;
  }
  static inline void commit(const Reservation& r) {
    ThreadBuffer* tb = r.tb;
    tb->off = r.end;
    r.chunk->committed.store(r.end, std::memory_order_release);
    tb->recorded.store(tb->recorded.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // The line a few records ahead: inside this chunk, its unused tail
    // included (chunk_pool.h kChunkTailBytes), so no bound check.
    prefetch_for_write(r.chunk->data + r.end + kPrefetchAheadBytes);
  }

  // A recording call while tracing is off: after a finalize, counted
  // (dft_stats.events_after_finalize).
  static inline void note_call_while_off() {
    if (finalized_once_.load(std::memory_order_relaxed)) after_finalize_.fetch_add(1, std::memory_order_relaxed);
  }

  // --- used by the writer and dft_get_stats ---
  BufferRegistry& registry() { return registry_; }
  ChunkPool& pool() { return pool_; }
  static uint64_t after_finalize_count() { return after_finalize_.load(std::memory_order_relaxed); }
  Writer* writer() { return writer_.get(); }
  static uint64_t session() { return session_.load(std::memory_order_relaxed); }

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

  // __thread, not thread_local: a pointer needs no dynamic initialization,
  // and other translation units then read it without a TLS wrapper check.
  static __thread ThreadBuffer* tls_buffer_ DFTRACER_HIDDEN;

 private:
  Session() = default;
  ThreadBuffer* attach_thread();
  // reserve() past its fast half: attach the thread, refill its chunk.
  Reservation reserve_slow(uint32_t nslots);
  bool refill(ThreadBuffer* tb, uint32_t bytes);
  int start_session(const Config& cfg, int64_t process_id, std::string* error);
  void finalize_locked(bool discard_if_empty);
  void stop_device_source();

  // The device source's stop: 0 none under way, 1 a finalizing thread runs
  // before_finalize, 2 it returned. A second finalizer waits for 2, so the
  // source's last records come before the trace is finalized.
  std::atomic<int> device_stop_{0};

  std::mutex lifecycle_mu_;  // init / finalize / fork
  void set_enabled(bool on);  // enabled_ and its public mirror dft_hot.enabled
  // Read on the hot path: static (one session a process), hidden, constant-initialized.
  static std::atomic<bool> enabled_ DFTRACER_HIDDEN;
  static std::atomic<bool> finalized_once_ DFTRACER_HIDDEN;
  bool suspended_for_exec_ = false;  // guarded by lifecycle_mu_
  static std::atomic<uint64_t> session_ DFTRACER_HIDDEN;
  static std::atomic<uint64_t> after_finalize_ DFTRACER_HIDDEN;
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
