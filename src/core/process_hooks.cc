#include "process_hooks.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "diagnostics.h"
#include "session.h"
#include "string_table.h"
#include "writer.h"

namespace dftracer {
namespace {

void at_exit() { Session::instance().finalize(); }

void on_signal(int sig) {
  Session::instance().finalize_from_signal();
  signal(sig, SIG_DFL);
  raise(sig);
}

void fork_prepare() { Session::instance().prepare_fork(); }
void fork_parent() { Session::instance().after_fork_in_parent(); }
void fork_child() { Session::instance().after_fork_in_child(); }

}  // namespace

void install_process_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(&at_exit);
    pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
    // Only where the signal would kill the process anyway: an application's
    // own handler (Python's SIGINT -> KeyboardInterrupt, say) is left alone.
    for (int sig : {SIGTERM, SIGINT}) {
      struct sigaction old;
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_handler = &on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sig, &sa, nullptr);
      }
    }
  });
}

void Session::finalize_from_signal() {
  // Best effort: if another thread is inside init/finalize, do not wait.
  if (lifecycle_mu_.try_lock()) {
    finalize_locked();
    lifecycle_mu_.unlock();
  }
}

void Session::prepare_fork() {
  lifecycle_mu_.lock();
  if (writer_) writer_->lock_for_fork();
  registry_.lock_for_fork();
  pool_.lock_for_fork();
  StringTable::instance().lock_for_fork();
}

void Session::after_fork_in_parent() {
  StringTable::instance().unlock_after_fork();
  pool_.unlock_after_fork();
  registry_.unlock_after_fork();
  if (writer_) writer_->unlock_after_fork();
  lifecycle_mu_.unlock();
}

void Session::after_fork_in_child() {
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
  registry_.abandon_after_fork();
  pool_.reset_after_fork();
  if (was_enabled) {
    std::string error;
    if (start_session(config_, -1, &error) != 0) log_warn(error + "; tracing is off in child " + std::to_string(getpid()));
  }
  lifecycle_mu_.unlock();
}

}  // namespace dftracer
