#include "open_events.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace dft_py {

DFT_PY_CONSTINIT thread_local OpenStack t_open;  // zero-initialised: no TLS init function

void open_forget_owner(const void* owner) {
  OpenStack& s = t_open;
  for (int i = s.depth - 1; i >= 0; --i) {
    if (s.ev[i].owner != owner) continue;
    OpenEvent e = open_take(s, i);
    Py_XDECREF(e.pending);
  }
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
    if (e.live == 0 || e.name == 0) continue;  // written, or no interned name
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

// The main thread did not answer (its signals blocked): a consistent copy
// read from here, as a sequence lock; an entry it closes meanwhile may be
// written twice.
int read_stack_from_here(const OpenStack* s) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq & 1u) continue;
    int depth = __atomic_load_n(&s->depth, __ATOMIC_ACQUIRE);
    if (depth > kMaxOpen) depth = kMaxOpen;
    int n = 0;
    for (int i = 0; i < depth; ++i) {
      const OpenEvent& e = s->ev[i];
      const uint64_t live = __atomic_load_n(&e.live, __ATOMIC_RELAXED);
      if (live == 0 || e.name == 0) continue;
      g_cut[n++] = CutEntry{e.t0, e.name, e.cat};
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq) return n;
  }
  return 0;
}

// A real-time signal with no handler of the program's (the default action),
// given our handler; 0 when there is none.
int install_cut_handler() {
  struct sigaction sa {};
  sa.sa_handler = cut_handler;
  sa.sa_flags = SA_RESTART;
  sigfillset(&sa.sa_mask);
  for (int sig = SIGRTMAX; sig >= SIGRTMIN; --sig) {
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
  if (g_cut_signal == 0) g_cut_signal = install_cut_handler();
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
