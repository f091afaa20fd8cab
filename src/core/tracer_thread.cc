#include "tracer_thread.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dftracer/dftracer.h"
#include "diagnostics.h"

#if defined(__SANITIZE_THREAD__)
#define DFT_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DFT_UNDER_TSAN 1
#endif
#endif

namespace dftracer {
namespace {

std::atomic<dft_thread_hook> g_thread_hook{nullptr};
thread_local bool t_private_table = false;
thread_local int t_pidfd = -1;  // this process, for pidfd_getfd (in the private table)

bool private_tables_wanted() {
#ifdef DFT_UNDER_TSAN
  return false;
#else
  const char* v = std::getenv("DFTRACER_PRIVATE_FDS");
  return v == nullptr || std::strcmp(v, "0") != 0;
#endif
}

// close_range(2) (Linux 5.9) over [first, last]; on older kernels one
// close per descriptor up to the descriptor limit.
void close_span(unsigned first, unsigned last) {
  if (first > last) return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, last, 0) == 0) return;
#endif
  struct rlimit rl;
  unsigned limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                       ? static_cast<unsigned>(std::min<rlim_t>(rl.rlim_cur, 1u << 20))
                       : 1u << 20;
  for (unsigned fd = first; fd <= last && fd < limit; ++fd) syscall(SYS_close, fd);
}

// The kernel ids of the tracer's threads started in this process (0: free
// slot), for wait_until_tracer_threads_gone.
constexpr int kTracerThreadSlots = 16;
std::atomic<int> g_tracer_tids[kTracerThreadSlots];

void note_tracer_thread() {
  const int pid = getpid(), tid = static_cast<int>(syscall(SYS_gettid));
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& slot : g_tracer_tids) {
      int old = slot.load(std::memory_order_acquire);
      // First pass: a free slot; second: one whose thread is gone (a past
      // session's writer).
      if (pass == 0 ? old != 0 : syscall(SYS_tgkill, pid, old, 0) == 0) continue;
      if (slot.compare_exchange_strong(old, tid, std::memory_order_acq_rel)) return;
    }
  }
}

}  // namespace

void wait_until_tracer_threads_gone() {
  const int pid = getpid();
  for (auto& slot : g_tracer_tids) {
    int tid = slot.exchange(0, std::memory_order_acq_rel);
    if (tid == 0) continue;
    // pthread_join returns when the thread has left its code; the kernel
    // takes it out of the thread group a moment later. At most 200 ms.
    for (int i = 0; i < 4000 && syscall(SYS_tgkill, pid, tid, 0) == 0; ++i) {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, nullptr);
    }
  }
}

// capget(2) of thread `tid` (0: the calling thread): effective, permitted
// and inheritable sets, both 32-bit halves.
bool thread_capabilities(int tid, uint32_t out[6]) {
  struct {
    uint32_t version;
    int pid;
  } header = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, tid};
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    out[3 * i] = data[i].effective;
    out[3 * i + 1] = data[i].permitted;
    out[3 * i + 2] = data[i].inheritable;
  }
  return true;
}

bool tracer_threads_share_capabilities() {
  uint32_t mine[6];
  if (!thread_capabilities(0, mine)) return false;
  for (auto& slot : g_tracer_tids) {
    const int tid = slot.load(std::memory_order_acquire);
    uint32_t theirs[6];
    if (tid == 0 || !thread_capabilities(tid, theirs)) continue;  // gone
    if (std::memcmp(mine, theirs, sizeof mine) != 0) return false;
  }
  return true;
}

void close_descriptor_raw(int fd) {
  if (fd >= 0) syscall(SYS_close, fd);
}

void forget_tracer_threads() {
  for (auto& slot : g_tracer_tids) slot.store(0, std::memory_order_relaxed);
}

bool become_tracer_thread(const std::vector<int>& keep) {
  note_tracer_thread();
  if (dft_thread_hook hook = g_thread_hook.load(std::memory_order_acquire)) hook();
  if (!private_tables_wanted()) return false;
  if (unshare(CLONE_FILES) != 0) {
    log_debug(std::string("tracer thread shares the program's descriptor table: unshare: ") + std::strerror(errno));
    return false;
  }
  std::vector<int> kept;
  for (int fd : keep)
    if (fd >= 0) kept.push_back(fd);
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  unsigned next = 0;
  for (int fd : kept) {
    if (static_cast<unsigned>(fd) > next) close_span(next, static_cast<unsigned>(fd) - 1);
    next = static_cast<unsigned>(fd) + 1;
  }
  close_span(next, ~0u);
  // 0-2 on /dev/null (where they are free): a stray write to stderr lands
  // nowhere, and no later descriptor of ours takes those numbers.
  for (int fd = 0; fd <= 2; ++fd) {
    if (std::binary_search(kept.begin(), kept.end(), fd)) continue;
    int n = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC));
    if (n >= 0 && n != fd) {
      syscall(SYS_dup3, n, fd, O_CLOEXEC);
      syscall(SYS_close, n);
    }
  }
#ifdef SYS_pidfd_open
  t_pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
#endif
  t_private_table = true;
  return true;
}

bool in_private_table() { return t_private_table; }

int program_stderr() {
#ifdef SYS_pidfd_getfd
  if (t_pidfd >= 0) {
    int fd = static_cast<int>(syscall(SYS_pidfd_getfd, t_pidfd, 2, 0));
    if (fd >= 0) return fd;
  }
#endif
  // /proc/<pid>/fd names the thread-group leader's table: the program's.
  std::string p = "/proc/" + std::to_string(getpid()) + "/fd/2";
  return static_cast<int>(syscall(SYS_openat, AT_FDCWD, p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY));
}

}  // namespace dftracer

extern "C" int dft_tracer_threads_share_capabilities(void) {
  return dftracer::tracer_threads_share_capabilities() ? 1 : 0;
}

extern "C" void dft_set_tracer_thread_hook(dft_thread_hook hook) {
  dftracer::g_thread_hook.store(hook, std::memory_order_release);
}
