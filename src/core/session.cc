#include "session.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>

#include "clock.h"
#include "dftracer/dftracer.h"
#include "diagnostics.h"
#include "process_hooks.h"
#include "string_table.h"
#include "trace_file_name.h"
#include "unique_trace_sink.h"
#include "writer.h"

namespace dftracer {

__thread ThreadBuffer* Session::tls_buffer_ = nullptr;
std::atomic<bool> Session::enabled_{false};
std::atomic<bool> Session::finalized_once_{false};
std::atomic<uint64_t> Session::session_{0};
std::atomic<uint64_t> Session::after_finalize_{0};

namespace {

int64_t current_tid() { return static_cast<int64_t>(syscall(SYS_gettid)); }

// With read(2), not a std::ifstream: a stream's first use sets up
// libstdc++'s locale, which a short-lived traced process paid for this
// one read alone.
std::string read_file(const char* path) {
  std::string out;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string command_line() {
  std::string raw = read_file("/proc/self/cmdline");
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0') c = ' ';
  return raw;
}

std::string executable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string base_name(const std::string& p) {
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// mkdir -p of the trace file's directory, so DFTRACER_LOG_FILE=runs/a works
// without creating runs/ first.
void make_parent_dirs(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return;
  std::string dir = path.substr(0, slash);
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      std::string part = dir.substr(0, i);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return;
    }
  }
}

}  // namespace

void Session::set_enabled(bool on) {
  enabled_.store(on, std::memory_order_release);
  __atomic_store_n(&dft_hot.enabled, on ? 1 : 0, __ATOMIC_RELEASE);  // the inline mirror (dftracer.h)
  if (on) __atomic_store_n(&dft_hot.finalized, 0, __ATOMIC_RELAXED);
}

Session& Session::instance() {
  // Never destroyed: exit handlers, late thread exits and signal handlers
  // may all still reach it after static destructors have run.
  static Session* session = new Session();
  return *session;
}

int Session::init_from_env() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (enabled_.load(std::memory_order_relaxed)) return 1;
  note_program_stderr();  // the settings' warnings go to the stderr of this moment (diagnostics.h)
  Config cfg = Config::from_env();
  if (!cfg.enable) return 0;
  std::string error;
  if (start_session(cfg, -1, &error) != 0) {
    log_warn(error + "; tracing is off");
    return 0;
  }
  return 1;
}

int Session::init(const char* log_file, const char* data_dir, int64_t process_id) {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (enabled_.load(std::memory_order_relaxed)) return 0;
  note_program_stderr();
  Config cfg = Config::from_env();
  if (log_file != nullptr && *log_file != '\0') cfg.log_file = log_file;
  if (data_dir != nullptr) cfg.data_dir = data_dir;
  std::string error;
  if (start_session(cfg, process_id, &error) != 0) {
    log_warn(error + "; tracing is off");
    return -1;
  }
  return 0;
}

int Session::start_session(const Config& cfg, int64_t process_id, std::string* error) {
  install_process_hooks();  // process_hooks.h
  SessionInfo info;
  // As pydftracer 2.x: process_id names nothing and replaces no pid (two
  // runs given the same id used to write one file name); the real pid does
  // both, and process_id is kept as the `start` event's `p_idx`.
  info.pid = static_cast<int64_t>(getpid());
  info.process_id = process_id;
  info.ppid = static_cast<int64_t>(getppid());
  info.main_tid = current_tid();
  info.start_ns = Clock::instance().now_ns();
  info.config = cfg;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  info.hostname = host;
  info.cmdline = command_line();
  info.exe = executable();
  info.app = base_name(info.exe.empty() ? std::string("app") : info.exe);
  char cwd[PATH_MAX];
  info.cwd = getcwd(cwd, sizeof cwd) != nullptr ? cwd : "";

  make_parent_dirs(trace_file_name(cfg.log_file, info.app, info.pid, cfg.compress, 0, cfg.rank));
  std::unique_ptr<TraceSink> sink = open_unique_trace_sink(cfg.log_file, info.app, info.pid, cfg.compress,
                                                           cfg.compression_level, error, cfg.rank);
  if (!sink) return -1;
  const std::string path = sink->path();

  config_ = cfg;
  StringTable::instance().set_cap(cfg.intern_cap);
  StringTable::instance().reset_inline_count();
  pid_ = info.pid;
  main_tid_ = info.main_tid;
  start_ticks_.store(Clock::instance().ticks(), std::memory_order_relaxed);
  path_ = path;
  app_ = info.app;
  pool_.configure(cfg.buffer_size, cfg.chunk_size,
                  cfg.drop_on_overflow ? ChunkPool::Policy::kDrop : ChunkPool::Policy::kBlock);
  pool_.reset_peak();

  // A new session: every live thread re-attaches on its next record (its
  // buffer's session no longer matches), and the writer starts each chain
  // afresh.
  registry_.begin_session(&session_);
  __atomic_add_fetch(&dft_hot.session, 1, __ATOMIC_RELEASE);  // a new file: FH-once marks start over
  after_finalize_.store(0, std::memory_order_relaxed);
  std::unique_ptr<TraceFormatter> formatter = make_json_lines_formatter(info);
  formatter->set_observer(sink->event_observer());  // before the preamble: the index sees every line
  writer_.reset(new Writer(registry_, pool_, std::move(formatter), std::move(sink), std::move(info)));
  writer_->start();
  set_enabled(true);
  log_debug("tracing to " + path_);
  return 0;
}

int Session::relocate(const char* log_file, std::string* error) {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (!enabled_.load(std::memory_order_relaxed)) {
    *error = "tracing is off";
    return -1;
  }
  const std::string prefix = log_file != nullptr && *log_file != '\0' ? log_file : Config::from_env().log_file;
  make_parent_dirs(trace_file_name(prefix, app_, pid_, config_.compress, 0, config_.rank));
  std::string path = relink_trace_file(path_, prefix, app_, pid_, config_.compress, error, config_.rank);
  if (path.empty()) return -1;
  log_debug("tracing moved from " + path_ + " to " + path);
  path_ = path;
  config_.log_file = prefix;
  return 0;
}

// A device source's stop (dft_launch_scope::before_finalize): once, before
// the trace's last records are drained and before the lifecycle lock, since
// it records its last buffers into the trace (and CUPTI may complete them on
// a thread of its own that records too). The thread that clears the scope
// runs it; another finalizing thread waits until it returns (bounded: a
// stop that hangs must not keep the trace from being written). Only on the
// program's own threads (DeviceSource::kStop), never in a signal context.
void Session::stop_device_source() {
  int idle = device_stop_.load(std::memory_order_acquire);
  if (idle != 1 && device_stop_.compare_exchange_strong(idle, 1, std::memory_order_acq_rel)) {
    const dft_launch_scope* scope = dft_launch_scope_inline();
    if (scope != nullptr &&
        scope->struct_size >= offsetof(dft_launch_scope, before_finalize) + sizeof(void (*)(void)) &&
        scope->before_finalize != nullptr &&
        __atomic_compare_exchange_n(&dft_launch_scope_current, &scope, nullptr, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      scope->before_finalize();
    device_stop_.store(2, std::memory_order_release);
    return;
  }
  constexpr int kWaitSteps = 10000;  // 1 ms each: at most 10 s
  const struct timespec step = {0, 1000 * 1000};
  for (int i = 0; i < kWaitSteps && device_stop_.load(std::memory_order_acquire) == 1; ++i) nanosleep(&step, nullptr);
}

void Session::finalize(DeviceSource device) {
  if (device == DeviceSource::kStop && enabled()) stop_device_source();
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  finalize_locked(false);
}

void Session::finalize_before_image_ends(DeviceSource device) {
  if (device == DeviceSource::kStop && enabled()) stop_device_source();
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  finalize_locked(true);
}

// The device source goes on: a failed exec (execvp trying each PATH entry)
// resumes tracing, and its device events with it. A successful one ends
// CUPTI with the image, and the events of its last buffers with it.
void Session::suspend_for_exec() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (!enabled_.load(std::memory_order_relaxed)) return;
  finalize_locked(true);
  suspended_for_exec_ = true;
}

void Session::resume_after_failed_exec() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (!suspended_for_exec_) return;
  suspended_for_exec_ = false;
  if (enabled_.load(std::memory_order_relaxed)) return;
  std::string error;
  if (start_session(config_, -1, &error) != 0) log_warn(error + "; tracing is off after a failed exec");
}

void Session::finalize_locked(bool discard_if_empty) {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  set_enabled(false);
  finalized_once_.store(true, std::memory_order_relaxed);
  __atomic_store_n(&dft_hot.finalized, 1, __ATOMIC_RELAXED);
  if (writer_) {
    writer_->stop(current_tid());
    if (discard_if_empty && writer_->recorded_nothing()) {
      // By name: the writer thread, which held the file's descriptors, has
      // closed them. unlinkat past the I/O hooks (tracing is off anyway).
      syscall(SYS_unlinkat, AT_FDCWD, path_.c_str(), 0);
      if (path_.size() > 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0)
        syscall(SYS_unlinkat, AT_FDCWD, (path_ + ".idx").c_str(), 0);
      log_debug("removed " + path_ + ": nothing was recorded before the process image ended");
    }
  }
  registry_.end_session(&pool_);
}

void Session::flush() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (enabled_.load(std::memory_order_relaxed) && writer_) writer_->flush();
}

const char* Session::trace_path() const {
  return enabled_.load(std::memory_order_relaxed) ? path_.c_str() : nullptr;
}

const char* Session::trace_prefix() const {
  return enabled_.load(std::memory_order_relaxed) ? config_.log_file.c_str() : nullptr;
}

// The record path's two slow branches (attach_thread, refill) may allocate,
// wait on a condition variable or start the writer's wake-up: they leave
// errno as they found it, so a caller recording right after a system call
// (the I/O hooks) need not save it on every event.
ThreadBuffer* Session::attach_thread() {
  const int saved = errno;
  ThreadBuffer* tb = registry_.attach(tls_buffer_, session_.load(std::memory_order_relaxed));
  tls_buffer_ = tb;
  errno = saved;
  return tb;
}

Session::Reservation Session::reserve_slow(uint32_t nslots) {
  ThreadBuffer* tb = tls_buffer_;
  if (tb == nullptr || tb->session != session_.load(std::memory_order_relaxed)) {
    tb = attach_thread();
    if (tb == nullptr) return Reservation{};
  }
  const uint32_t bytes = nslots * kSlot;
  if (tb->off + bytes > tb->cap && !refill(tb, bytes)) return Reservation{};
  Reservation r;
  r.tb = tb;
  r.chunk = tb->chunk;
  r.p = tb->chunk->data + tb->off;
  r.end = tb->off + bytes;
  return r;
}

bool Session::refill(ThreadBuffer* tb, uint32_t bytes) {
  struct KeepErrno {
    int saved = errno;
    ~KeepErrno() { errno = saved; }
  } keep_errno;
  auto drop = [tb] {
    tb->dropped.store(tb->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return false;
  };
  if (bytes > pool_.chunk_bytes()) return drop();  // larger than any chunk
  bool may_block = pool_.policy() == ChunkPool::Policy::kBlock;
  // Under `drop` the pool is consulted only when a chunk may be there, so an
  // overflowing thread does not take the pool lock for every event.
  if (!may_block && !pool_.maybe_available()) return drop();
  Chunk* next = pool_.acquire(may_block);
  if (next == nullptr) return drop();
  if (tb->chunk != nullptr) {
    tb->chunk->next.store(next, std::memory_order_release);
    pool_.note_sealed();
    tb->chunk->sealed.store(true, std::memory_order_release);
    if (Writer* w = writer_.get()) w->notify();
  } else {
    tb->first.store(next, std::memory_order_release);
  }
  // commit() prefetches kPrefetchAheadBytes ahead; the lines before that
  // are asked for here, so the first records of the chunk do not wait.
  for (uint32_t at = 0; at < kPrefetchAheadBytes && at < next->capacity; at += kCacheLine)
    prefetch_for_write(next->data + at);
  tb->chunk = next;
  tb->off = 0;
  tb->cap = next->capacity;
  return true;
}

bool Session::write_as_main_thread() {
  if (!enabled()) return false;
  ThreadBuffer* tb = tls_buffer_;
  if (tb == nullptr || tb->session != session_.load(std::memory_order_relaxed)) tb = attach_thread();
  if (tb == nullptr) return false;
  registry_.write_as(tb, main_tid_);
  return true;
}

void Session::on_thread_exit(ThreadBuffer* tb) {
  if (tls_buffer_ == tb) tls_buffer_ = nullptr;
  Writer* w = writer_.get();
  if (registry_.on_thread_exit(tb, session_, &pool_) && w != nullptr) w->notify();
}

}  // namespace dftracer
