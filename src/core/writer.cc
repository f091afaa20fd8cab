#include "writer.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <new>
#include <string>

#include "clock.h"
#include "buffer_registry.h"
#include "diagnostics.h"
#include "process_hooks.h"
#include "thread_buffer.h"
#include "tracer_thread.h"

namespace dftracer {
namespace {

// A chunk handed to the sink: big enough to compress well, small enough that
// the writer never holds much formatted text.
constexpr size_t kEmitBytes = 1 << 20;

}  // namespace

Writer::Writer(BufferRegistry& registry, ChunkPool& pool, std::unique_ptr<TraceFormatter> formatter,
               std::unique_ptr<TraceSink> sink, SessionInfo info)
    : registry_(registry),
      pool_(pool),
      sink_(std::move(sink)),
      info_(std::move(info)),
      path_(sink_->path()),
      fmt_(std::move(formatter)),
      out_(2 * kEmitBytes) {}

Writer::~Writer() {
  if (running_) pthread_detach(thread_);
}

void Writer::forget_thread() {
  running_ = false;
  // The writer thread held the trace's descriptors in a table of its own:
  // the child (a copy of the forking thread's table) has none of them, and
  // the same numbers may be its own files.
  if (private_table_) sink_->forget_descriptors();
  // The parent's writer thread may have been waiting on these condition
  // variables when fork() copied them; destroying such a copy would wait
  // forever for a waiter that does not exist in the child. Start them over.
  new (&wake_) std::condition_variable();
  new (&flushed_) std::condition_variable();
}

void Writer::start() {
  // The preamble goes out as the first chunk, so even a process killed at
  // once leaves a file that says whose it is.
  fmt_->preamble(&out_);
  emit();
  // Signals go to the application's threads, never here: a SIGTERM handler
  // that finalizes must be able to join this thread. The thread inherits
  // the mask in force at creation.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  running_ = pthread_create(&thread_, nullptr, [](void* self) -> void* {
    pthread_setname_np(pthread_self(), "dftracer-writer");
    static_cast<Writer*>(self)->run();
    return nullptr;
  }, this) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!running_) return;
  // The writer thread owns the trace's descriptors: once it has its own
  // table (with its copies of them), this table's copies are closed, so
  // the program cannot close them under us or reuse their numbers for its
  // own files while we still write (tracer_thread.h says why the table).
  // Waiting here is brief: the thread's first act is taking the table.
  std::unique_lock<std::mutex> lock(mu_);
  flushed_.wait(lock, [&] { return table_settled_; });
  if (private_table_) {
    std::vector<int> fds;
    sink_->descriptors(&fds);
    for (int fd : fds) close_descriptor_raw(fd);
  }
}

void Writer::run() {
  {
    std::vector<int> keep;
    sink_->descriptors(&keep);
    bool own = become_tracer_thread(keep);
    std::lock_guard<std::mutex> lock(mu_);
    private_table_ = own;
    table_settled_ = true;
  }
  flushed_.notify_all();
  const auto interval = std::chrono::milliseconds(info_.config.flush_interval_ms);
  auto next_flush = std::chrono::steady_clock::now() + interval;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // Wake on a sealed chunk, a flush request, stop, or the timer.
    wake_.wait_until(lock, next_flush, [&] { return stop_ || pending_ || flush_requested_ > flush_done_; });
    if (stop_) break;
    pending_ = false;
    uint64_t want = flush_requested_;
    lock.unlock();
    {
      std::lock_guard<std::mutex> work(work_mu_);  // fork waits for this
      cycle();
      auto now = std::chrono::steady_clock::now();
      // Write out partial chunks when the timer is due or someone asked.
      if (now >= next_flush || want > flush_done_) {
        emit();
        next_flush = now + interval;
      }
    }
    lock.lock();
    if (want > flush_done_) {
      flush_done_ = want;
      flushed_.notify_all();
    }
  }
  lock.unlock();
  std::lock_guard<std::mutex> work(work_mu_);  // a fork waits for the file's last writes
  finish();
}

void Writer::cycle() {
  Clock::instance().recalibrate();
  registry_.snapshot(&scratch_);
  for (ThreadBuffer* tb : scratch_) drain(tb);
}

void Writer::drain(ThreadBuffer* tb) {
  account_drops(tb);
  if (tb->rchunk == nullptr) {
    // `exited` before `first`: the owner stores first, then (at exit)
    // exited, so once exited is seen, `first` is final. Loading them the
    // other way round could see no chunk yet and then "exited", and retire
    // a buffer whose events were never read.
    bool exited = tb->exited.load(std::memory_order_acquire);
    tb->rchunk = tb->first.load(std::memory_order_acquire);
    tb->roff = 0;
    if (tb->rchunk == nullptr) {
      if (exited) retire(tb);
      return;
    }
  }
  if (!tb->named) {
    fmt_->thread_name(tb->tid, tb->name[0] ? std::string(tb->name) : std::to_string(tb->tid), &out_);
    tb->named = true;
  }
  for (;;) {
    Chunk* c = tb->rchunk;
    // Read `sealed` before `committed`: once sealed, committed is final.
    bool sealed = c->sealed.load(std::memory_order_acquire);
    uint32_t end = c->committed.load(std::memory_order_acquire);
    while (tb->roff + 2 * kSlot <= end) {
      const RecordHeader* r = reinterpret_cast<const RecordHeader*>(c->data + tb->roff);
      uint32_t size = uint32_t{r->nslots} * kSlot;
      if (r->nslots < 2 || tb->roff + size > end) {  // cannot happen unless memory was corrupted
        tb->roff = end;
        break;
      }
      fmt_->event(r, tb->tid, &out_);
      ++records_;
      tb->roff += size;
      if (out_.size() >= kEmitBytes) emit();
    }
    if (!sealed) break;
    Chunk* next = c->next.load(std::memory_order_acquire);
    pool_.release(c);
    pool_.note_sealed_released();
    note_writer_progress();
    tb->rchunk = next;
    tb->roff = 0;
    if (next == nullptr) {  // sealed without a successor: the thread exited
      retire(tb);
      break;
    }
  }
}

void Writer::account_drops(ThreadBuffer* tb) {
  uint64_t d = tb->dropped.load(std::memory_order_relaxed);
  if (d != tb->accounted_drops) {
    dropped_.fetch_add(d - tb->accounted_drops, std::memory_order_relaxed);
    tb->accounted_drops = d;
    if (!warned_drops_) warn_first_drops();
  }
}

void Writer::warn_first_drops() {
  // Drops are counted in the `end` event, but a user sizing the pool needs
  // to hear it while the run can still be changed: once a session, from
  // here (the recording threads only count). Each recording thread holds a
  // chunk of its own, so with more threads than chunks -- 1,000 threads on
  // the default 256 chunks -- most threads lose every event.
  warned_drops_ = true;
  const size_t cap = pool_.cap_bytes(), chunk = pool_.chunk_bytes();
  const size_t threads = scratch_.size();
  const size_t per_threads = 2 * threads * chunk;
  // With room for every thread's chunk twice over, the pool filled with
  // sealed chunks the writer had not yet written: the advice is a larger
  // pool than the one set, never one below it.
  const std::string advice =
      per_threads > cap ? "set DFTRACER_BUFFER_SIZE to at least 2 x threads x chunk size (" +
                              std::to_string(per_threads) + " here)"
                        : "the writer fell behind the recording threads; set DFTRACER_BUFFER_SIZE above " +
                              std::to_string(cap) + " (" + std::to_string(2 * cap) + ", say)";
  log_warn("recording threads are dropping events (counted as \"dropped\" in the trace's end event): the buffer pool "
           "is full. DFTRACER_BUFFER_SIZE=" + std::to_string(cap) + " bytes holds " + std::to_string(cap / chunk) +
           " chunks of DFTRACER_CHUNK_SIZE=" + std::to_string(chunk) + " and each of the " + std::to_string(threads) +
           " recording threads holds at least one; " + advice +
           (pool_.policy() == ChunkPool::Policy::kDrop ? " or DFTRACER_OVERFLOW=block" : ""));
}

void Writer::retire(ThreadBuffer* tb) {
  // The owner has exited, so its drop count is final: count the last ones
  // before the buffer is handed to the next new thread.
  account_drops(tb);
  registry_.retire(tb);
}

void Writer::emit() {
  if (out_.size() == 0) return;
  uint64_t lines = fmt_->lines() - emitted_lines_;
  emitted_lines_ = fmt_->lines();
  if (sink_->write_chunk(out_.data(), out_.size(), lines)) {
    events_written_.fetch_add(lines, std::memory_order_relaxed);
  } else {
    lost_lines_ += lines;
    dropped_.fetch_add(lines, std::memory_order_relaxed);
  }
  bytes_written_.store(sink_->bytes_written(), std::memory_order_relaxed);
  out_.clear();
  note_writer_progress();
}

void Writer::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_ || !running_) return;
  uint64_t ticket = ++flush_requested_;
  wake_.notify_one();
  flushed_.wait_for(lock, std::chrono::seconds(30), [&] { return flush_done_ >= ticket || stop_; });
}

void Writer::stop(int64_t tid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stop_tid_ = tid;
  }
  wake_.notify_one();
  flushed_.notify_all();
  if (running_) {
    pthread_join(thread_, nullptr);
    running_ = false;
  }
  if (!finished_) finish();  // the thread never started
}

void Writer::finish() {
  finished_ = true;
  cycle();  // whatever came in while the thread was stopping
  fmt_->end(stop_tid_, Clock::instance().now_ns(), fmt_->lines() - lost_lines_,
            dropped_.load(std::memory_order_relaxed), &out_);
  emit();
  sink_->close();
  note_trace_file_complete();
}

}  // namespace dftracer
