#include "logger.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "clock.h"
#include "dftracer/dftracer.h"
#include "diagnostics.h"
#include "string_table.h"
#include "trace_file_name.h"
#include "writer.h"

namespace dftracer {

thread_local ThreadBuffer* Logger::tls_buffer_ = nullptr;

namespace {

int64_t current_tid() { return static_cast<int64_t>(syscall(SYS_gettid)); }

// Hands the thread's buffer back when the thread exits. Only constructed on
// a thread's first record, so the hot path's thread_local stays trivial.
struct ThreadExitHook {
  ThreadBuffer* tb = nullptr;
  ~ThreadExitHook() {
    if (tb != nullptr) Logger::instance().on_thread_exit(tb);
  }
};
thread_local ThreadExitHook tls_exit_hook;

std::string read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
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

void Logger::set_enabled(bool on) {
  enabled_.store(on, std::memory_order_release);
  __atomic_store_n(&dft_hot.enabled, on ? 1 : 0, __ATOMIC_RELEASE);  // the inline mirror (dftracer.h)
  if (on) __atomic_store_n(&dft_hot.finalized, 0, __ATOMIC_RELAXED);
}

Logger& Logger::instance() {
  // Never destroyed: exit handlers, late thread exits and signal handlers
  // may all still reach it after static destructors have run.
  static Logger* logger = new Logger();
  return *logger;
}

int Logger::init_from_env() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (enabled_.load(std::memory_order_relaxed)) return 1;
  Config cfg = Config::from_env();
  if (!cfg.enable) return 0;
  std::string error;
  if (start_session(cfg, -1, &error) != 0) {
    log_warn(error + "; tracing is off");
    return 0;
  }
  return 1;
}

int Logger::init(const char* log_file, const char* data_dir, int64_t process_id) {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (enabled_.load(std::memory_order_relaxed)) return 0;
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

int Logger::start_session(const Config& cfg, int64_t process_id, std::string* error) {
  install_process_hooks();
  SessionInfo info;
  info.pid = process_id >= 0 ? process_id : static_cast<int64_t>(getpid());
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

  std::string path = trace_file_name(cfg.log_file, info.app, info.pid, cfg.compress);
  make_parent_dirs(path);
  std::unique_ptr<TraceSink> sink = open_trace_sink(path, sink_kind_for(path), cfg.compression_level, error);
  if (!sink) return -1;

  config_ = cfg;
  pid_ = info.pid;
  process_id_override_ = process_id;
  path_ = path;
  pool_.configure(cfg.buffer_size, cfg.chunk_size,
                  cfg.drop_on_overflow ? ChunkPool::Policy::kDrop : ChunkPool::Policy::kBlock);
  pool_.reset_peak();

  {
    // A new session: every live thread re-attaches on its next record (its
    // buffer's session no longer matches), and the writer starts each chain
    // afresh.
    std::lock_guard<std::mutex> rl(registry_mu_);
    session_.fetch_add(1, std::memory_order_relaxed);
    session_open_ = true;
    for (ThreadBuffer* tb : buffers_) {
      tb->first.store(nullptr, std::memory_order_relaxed);
      tb->rchunk = nullptr;
      tb->roff = 0;
      tb->named = false;
      tb->accounted_drops = tb->dropped.load(std::memory_order_relaxed);
    }
  }
  after_finalize_.store(0, std::memory_order_relaxed);
  std::unique_ptr<TraceFormatter> formatter = make_json_lines_formatter(info);
  writer_.reset(new Writer(*this, std::move(formatter), std::move(sink), std::move(info)));
  writer_->start();
  set_enabled(true);
  log_debug("tracing to " + path_);
  return 0;
}

void Logger::finalize() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  finalize_locked();
}

void Logger::finalize_locked() {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  set_enabled(false);
  finalized_once_.store(true, std::memory_order_relaxed);
  __atomic_store_n(&dft_hot.finalized, 1, __ATOMIC_RELAXED);
  if (writer_) writer_->stop(current_tid());
  // Chunks that are some thread's current one stay with that thread; the
  // rest went back to the pool in the writer's last cycle, except those of
  // threads that exited after it: their events came too late, their
  // buffers are freed here.
  std::lock_guard<std::mutex> rl(registry_mu_);
  session_open_ = false;
  for (ThreadBuffer* tb : buffers_) {
    if (!tb->in_use || !tb->exited.load(std::memory_order_acquire)) continue;
    Chunk* c = tb->rchunk != nullptr ? tb->rchunk : tb->first.load(std::memory_order_acquire);
    while (c != nullptr) {
      Chunk* next = c->next.load(std::memory_order_acquire);
      pool_.release(c);
      pool_.note_sealed_released();
      c = next;
    }
    tb->first.store(nullptr, std::memory_order_relaxed);
    tb->rchunk = nullptr;
    tb->exited.store(false, std::memory_order_relaxed);
    tb->in_use = false;
  }
}

void Logger::flush() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (enabled_.load(std::memory_order_relaxed) && writer_) writer_->flush();
}

const char* Logger::trace_path() const {
  return enabled_.load(std::memory_order_relaxed) ? path_.c_str() : nullptr;
}

const char* Logger::trace_prefix() const {
  return enabled_.load(std::memory_order_relaxed) ? config_.log_file.c_str() : nullptr;
}

ThreadBuffer* Logger::attach_thread() {
  ThreadBuffer* tb = tls_buffer_;
  uint64_t session = session_.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(registry_mu_);
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
      tb->recorded.store(0, std::memory_order_relaxed);
      tb->dropped.store(0, std::memory_order_relaxed);
      tb->accounted_drops = 0;
      tb->tid = current_tid();
      tb->name[0] = '\0';
      pthread_getname_np(pthread_self(), tb->name, sizeof tb->name);
      tls_exit_hook.tb = tb;
    }
    // Keep the chunk this thread already holds (from an earlier session),
    // emptied; otherwise get one on the first record.
    if (tb->chunk != nullptr) tb->chunk->reset();
    tb->off = 0;
    tb->cap = tb->chunk != nullptr ? tb->chunk->capacity : 0;
    tb->session = session;
    tb->first.store(tb->chunk, std::memory_order_release);
  }
  tls_buffer_ = tb;
  return tb;
}

bool Logger::refill(ThreadBuffer* tb, uint32_t bytes) {
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
  tb->chunk = next;
  tb->off = 0;
  tb->cap = next->capacity;
  return true;
}

void Logger::on_thread_exit(ThreadBuffer* tb) {
  if (tls_buffer_ == tb) tls_buffer_ = nullptr;
  std::lock_guard<std::mutex> lock(registry_mu_);
  bool live_session = session_open_ && tb->session == session_.load(std::memory_order_relaxed);
  if (live_session) {
    // Seal with no successor: the writer drains it (and counts the thread's
    // drops), then retires the buffer.
    if (tb->chunk != nullptr) {
      pool_.note_sealed();
      tb->chunk->sealed.store(true, std::memory_order_release);
      tb->chunk = nullptr;
    }
    tb->exited.store(true, std::memory_order_release);
    if (Writer* w = writer_.get()) w->notify();
    return;
  }
  // Tracing is off (or this buffer is from an old session): nothing to write.
  if (tb->chunk != nullptr) pool_.release(tb->chunk);
  tb->chunk = nullptr;
  tb->first.store(nullptr, std::memory_order_relaxed);
  tb->rchunk = nullptr;
  tb->exited.store(false, std::memory_order_relaxed);
  tb->in_use = false;
}

void Logger::retire_buffer(ThreadBuffer* tb) {
  std::lock_guard<std::mutex> lock(registry_mu_);
  tb->first.store(nullptr, std::memory_order_relaxed);
  tb->rchunk = nullptr;
  tb->exited.store(false, std::memory_order_relaxed);
  tb->in_use = false;
}

void Logger::snapshot_buffers(std::vector<ThreadBuffer*>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(registry_mu_);
  for (ThreadBuffer* tb : buffers_)
    if (tb->in_use) out->push_back(tb);
}

// ------------------------------------------------------------ process hooks

void Logger::install_process_hooks() {
  std::call_once(hooks_once_, [] {
    std::atexit(&Logger::at_exit);
    pthread_atfork(&Logger::fork_prepare, &Logger::fork_parent, &Logger::fork_child);
    // Only where the signal would kill the process anyway: an application's
    // own handler (Python's SIGINT -> KeyboardInterrupt, say) is left alone.
    for (int sig : {SIGTERM, SIGINT}) {
      struct sigaction old;
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_handler = &Logger::on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sig, &sa, nullptr);
      }
    }
  });
}

void Logger::at_exit() { instance().finalize(); }

void Logger::on_signal(int sig) {
  Logger& lg = instance();
  // Best effort: if another thread is inside init/finalize, do not wait.
  if (lg.lifecycle_mu_.try_lock()) {
    lg.finalize_locked();
    lg.lifecycle_mu_.unlock();
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void Logger::fork_prepare() {
  Logger& lg = instance();
  lg.lifecycle_mu_.lock();
  if (lg.writer_) lg.writer_->lock_for_fork();
  lg.registry_mu_.lock();
  lg.pool_.lock_for_fork();
  StringTable::instance().lock_for_fork();
}

void Logger::fork_parent() {
  Logger& lg = instance();
  StringTable::instance().unlock_after_fork();
  lg.pool_.unlock_after_fork();
  lg.registry_mu_.unlock();
  if (lg.writer_) lg.writer_->unlock_after_fork();
  lg.lifecycle_mu_.unlock();
}

void Logger::fork_child() {
  Logger& lg = instance();
  StringTable::instance().unlock_after_fork();
  lg.pool_.unlock_after_fork();
  lg.registry_mu_.unlock();
  if (lg.writer_) lg.writer_->unlock_after_fork();
  bool was_enabled = lg.enabled_.load(std::memory_order_relaxed);
  lg.set_enabled(false);
  // The parent's writer thread does not exist here and its buffers hold the
  // parent's events: abandon both (never written twice), start afresh.
  if (lg.writer_) {
    lg.writer_->forget_thread();
    lg.writer_.reset();
  }
  std::set<Chunk*> parents_chunks;
  for (ThreadBuffer* tb : lg.buffers_) {
    for (Chunk* c = tb->rchunk ? tb->rchunk : tb->first.load(std::memory_order_relaxed); c != nullptr;
         c = c->next.load(std::memory_order_relaxed))
      parents_chunks.insert(c);
    if (tb->chunk != nullptr) parents_chunks.insert(tb->chunk);
    tb->chunk = nullptr;
    tb->first.store(nullptr, std::memory_order_relaxed);
    tb->rchunk = nullptr;
    tb->exited.store(false, std::memory_order_relaxed);
    tb->in_use = false;
  }
  tls_buffer_ = nullptr;
  tls_exit_hook.tb = nullptr;
  for (Chunk* c : parents_chunks) ChunkPool::free_chunk(c);
  lg.pool_.reset_after_fork();
  if (was_enabled) {
    std::string error;
    if (lg.start_session(lg.config_, -1, &error) != 0) log_warn(error + "; tracing is off in child " + std::to_string(getpid()));
  }
  lg.lifecycle_mu_.unlock();
}

}  // namespace dftracer
