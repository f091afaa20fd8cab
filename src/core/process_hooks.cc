#include "process_hooks.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "clock.h"
#include "dftracer/dftracer.h"
#include "diagnostics.h"
#include "session.h"
#include "string_table.h"
#include "tracer_thread.h"
#include "writer.h"

namespace dftracer {
namespace {

void at_exit() { Session::instance().finalize(); }

// The signals whose default action ends the process and that are sent to
// it from outside (kill, a terminal, a launcher, a batch system): SIGTERM,
// SIGINT, SIGHUP (the terminal or ssh session went away), SIGQUIT (Ctrl+backslash,
// still dumps core), SIGUSR1/SIGUSR2 (sent by schedulers before a job's end
// and by programs to each other: at the default action they kill). Not
// SIGPIPE and SIGXFSZ: they are raised by the failing write on the writing
// thread, and with a handler that returns the write fails with EPIPE/EFBIG
// instead, which the program would report (`yes | head` would print an
// error). Not SIGALRM: the handler's deadline is an alarm. Not
// SIGPROF/SIGVTALRM: profilers' timers. And the signals a program dies of
// by itself: SIGABRT (abort(), a failed assert) and the faults (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL) -- the thread that raised them waits in the
// handler for the finalize (on_signal), then dies of it where it was.
constexpr int kTakenSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
                                 SIGABRT, SIGSEGV, SIGBUS,  SIGFPE,  SIGILL};

bool is_fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL; }

// SIGTERM/SIGINT & co.: finalizing means taking locks, allocating, joining the
// writer and writing the file, none of which is safe in a signal handler:
// a thread interrupted inside pthread_create/join or malloc holds a glibc
// lock that finalize would then wait for, forever (8 of 60 runs of a
// thread-churning program hung). So the handler only posts a semaphore (one
// of the few async-signal-safe calls) and returns; the interrupted thread
// goes on and releases whatever it held. A "signal thread", blocked in
// sem_wait with every signal masked, finalizes in normal thread context and
// then re-raises the signal with its default action, so the process still
// dies of it (status and all) a few milliseconds later. If finalize ever
// hangs, an alarm set by the handler ends the process anyway, of the
// signal (on_deadline).
// The signals the core took (their disposition was the default) and the
// action it set: the I/O library's hooks report it as SIG_DFL and put it
// back when the program asks for SIG_DFL.
unsigned g_taken = 0;
struct sigaction g_action;
constexpr unsigned kFinalizeDeadlineSeconds = 10;
sem_t g_signal_sem;
std::atomic<int> g_signal{0};  // the signal being handled; 0 none
// _exit/_Exit (finalize_before_exit): the signal thread is asked to
// finalize as for a signal, with this in place of the signal's number, and
// posts g_done_sem when the file is complete.
constexpr int kExitRequest = 1000;
constexpr int kStopRequest = 1001;  // end the signal thread, nothing else (stop_tracing_threads)
pthread_t g_signal_thread_id;
sem_t g_done_sem;
// A handler that waits for the finalize (on_signal): the signal thread
// moves g_wait from kWaiting to kFinalized and posts g_finalized_sem, and
// the handler's thread then dies of the signal itself; or the handler gives
// up (kGaveUp) and the signal thread re-raises when it is done.
enum : int { kNotWaiting = 0, kWaiting = 1, kFinalized = 2, kGaveUp = 3 };
std::atomic<int> g_wait{kNotWaiting};
sem_t g_finalized_sem;
constexpr long kHandlerWaitMs = 2000;
std::atomic<bool> g_signal_thread{false};  // this process has a signal thread (and its semaphores)
// The process whose signal thread the semaphores and g_signal belong to. A
// vfork child shares this memory until it execs (CPython's _posixsubprocess
// sets SIG_DFL there, which takes our handler): a signal it gets must touch
// none of it, or the parent's signal thread would finalize and kill the parent.
std::atomic<pid_t> g_owner_pid{0};
// Bumped by the writer as it drains and writes (note_writer_progress): a
// handler waiting for the finalize waits on while it moves.
std::atomic<uint64_t> g_writer_progress{0};
std::atomic<dft_signal_hook> g_signal_hook{nullptr};  // dft_set_signal_hook

void* signal_thread_main(void*) {
  pthread_setname_np(pthread_self(), "dftracer-signal");
  // It writes no file itself (finalize has the writer thread write and
  // close the trace), so it keeps none of the program's descriptors.
  become_tracer_thread({});
  while (sem_wait(&g_signal_sem) != 0) {
    if (errno != EINTR) return nullptr;  // no semaphore: never finalize without a signal
  }
  int sig = g_signal.load(std::memory_order_acquire);
  if (sig == 0 || sig == kStopRequest) return nullptr;
  // Neither finalize here stops the device source (Session::DeviceSource):
  // this thread has none of the program's descriptors, and the thread that
  // signalled or called _exit may hold a lock the source's flush needs.
  if (sig == kExitRequest) {
    Session::instance().finalize_before_image_ends(Session::DeviceSource::kLeave);
    sem_post(&g_done_sem);
    return nullptr;
  }
  if (dft_signal_hook hook = g_signal_hook.load(std::memory_order_acquire)) hook(sig);
  Session::instance().finalize(Session::DeviceSource::kLeave);  // waits for a finalize under way, then a no-op
  sem_post(&g_done_sem);  // an _exit waiting for a finalize goes on (and loses to the signal)
  // Given back first: under PRELOAD this signal() is the I/O library's hook,
  // which would otherwise set our handler again for SIG_DFL.
  __atomic_and_fetch(&g_taken, ~(1u << sig), __ATOMIC_RELEASE);
  signal(sig, SIG_DFL);
  int waiting = kWaiting;
  if (g_wait.compare_exchange_strong(waiting, kFinalized, std::memory_order_acq_rel)) {
    sem_post(&g_finalized_sem);  // the handler's thread dies of it, where it was
    return nullptr;
  }
  if (waiting == kFinalized) return nullptr;  // released at the file's end (note_trace_file_complete)
  // Every signal is blocked in this thread, so the kernel delivers it to
  // another thread, where the default action ends the process.
  kill(getpid(), sig);
  return nullptr;
}

// Started once per process (and again in a forked child, which has no copy
// of it). Signals are blocked in it, so it never runs a handler itself.
// False where it could not start: then no handler may be installed (one
// would post a semaphore nobody waits on, and the process would live on
// until the alarm).
bool start_signal_thread() {
  g_signal_thread.store(false, std::memory_order_relaxed);
  g_owner_pid.store(getpid(), std::memory_order_release);
  if (sem_init(&g_signal_sem, 0, 0) != 0 || sem_init(&g_done_sem, 0, 0) != 0 || sem_init(&g_finalized_sem, 0, 0) != 0)
    return false;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  // Joinable: stop_tracing_threads() waits until it is gone.
  if (pthread_create(&g_signal_thread_id, nullptr, &signal_thread_main, nullptr) != 0)
    log_warn("cannot start the signal thread; SIGTERM/SIGINT will not finalize the trace");
  else
    g_signal_thread.store(true, std::memory_order_release);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return g_signal_thread.load(std::memory_order_relaxed);
}

// Waits for `sem` until `ms` from now on the monotonic clock (a change of the
// wall clock neither shortens nor stretches it); 0 once posted.
int wait_posted(sem_t* sem, long ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += ms / 1000;
  deadline.tv_nsec += (ms % 1000) * 1000000;
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_nsec -= 1000000000;
    ++deadline.tv_sec;
  }
  int r;
  while ((r = sem_clockwait(sem, CLOCK_MONOTONIC, &deadline)) != 0 && errno == EINTR) {
  }
  return r;
}


// The finalize's deadline (an alarm: a pool of a GiB to drain, a slow
// parallel file system) ends the process of the signal it was finalizing
// for, not of SIGALRM's default action: the status stays the signal's
// (the file is then as after SIGKILL).
void on_deadline(int) {
  const int sig = g_signal.load(std::memory_order_acquire);
  if (sig > 0 && sig < 32) {
    // Given back first: under PRELOAD this sigaction is the I/O library's
    // hook, which would set our handler again for SIG_DFL.
    __atomic_and_fetch(&g_taken, ~(1u << sig), __ATOMIC_RELEASE);
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
  }
  signal(SIGALRM, SIG_DFL);  // not one of ours (cannot happen): as the alarm would have
  raise(SIGALRM);
}

// A signal the process sent itself (raise, abort, kill(getpid(), ...),
// pthread_kill; also CPython's exit after an uncaught KeyboardInterrupt,
// which sets SIGINT to SIG_DFL and kills itself, exiting 130 should it
// survive) is expected to end it inside that call: the code after it must
// not run. A fault (SIGSEGV & co. from the kernel) would re-run the
// faulting instruction. So for both the handler waits until the file is
// complete (the writer posts g_finalized_sem once `end` and the index are
// written, note_trace_file_complete, before the join and the freeing that
// may wait for a lock the interrupted code holds); then a sent signal is
// raised again on this thread (SA_RESETHAND left the default action: it is
// pending until the handler returns and ends the process before the
// interrupted code goes on, on the thread that raised it, so a core dump
// shows that thread), and a fault happens again. The wait goes on while the
// writer makes progress (a large pool to drain), up to the finalize's
// deadline, and ends after kHandlerWaitMs without progress (the interrupted
// thread holds a lock the finalize needs: a fault inside malloc): the
// process then dies all the same, its file unfinished, as after SIGKILL --
// the program must not run on because of the tracer. A signal another
// thread sent (pthread_kill(main, SIGTERM)) ends the process a few
// milliseconds later, but the sending thread runs on meanwhile.
void on_signal(int sig, siginfo_t* info, void*) {
  int saved = errno;
  if (getpid() != g_owner_pid.load(std::memory_order_acquire)) {
    // A vfork child (or a child cloned past pthread_atfork): the signal
    // thread, its semaphores and g_signal are another process's. It dies of
    // the signal as untraced: SA_RESETHAND left the default action in
    // this process's own table (a vfork child has a table of its own), and
    // no alarm is armed (it would outlive the exec).
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
    errno = saved;
    return;
  }
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig, std::memory_order_acq_rel)) {
    errno = saved;
    return;  // already handling one
  }
  struct sigaction alrm;
  if (sigaction(SIGALRM, nullptr, &alrm) == 0 && alrm.sa_handler == SIG_DFL && !(alrm.sa_flags & SA_SIGINFO)) {
    struct sigaction deadline;
    std::memset(&deadline, 0, sizeof deadline);
    deadline.sa_handler = &on_deadline;
    sigemptyset(&deadline.sa_mask);
    if (sigaction(SIGALRM, &deadline, nullptr) == 0) alarm(kFinalizeDeadlineSeconds);
  }
  const bool fault = info != nullptr && info->si_code > 0 && is_fault(sig);
  const bool own = info != nullptr && info->si_code <= 0 && info->si_pid == getpid();
  if (fault || own) g_wait.store(kWaiting, std::memory_order_release);
  sem_post(&g_signal_sem);
  if (fault || own) {
    // While the writer moves (a large pool to drain), on to the deadline;
    // kHandlerWaitMs without a move (a lock the interrupted code holds),
    // no longer.
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint64_t seen = g_writer_progress.load(std::memory_order_relaxed);
    while (wait_posted(&g_finalized_sem, kHandlerWaitMs) != 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      const uint64_t moved = g_writer_progress.load(std::memory_order_relaxed);
      if (moved == seen || now.tv_sec - start.tv_sec >= static_cast<time_t>(kFinalizeDeadlineSeconds)) {
        int waiting = kWaiting;
        if (g_wait.compare_exchange_strong(waiting, kGaveUp, std::memory_order_acq_rel)) {
          // Unfinished, rather than letting the code after kill/raise run
          // (or the fault's instruction run again into a handler).
          // SA_RESETHAND left the default action: a fault happens again and
          // kills, a sent signal is raised below.
          __atomic_and_fetch(&g_taken, ~(1u << sig), __ATOMIC_RELEASE);
        }
        break;
      }
      seen = moved;
    }
    if (!fault) raise(sig);  // the default action (SA_RESETHAND); pending until the handler returns
  }
  errno = saved;
}

bool is_on_signal(const struct sigaction& sa) { return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == &on_signal; }

bool g_handlers_installed = false;

// The signals the core took get their default action back where the
// handler is still ours. Under the I/O hooks sigaction() reports ours as
// SIG_DFL (signal_hooks.c), so that reading counts as ours too; the bit is
// cleared first, so the hooks' signal() sets the real SIG_DFL.
void give_back_taken_signals() {
  for (int sig : kTakenSignals) {
    if (!(__atomic_fetch_and(&g_taken, ~(1u << sig), __ATOMIC_ACQ_REL) & (1u << sig))) continue;
    struct sigaction now;
    if (sigaction(sig, nullptr, &now) != 0) continue;
    if (is_on_signal(now) || (now.sa_handler == SIG_DFL && !(now.sa_flags & SA_SIGINFO))) signal(sig, SIG_DFL);
  }
}

// One word shared by this process and every process forked from it (an
// anonymous shared mapping survives fork, not exec): set by the first of
// them that says a forked child cannot trace. Under `ulimit -n 5` every
// child of a forking program fails to create its file the same way; the
// user needs to read it once, not once a child.
std::atomic<int>* g_tree_said = nullptr;

void map_tree_flags() {
  void* p = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) g_tree_said = new (p) std::atomic<int>(0);
}

// Whether this child should say that it cannot trace: the first in its
// process tree (every time where the shared word could not be mapped).
bool first_child_to_say() { return g_tree_said == nullptr || g_tree_said->exchange(1, std::memory_order_relaxed) == 0; }

// The taken signals stay blocked in the forking thread from prepare until the
// after-fork handlers are done. A signal sent to the child in that window
// (Pool.terminate() signals a worker it has just forked) would otherwise run
// on_signal there, post the parent's copy of the semaphore and be forgotten
// when the child resets its signal state: the child ran on, unfinished,
// until the alarm killed it. Blocked, it stays pending and is delivered once
// the child's own signal thread is there to finalize. fork() runs the
// prepare handler and the after-fork handler in the same thread (in the
// child too), so the mask to restore is kept per thread: two threads may fork
// at once.
thread_local sigset_t t_mask_before_fork;

void block_terminating_signals() {
  sigset_t term;
  sigemptyset(&term);
  for (int sig : kTakenSignals) sigaddset(&term, sig);
  pthread_sigmask(SIG_BLOCK, &term, &t_mask_before_fork);
}

void fork_prepare() {
  Session::instance().prepare_fork();
  if (g_handlers_installed) block_terminating_signals();
}
void fork_parent() {
  Session::instance().after_fork_in_parent();
  if (g_handlers_installed) pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}
void fork_child() {
  const bool blocked = g_handlers_installed;  // false from here where the child's signal thread cannot start
  Session::instance().after_fork_in_child();
  if (blocked) pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}

}  // namespace

void note_writer_progress() { g_writer_progress.fetch_add(1, std::memory_order_relaxed); }

// The trace's `end` and index are written (the writer thread, at its finish):
// a handler waiting for it lets its thread die of the signal now, without
// waiting for the rest of the finalize (joining the writer, freeing the pool:
// free() may wait for malloc's lock, held by a thread that aborted in it).
void note_trace_file_complete() {
  int waiting = kWaiting;
  if (g_wait.compare_exchange_strong(waiting, kFinalized, std::memory_order_acq_rel)) sem_post(&g_finalized_sem);
}

// _exit may be called from a signal handler (torch's DataLoader workers end
// so on their parent's SIGTERM), where finalizing on this thread could wait
// forever for a lock the interrupted code holds (process_hooks.cc's signal
// handler says why): the signal thread finalizes while this thread waits,
// at most kFinalizeDeadlineSeconds. Only sem_post, sem_clockwait and
// clock_gettime here. Without a signal thread (none was needed), on this
// thread.
void finalize_before_exit() {
  if (!Session::instance().enabled()) return;
  if (!g_signal_thread.load(std::memory_order_acquire)) {
    Session::instance().finalize_before_image_ends(Session::DeviceSource::kLeave);  // maybe in a signal handler
    return;
  }
  int saved = errno;
  int none = 0;
  if (g_signal.compare_exchange_strong(none, kExitRequest, std::memory_order_acq_rel)) sem_post(&g_signal_sem);
  wait_posted(&g_done_sem, kFinalizeDeadlineSeconds * 1000L);
  sem_post(&g_done_sem);  // another thread's _exit goes on too
  errno = saved;
}

// Before a change of credentials or namespaces (the I/O library's hooks):
// glibc applies setuid & co. to every thread and aborts when one of ours
// refuses, and a user namespace wants a single-threaded process. So the
// trace is finalized (removed if empty), the signals the core took get their
// default action back, and the signal thread ends; from here the process
// runs as untraced.
void stop_tracing_threads() {
  Session::instance().finalize_before_image_ends(Session::DeviceSource::kStop);
  // No signal thread first: the hooks' signal(SIG_DFL) would take the
  // signal again while there is one.
  const bool had_signal_thread = g_signal_thread.exchange(false, std::memory_order_acq_rel);
  give_back_taken_signals();
  g_handlers_installed = false;  // a later fork starts none either
  if (!had_signal_thread) {
    wait_until_tracer_threads_gone();  // the writer's
    return;
  }
  int none = 0;
  if (g_signal.compare_exchange_strong(none, kStopRequest, std::memory_order_acq_rel)) sem_post(&g_signal_sem);
  // A signal being handled ends the process; an _exit being finalized
  // returns soon after.
  pthread_join(g_signal_thread_id, nullptr);
  wait_until_tracer_threads_gone();
}

void install_process_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    map_tree_flags();
    std::memset(&g_action, 0, sizeof g_action);
    g_action.sa_sigaction = &on_signal;
    sigemptyset(&g_action.sa_mask);
    // A second signal while finalizing kills at once, as the user asked.
    g_action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_RESTART;
    std::atexit(&at_exit);
    pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
    // Only where the signal would kill the process anyway: an application's
    // own handler (Python's SIGINT -> KeyboardInterrupt, say) is left alone.
    // None where the signal thread cannot start.
    for (int sig : kTakenSignals) {
      struct sigaction old;
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
        if (!g_handlers_installed && !start_signal_thread()) break;
        g_handlers_installed = true;
        __atomic_or_fetch(&g_taken, 1u << sig, __ATOMIC_RELEASE);
        sigaction(sig, &g_action, nullptr);
      }
    }
  });
}

// Lock order (every path that nests these takes them in this order):
// lifecycle -> writer wake-up -> writer work -> registry -> pool -> string
// table. The writer's cycle holds its work lock and takes the registry and
// pool locks; the clock's rate lock is taken last (ensure_rate takes no
// other lock while holding it); nothing holds the registry, pool or string-table lock while
// notifying the writer (an exiting thread used to, and deadlocked a fork).
void Session::prepare_fork() {
  lifecycle_mu_.lock();
  if (writer_) writer_->lock_for_fork();
  registry_.lock_for_fork();
  pool_.lock_for_fork();
  StringTable::instance().lock_for_fork();
  Clock::instance().lock_for_fork();
}

void Session::after_fork_in_parent() {
  Clock::instance().unlock_after_fork();
  StringTable::instance().unlock_after_fork();
  pool_.unlock_after_fork();
  registry_.unlock_after_fork();
  if (writer_) writer_->unlock_after_fork();
  lifecycle_mu_.unlock();
}

void Session::after_fork_in_child() {
  // A device source's threads and state are the parent's: no launch scope
  // (and no stop of the parent's source at the child's finalize).
  __atomic_store_n(&dft_launch_scope_current, nullptr, __ATOMIC_RELEASE);
  device_stop_.store(0, std::memory_order_relaxed);  // a stop under way at fork is the parent's
  // The parent's signal thread was not copied: the child gets its own (a
  // signal the parent was handling is the parent's, not the child's).
  g_signal_thread.store(false, std::memory_order_relaxed);
  forget_tracer_threads();
  if (g_handlers_installed) {
    g_signal.store(0, std::memory_order_relaxed);
    g_wait.store(kNotWaiting, std::memory_order_relaxed);
    if (!start_signal_thread()) {
      // The parent's handlers were inherited: the default action back,
      // as untraced, since nothing here would finalize.
      give_back_taken_signals();
      g_handlers_installed = false;
    }
  }
  Clock::instance().unlock_after_fork();
  StringTable::instance().unlock_after_fork();
  pool_.unlock_after_fork();
  registry_.unlock_after_fork();
  if (writer_) writer_->unlock_after_fork();
  bool was_enabled = enabled_.load(std::memory_order_relaxed);
  set_enabled(false);
  // The parent's writer thread does not exist here and its buffers hold the
  // parent's events: abandon both (never written twice), start afresh.
  if (writer_) {
    writer_->forget_thread();
    writer_.reset();
  }
  tls_buffer_ = nullptr;
  registry_.abandon_after_fork(pool_.free_list_in_child());
  pool_.reset_after_fork();
  if (was_enabled) {
    std::string error;
    if (start_session(config_, -1, &error) != 0 && first_child_to_say())
      log_warn(error + "; tracing is off in child " + std::to_string(getpid()) +
               " (said once: other forked children that fail the same way say nothing)");
  }
  lifecycle_mu_.unlock();
}

}  // namespace dftracer

// The I/O library's sigaction/signal hooks report this handler as SIG_DFL
// and set it where the program asks for SIG_DFL (src/capture/io/signal_hooks.c).
extern "C" void dft_finalize_before_exit(void) { dftracer::finalize_before_exit(); }
extern "C" void dft_set_signal_hook(dft_signal_hook hook) { dftracer::g_signal_hook.store(hook, std::memory_order_release); }
extern "C" void dft_stop_tracing_threads(void) { dftracer::stop_tracing_threads(); }
extern "C" void dft_suspend_for_exec(void) { dftracer::Session::instance().suspend_for_exec(); }
extern "C" void dft_resume_after_failed_exec(void) { dftracer::Session::instance().resume_after_failed_exec(); }

// The handler is an SA_SIGINFO one; signal() returns it as a plain pointer.
extern "C" int dft_is_tracer_signal_handler(void (*handler)(int)) {
  return reinterpret_cast<void*>(handler) == reinterpret_cast<void*>(&dftracer::on_signal);
}

// Also for a signal of the set the core did not take at start because the
// program had a handler then (Python's SIGINT) and now gives it the default
// action (`signal.signal(SIGINT, SIG_DFL)`, common in command-line tools):
// it is taken from here on, where this process has a signal thread and is
// not already ending of a signal (the signal thread's own signal(sig,
// SIG_DFL) before it re-raises must get the default action).
extern "C" int dft_tracer_signal_action(int sig, struct sigaction* action) {
  using namespace dftracer;
  if (sig <= 0 || sig >= 32) return 0;
  // A vfork child (its signal state is its own, its memory the parent's):
  // the real SIG_DFL, and nothing of the parent's state changed.
  if (getpid() != g_owner_pid.load(std::memory_order_acquire)) return 0;
  const unsigned bit = 1u << sig;
  if (!(__atomic_load_n(&g_taken, __ATOMIC_ACQUIRE) & bit)) {
    bool in_set = false;
    for (int s : kTakenSignals) in_set |= s == sig;
    if (!in_set || !g_signal_thread.load(std::memory_order_acquire) || g_signal.load(std::memory_order_acquire) != 0)
      return 0;
    __atomic_or_fetch(&g_taken, bit, __ATOMIC_ACQ_REL);
  }
  *action = g_action;
  return 1;
}
