// Writer: the background thread that drains every thread's chunks, has the
// formatter turn each record into bytes and hands them, a chunk at a time,
// to the sink (the file format is the formatter's, where the bytes go the
// sink's). It wakes when a chunk is sealed,
// on dft_flush, and at least every flush interval, so a crash loses at most
// one interval of events. It converts ticks to epoch time, so the clock is
// recalibrated here, not on the recording threads.
#ifndef DFTRACER_SRC_CORE_WRITER_H_
#define DFTRACER_SRC_CORE_WRITER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <pthread.h>
#include <vector>

#include "out_buffer.h"
#include "session_info.h"
#include "trace_formatter.h"
#include "trace_sink.h"

namespace dftracer {

class BufferRegistry;
class ChunkPool;
struct ThreadBuffer;

class Writer {
 public:
  Writer(BufferRegistry& registry, ChunkPool& pool, std::unique_ptr<TraceFormatter> formatter,
         std::unique_ptr<TraceSink> sink, SessionInfo info);
  ~Writer();

  void start();
  // Drains everything, writes the formatter's end, closes the sink and
  // joins the thread. `tid` is the finalizing thread. The file's last
  // writes and its close happen on the writer thread (it alone holds the
  // descriptors, tracer_thread.h); here only if that thread never started.
  void stop(int64_t tid);
  // After stop(): whether no thread recorded anything this session (nor
  // lost anything): the file holds only what the writer wrote of itself.
  bool recorded_nothing() const { return records_ == 0 && dropped_.load(std::memory_order_relaxed) == 0; }
  // A chunk was sealed: wake up now. Takes the writer's mutex so the wakeup
  // cannot fall between the writer's check and its wait (once per chunk,
  // never per event).
  void notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = true;
    }
    wake_.notify_one();
  }
  // Writes everything recorded so far, then returns.
  void flush();

  uint64_t events_written() const { return events_written_.load(std::memory_order_relaxed); }
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  uint64_t events_dropped() const { return dropped_.load(std::memory_order_relaxed); }
  const std::string& path() const { return path_; }

  // fork(): the child has no writer thread. After forget_thread() the
  // Writer can be destroyed there without joining anything and nothing is
  // written; the trace's descriptors are closed there only where the
  // child has a copy of them (the writer thread shared the table).
  // lock_for_fork() takes the wake-up lock, then waits until the writer is
  // between cycles, so the child never inherits its vectors, out buffer or
  // compressor half-changed. In that order: the writer drops the work lock
  // and then blocks on the wake-up lock, so it cannot take the work lock
  // again and starve the fork (it loops without sleeping while threads
  // keep sealing chunks).
  void lock_for_fork() {
    mu_.lock();
    work_mu_.lock();
  }
  void unlock_after_fork() {
    work_mu_.unlock();
    mu_.unlock();
  }
  void forget_thread();

 private:
  void run();
  void cycle();
  void drain(ThreadBuffer* tb);
  void account_drops(ThreadBuffer* tb);
  void warn_first_drops();  // one warning a session, naming DFTRACER_BUFFER_SIZE
  void retire(ThreadBuffer* tb);
  void emit();
  void finish();  // the last drain, the end event, the sink's close

  BufferRegistry& registry_;
  ChunkPool& pool_;
  std::unique_ptr<TraceSink> sink_;
  SessionInfo info_;
  std::string path_;
  std::unique_ptr<TraceFormatter> fmt_;
  OutBuffer out_;
  uint64_t emitted_lines_ = 0;  // fmt_->lines() at the last emit
  uint64_t lost_lines_ = 0;  // formatted but not written (I/O failure)
  std::vector<ThreadBuffer*> scratch_;
  uint64_t records_ = 0;  // writer only: records read from the threads' buffers
  bool warned_drops_ = false;  // writer only

  pthread_t thread_{};  // a plain handle, so a forked child can forget it
  bool running_ = false;
  std::mutex work_mu_;  // held by the writer thread through each cycle and emit
  std::mutex mu_;       // the wake-up state below
  std::condition_variable wake_;
  std::condition_variable flushed_;
  bool stop_ = false;
  int64_t stop_tid_ = 0;          // guarded by mu_: the finalizing thread
  bool table_settled_ = false;    // guarded by mu_: the thread has taken its table
  bool private_table_ = false;    // the thread holds the trace's descriptors alone
  bool finished_ = false;         // finish() ran
  bool pending_ = false;          // guarded by mu_: sealed chunks to drain
  uint64_t flush_requested_ = 0;  // guarded by mu_
  uint64_t flush_done_ = 0;       // guarded by mu_

  std::atomic<uint64_t> events_written_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_WRITER_H_
