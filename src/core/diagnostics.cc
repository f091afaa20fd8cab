#include "diagnostics.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cctype>
#include <cstdio>
#include <mutex>

#include "tracer_thread.h"

namespace dftracer {
namespace {

// The file the program's stderr (descriptor 2) named when tracing started,
// or when the program last put a file there on purpose (dup2/dup3/dup onto
// 2, which the I/O hooks report: note_program_stderr). A program that closed
// 0-2 and then opened its data files got them as 0-2; a warning written to
// "stderr" then landed in its data. So every message first checks that
// descriptor 2 still names this file, and is dropped when it does not.
std::atomic<int> g_stderr_state{0};  // 0 never looked, 1 known, 2 none (2 was closed)
std::atomic<uint64_t> g_stderr_dev{0}, g_stderr_ino{0};

bool identity(int fd, uint64_t* dev, uint64_t* ino) {
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return false;
  *dev = static_cast<uint64_t>(st.st_dev);
  *ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

// Whether descriptor `fd` (of the calling thread's table) names the
// program's verified stderr.
bool verified_stderr(int fd) {
  if (g_stderr_state.load(std::memory_order_acquire) == 0) note_program_stderr();
  if (g_stderr_state.load(std::memory_order_acquire) != 1) return false;
  uint64_t dev, ino;
  return identity(fd, &dev, &ino) && dev == g_stderr_dev.load(std::memory_order_relaxed) &&
         ino == g_stderr_ino.load(std::memory_order_relaxed);
}

// Levels, most verbose first; a message is written when its level is at
// least the one set (kOff: nothing).
enum Level : int { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
constexpr const char* kLevelNames[] = {"trace", "debug", "info", "warning", "error", "critical", "off"};
std::atomic<int> g_level{kWarn};
std::mutex g_write_mu;  // one message at a time, whole

// stderr, as the program's threads see it. The tracer's own threads keep a
// descriptor table of their own (tracer_thread.h) whose 0-2 are /dev/null:
// their messages go through a descriptor for the program's stderr of the
// moment, taken for the one write. A plain writer, not a logging library:
// every traced process loads this library, and two more shared libraries
// (spdlog, fmt) cost a short-lived process about 0.3 ms of CPU to load.
void write_message(Level level, const std::string& msg) {
  if (level < g_level.load(std::memory_order_relaxed)) return;
  const std::string text = std::string("[dftracer] ") + kLevelNames[level] + ": " + msg + "\n";
  std::lock_guard<std::mutex> lock(g_write_mu);
  if (!in_private_table()) {
    if (!verified_stderr(2)) return;
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
    return;
  }
  int fd = program_stderr();
  if (fd < 0) return;
  if (!verified_stderr(fd)) {
    syscall(SYS_close, fd);
    return;
  }
  for (size_t off = 0; off < text.size();) {
    ssize_t n = syscall(SYS_write, fd, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  syscall(SYS_close, fd);
}

}  // namespace

void note_program_stderr() {
  if (in_private_table()) return;  // 2 is not the program's here
  const int saved = errno;
  uint64_t dev, ino;
  if (identity(2, &dev, &ino)) {
    g_stderr_dev.store(dev, std::memory_order_relaxed);
    g_stderr_ino.store(ino, std::memory_order_relaxed);
    g_stderr_state.store(1, std::memory_order_release);
  } else {
    g_stderr_state.store(2, std::memory_order_release);
  }
  errno = saved;
}

bool program_stderr_verified() {
  if (in_private_table()) return false;
  const int saved = errno;
  const bool ok = verified_stderr(2);
  errno = saved;
  return ok;
}

bool set_log_level(const std::string& level) {
  std::string l;
  for (char c : level) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "warn") l = "warning";
  if (l == "err") l = "error";
  for (int i = kTrace; i <= kOff; ++i) {
    if (l == kLevelNames[i]) {
      g_level.store(i, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

void log_warn(const std::string& msg) { write_message(kWarn, msg); }
void log_info(const std::string& msg) { write_message(kInfo, msg); }
void log_debug(const std::string& msg) { write_message(kDebug, msg); }

}  // namespace dftracer
