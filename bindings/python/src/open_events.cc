#include "open_events.h"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dft_py {

DFT_PY_CONSTINIT thread_local OpenStack t_open;  // zero-initialised: no TLS init function

int open_forget_owner(const void* owner) {
  OpenStack& s = t_open;
  const int before = s.depth;
  for (int i = s.depth - 1; i >= 0; --i) {
    if (s.ev[i].owner != owner) continue;
    OpenEvent e = open_take(s, i);
    Py_XDECREF(e.pending);
  }
  return before - s.depth;
}

namespace {

// The cut, in three steps:
// 1. the core's signal thread (cut_open_events) sends g_cut_signal to the main
//    thread and waits for g_cut_sem;
// 2. the main thread, in cut_handler (or, when the signal interrupted a
//    change of its stack, at the end of that change: open_end_write ->
//    open_cut_deferred), copies its unwritten entries to g_cut, claims them
//    (live = 0) and posts g_cut_sem;
// 3. the signal thread writes them with dft_record_cut.
// The entries are claimed on the thread that owns them, so its own claims
// (open_claim, open_take) are plain loads and stores: a handler runs
// between two of its instructions, never in the middle of one, and one
// that interrupts a change of the stack defers the copy to its end.
// When no real-time signal is free (each has a handler of the program's, or
// is blocked in the main thread: a program that takes it with sigwait or a
// signalfd leaves it blocked at the default action), or the main thread
// does not answer within kCutWaitMs, the signal thread freezes the stack
// and reads it itself (read_stack_from_here).
OpenStack* g_cut_stack = nullptr;  // the main thread's stack
pthread_t g_cut_thread;            // the main thread
pid_t g_cut_pid = 0;               // the process g_cut_thread belongs to
int g_cut_signal = 0;              // a real-time signal, chosen at the cut
sem_t g_cut_sem;
// 1 while the signal thread waits for the copy; 2 once the main thread took
// it on (then it posts g_cut_sem); 0 otherwise.
int g_cut_window = 0;
constexpr long kCutWaitMs = 500;   // then the signal thread reads the stack itself

struct CutEntry {
  uint64_t t0;
  dft_id name;
  dft_id cat;
};
CutEntry g_cut[kMaxOpen];
int g_cut_n = 0;

// On the main thread, between two changes of its stack: copies and claims
// its unwritten entries. Async-signal-safe.
void take_cut_entries(OpenStack& s) {
  int n = 0;
  for (int i = 0; i < s.depth && i < kMaxOpen; ++i) {
    OpenEvent& e = s.ev[i];
    if (e.live == 0 || e.name == 0 || open_owner_dead(e.owner)) continue;  // written, no interned name, dropped
    e.live = 0;
    g_cut[n++] = CutEntry{e.t0, e.name, e.cat};
  }
  g_cut_n = n;
  sem_post(&g_cut_sem);
}

void cut_handler(int) {
  const int saved = errno;
  OpenStack* s = g_cut_stack;
  int waiting = 1;
  if (s != nullptr &&
      __atomic_compare_exchange_n(&g_cut_window, &waiting, 2, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (s->seq & 1u) s->cut_requested = 1;  // mid-change: open_end_write takes them
    else take_cut_entries(*s);
  }
  errno = saved;
}

// A full memory barrier on every running thread of the process (the main
// thread's side of the freeze below), from here. False where the kernel
// (or a seccomp filter) refuses it.
bool barrier_on_all_threads() {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
      syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
    return true;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0;
}

// The main thread does not take the signal (none is free, or it did not
// answer): its stack is frozen (OpenStack::frozen) and read from here, as a
// sequence lock. After the barrier, every change the main thread starts
// sees `frozen` and changes nothing, and one it started before shows an odd
// `seq` here: the copy is the stack as it stays, and what the main thread
// closes or flushes from then on it no longer writes. So each entry is
// written once, here or by the main thread -- unless membarrier() is
// refused, when an entry closed at that very moment may be written twice.
int read_stack_from_here(OpenStack* s) {
  __atomic_store_n(&s->frozen, 1, __ATOMIC_SEQ_CST);
  barrier_on_all_threads();
  // A change in progress is a few instructions; a main thread preempted in
  // one runs again within a scheduler tick or so.
  for (int attempt = 0; attempt < 100000; ++attempt) {
    const unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq & 1u) {
      sched_yield();
      continue;
    }
    int depth = __atomic_load_n(&s->depth, __ATOMIC_ACQUIRE);
    if (depth > kMaxOpen) depth = kMaxOpen;
    int n = 0;
    for (int i = 0; i < depth; ++i) {
      const OpenEvent& e = s->ev[i];
      const uint64_t live = __atomic_load_n(&e.live, __ATOMIC_RELAXED);
      // The owner is not read: the main thread may free it meanwhile (an
      // exit on a frozen stack keeps the entry but not the object). So an
      // entry of an object freed on another thread is written here, cut.
      if (live == 0 || e.name == 0) continue;
      g_cut[n++] = CutEntry{e.t0, e.name, e.cat};
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq) return n;
  }
  return 0;
}

// /proc/self/task/<tid>/<file> into buf (NUL-terminated); false when it
// cannot be read. Raw system calls only: the program may hold any libc
// lock (malloc's) at the signal.
bool read_task_file(pid_t tid, const char* file, char* buf, size_t size) {
  char path[64] = "/proc/self/task/";
  char digits[24];
  int nd = 0;
  for (unsigned long v = static_cast<unsigned long>(tid); nd == 0 || v != 0; v /= 10) digits[nd++] = char('0' + v % 10);
  size_t len = strlen(path);
  while (nd > 0) path[len++] = digits[--nd];
  path[len++] = '/';
  const size_t flen = strlen(file);
  if (len + flen >= sizeof(path)) return false;
  memcpy(path + len, file, flen + 1);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t n = 0;
  for (ssize_t r; n < size - 1 && (r = read(fd, buf + n, size - 1 - n)) != 0;) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    n += static_cast<size_t>(r);
  }
  close(fd);
  buf[n] = '\0';
  return n > 0;
}

// A hexadecimal number at *p (an optional 0x first); advances p.
bool parse_hex(const char*& p, uint64_t* out) {
  while (*p == ' ' || *p == '\t') ++p;
  if (p[0] == '0' && p[1] == 'x') p += 2;
  uint64_t m = 0;
  const char* first = p;
  for (;; ++p) {
    const char c = *p;
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) break;
    m = m << 4 | static_cast<uint64_t>(d);
  }
  *out = m;
  return p != first;
}

// The signals thread `tid` waits for in sigwait/sigwaitinfo/sigtimedwait
// (rt_sigtimedwait, whose set the kernel takes out of the thread's blocked
// mask for the wait), bit n-1 for signal n; 0 when it waits for none.
// False when that cannot be known.
bool waited_signals(pid_t tid, uint64_t* mask) {
  *mask = 0;
  char buf[512];
  if (!read_task_file(tid, "syscall", buf, sizeof(buf))) return false;
  // "<nr> <arg0 in hex> ...", or "running", or "-1 ...": in no system call
  const char* p = buf;
  long nr = 0;
  if (*p < '0' || *p > '9') return true;
  for (; *p >= '0' && *p <= '9'; ++p) nr = nr * 10 + (*p - '0');
  if (nr != SYS_rt_sigtimedwait) return true;
  uint64_t set = 0;
  if (!parse_hex(p, &set) || set == 0) return false;
  // The set is the waiting thread's memory, maybe gone by now: copied with
  // a system call that fails rather than faults.
  uint64_t bits = 0;
  struct iovec local{&bits, sizeof(bits)}, remote{reinterpret_cast<void*>(set), sizeof(bits)};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof(bits))) return false;
  *mask = bits;
  return true;
}

// The signals thread `tid` of this process blocks, counting those it waits
// for with sigwait (shown unblocked during the wait): its SigBlk line in
// /proc, and the set of an rt_sigtimedwait it is in, read before and after;
// bit n-1 for signal n. False when they cannot be read.
bool blocked_signals(pid_t tid, uint64_t* mask) {
  uint64_t before = 0, after = 0, blk = 0;
  char buf[4096];
  if (!waited_signals(tid, &before) || !read_task_file(tid, "status", buf, sizeof(buf))) return false;
  const char* p = strstr(buf, "\nSigBlk:");
  if (p == nullptr) return false;
  p += 8;
  if (!parse_hex(p, &blk) || !waited_signals(tid, &after)) return false;
  *mask = blk | before | after;
  return true;
}

// A real-time signal with no handler of the program's (the default action)
// and not blocked in the main thread, given our handler; 0 when there is
// none. A blocked one with the default action is a program's that takes it
// with sigwait/sigwaitinfo/signalfd: sending it would feed the program a
// signal nobody sent it.
int install_cut_handler() {
  uint64_t blocked = 0;
  if (!blocked_signals(g_cut_pid, &blocked)) return 0;
  struct sigaction sa {};
  sa.sa_handler = cut_handler;
  sa.sa_flags = SA_RESTART;
  sigfillset(&sa.sa_mask);
  for (int sig = SIGRTMAX; sig >= SIGRTMIN; --sig) {
    if (sig > 64 || ((blocked >> (sig - 1)) & 1u) != 0) continue;
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler == cut_handler) return sig;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    if (sigaction(sig, &sa, nullptr) == 0) return sig;
  }
  return 0;
}

bool wait_for_cut() {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += (kCutWaitMs % 1000) * 1000000L;
  until.tv_sec += kCutWaitMs / 1000 + until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  while (sem_timedwait(&g_cut_sem, &until) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

void cut_open_events(int) {
  OpenStack* s = g_cut_stack;
  if (s == nullptr || getpid() != g_cut_pid) return;
  g_cut_signal = install_cut_handler();  // again: the main thread's mask may have changed since a fork
  __atomic_store_n(&g_cut_window, 1, __ATOMIC_RELEASE);
  int n;
  if (g_cut_signal != 0 && pthread_kill(g_cut_thread, g_cut_signal) == 0 && wait_for_cut()) {
    n = g_cut_n;
  } else {
    // No handler ran: closed here, so that a late one copies nothing.
    int waiting = 1;
    if (__atomic_compare_exchange_n(&g_cut_window, &waiting, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      n = read_stack_from_here(s);
    else
      n = wait_for_cut() ? g_cut_n : 0;  // the main thread took it on just now
  }
  for (int i = 0; i < n; ++i) dft_record_cut(g_cut[i].name, g_cut[i].cat, g_cut[i].t0, nullptr, 0);
}

// fork(): the child's one thread is the main thread's copy only when the
// main thread forked; otherwise the child has no thread of that stack.
void after_fork_in_child() {
  if (g_cut_stack == nullptr) return;
  if (pthread_equal(pthread_self(), g_cut_thread)) {
    g_cut_pid = getpid();
    sem_init(&g_cut_sem, 0, 0);
    __atomic_store_n(&g_cut_window, 0, __ATOMIC_RELAXED);
    g_cut_stack->frozen = 0;
  } else {
    g_cut_stack = nullptr;
  }
}

}  // namespace

void open_cut_deferred(OpenStack& s) {
  s.cut_requested = 0;
  if (&s == g_cut_stack) take_cut_entries(s);  // its handler set cut_requested
}

void open_cut_at_signal_for_this_thread() {
  if (static_cast<pid_t>(syscall(SYS_gettid)) != getpid()) return;
  if (sem_init(&g_cut_sem, 0, 0) != 0) return;
  g_cut_thread = pthread_self();
  g_cut_pid = getpid();
  g_cut_stack = &t_open;
  pthread_atfork(nullptr, nullptr, &after_fork_in_child);
  dft_set_signal_hook(&cut_open_events);
}

}  // namespace dft_py
