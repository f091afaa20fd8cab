#include "writer.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <new>

#include "clock.h"
#include "hash.h"
#include "json_escape.h"
#include "logger.h"
#include "thread_buffer.h"

namespace dftracer {
namespace {

// A chunk handed to the sink: big enough to compress well, small enough that
// the writer never holds much formatted text.
constexpr size_t kEmitBytes = 1 << 20;

std::string hex16(uint64_t v) {
  char b[17];
  snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  json_escape_append(s.data(), s.size(), &out);
  out += '"';
  return out;
}

}  // namespace

Writer::Writer(Logger& logger, std::unique_ptr<TraceSink> sink, SessionInfo info)
    : logger_(logger),
      sink_(std::move(sink)),
      info_(std::move(info)),
      path_(sink_->path()),
      fmt_(info_.pid, hash64(info_.hostname.data(), info_.hostname.size()), info_.config.whole_micros),
      out_(2 * kEmitBytes) {}

Writer::~Writer() {
  if (running_) pthread_detach(thread_);
}

void Writer::forget_thread() {
  running_ = false;
  // The parent's writer thread may have been waiting on these condition
  // variables when fork() copied them; destroying such a copy would wait
  // forever for a waiter that does not exist in the child. Start them over.
  new (&wake_) std::condition_variable();
  new (&flushed_) std::condition_variable();
}

void Writer::start() {
  write_preamble();
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
}

void Writer::write_preamble() {
  // "[" and the process metadata go out as the first chunk, so even a
  // process killed at once leaves a file that says whose it is.
  out_.lit("[\n");
  const Config& c = info_.config;
  uint64_t cmd_hash = hash64(info_.cmdline.data(), info_.cmdline.size());
  uint64_t exe_hash = hash64(info_.exe.data(), info_.exe.size());
  uint64_t cwd_hash = hash64(info_.cwd.data(), info_.cwd.size());
  if (c.inc_metadata) {
    fmt_.metadata("HH", info_.main_tid, info_.hostname,
                  hex16(hash64(info_.hostname.data(), info_.hostname.size())), &out_);
    fmt_.metadata("SH", info_.main_tid, info_.cmdline, hex16(cmd_hash), &out_);
    fmt_.metadata("SH", info_.main_tid, info_.exe, hex16(exe_hash), &out_);
    fmt_.metadata("FH", info_.main_tid, info_.cwd, hex16(cwd_hash), &out_);
    fmt_.naming("process_name", info_.main_tid, info_.app + " (" + std::to_string(info_.pid) + ")", &out_);
  }
  std::string args = "\"cmd_hash\":\"" + hex16(cmd_hash) + "\",\"exec_hash\":\"" + hex16(exe_hash) +
                     "\",\"cwd\":\"" + hex16(cwd_hash) + "\",\"ppid\":" + std::to_string(info_.ppid) +
                     ",\"version\":\"" DFTRACER_VERSION "\",\"init\":" + json_str(c.init_mode) +
                     ",\"data_dir\":" + json_str(c.data_dir) + ",\"compression\":" + (c.compress ? "1" : "0");
  fmt_.lifecycle("start", info_.main_tid, info_.start_ns, args, &out_, false);
  emit();
}

void Writer::run() {
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
    cycle();
    auto now = std::chrono::steady_clock::now();
    // Write out partial chunks when the timer is due or someone asked.
    if (now >= next_flush || want > flush_done_) {
      emit();
      next_flush = now + interval;
    }
    lock.lock();
    if (want > flush_done_) {
      flush_done_ = want;
      flushed_.notify_all();
    }
  }
}

void Writer::cycle() {
  Clock::instance().recalibrate();
  logger_.snapshot_buffers(&scratch_);
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
  if (!tb->named && info_.config.inc_metadata) {
    fmt_.naming("thread_name", tb->tid, tb->name[0] ? std::string(tb->name) : std::to_string(tb->tid), &out_);
    tb->named = true;
  }
  ChunkPool& pool = logger_.pool();
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
      fmt_.format(r, tb->tid, &out_);
      tb->roff += size;
      if (out_.size() >= kEmitBytes) emit();
    }
    if (!sealed) break;
    Chunk* next = c->next.load(std::memory_order_acquire);
    pool.release(c);
    pool.note_sealed_released();
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
  }
}

void Writer::retire(ThreadBuffer* tb) {
  // The owner has exited, so its drop count is final: count the last ones
  // before the buffer is handed to the next new thread.
  account_drops(tb);
  logger_.retire_buffer(tb);
}

void Writer::emit() {
  if (out_.size() == 0) return;
  uint64_t lines = fmt_.lines() - emitted_lines_;
  emitted_lines_ = fmt_.lines();
  if (sink_->write_chunk(out_.data(), out_.size(), lines)) {
    events_written_.fetch_add(lines, std::memory_order_relaxed);
  } else {
    lost_lines_ += lines;
    dropped_.fetch_add(lines, std::memory_order_relaxed);
  }
  bytes_written_.store(sink_->bytes_written(), std::memory_order_relaxed);
  out_.clear();
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
  }
  wake_.notify_one();
  flushed_.notify_all();
  if (running_) {
    pthread_join(thread_, nullptr);
    running_ = false;
  }
  cycle();  // whatever came in while the thread was stopping
  // num_events counts every event written before `end`, metadata included
  // (DFTracer's convention).
  std::string args = "\"num_events\":" + std::to_string(fmt_.lines() - lost_lines_) +
                     ",\"dropped\":" + std::to_string(dropped_.load(std::memory_order_relaxed));
  fmt_.lifecycle("end", tid, Clock::instance().now_ns(), args, &out_, /*last=*/true);
  emit();
  sink_->close();
}

}  // namespace dftracer
