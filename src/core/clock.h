// Clock: a fast raw tick source for the hot path and its conversion to
// nanoseconds since the Unix epoch, done later by the writer.
//
// Ticks are the TSC where it is invariant (constant + nonstop: one `rdtsc`,
// no syscall, no vDSO), otherwise CLOCK_MONOTONIC nanoseconds. Epoch time is
// anchored once at process start (realtime - monotonic), so timestamps line
// up across processes and hosts but never jump when NTP steps the clock.
// The tick rate is re-measured against CLOCK_MONOTONIC on every writer
// cycle over the whole run's baseline: a tick is converted after it was
// taken, so the error stays at clock-read jitter however long the run.
// Every (ticks, monotonic) pair is a bracketed read (tsc_calibration.h), so
// a preemption between the two reads is detected instead of shifting events.
#ifndef DFTRACER_SRC_CORE_CLOCK_H_
#define DFTRACER_SRC_CORE_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <ctime>
#include <mutex>

#include "tsc_calibration.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace dftracer {

class Clock {
 public:
  static Clock& instance();

  // Raw ticks: the only clock read on the hot path. Static: one load of
  // the chosen source (a hidden, constant-initialized word), no call to
  // instance() and no guard check; the first read makes the Clock, which
  // chooses the source.
  static inline uint64_t ticks() {
    const int source = source_.load(std::memory_order_relaxed);
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(source == kSourceTsc, 1)) return __rdtsc();
#endif
    return other_ticks();
  }

  // ticks() in two halves, for a caller that keeps its fast path free of
  // calls: whether ticks() is `rdtsc` (false until the Clock exists, and
  // on other CPUs), and the TSC itself (only where ticks_are_tsc()).
  static inline bool ticks_are_tsc() { return source_.load(std::memory_order_relaxed) == kSourceTsc; }
#if defined(__x86_64__) || defined(__i386__)
  static inline uint64_t tsc() { return __rdtsc(); }
#else
  static inline uint64_t tsc() { return other_ticks(); }
#endif

  static inline uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }

  // Nanoseconds since the epoch from the monotonic clock and the anchor.
  uint64_t now_ns() const { return monotonic_ns() + epoch_offset_ns_; }

  // Converts ticks to epoch nanoseconds with the latest calibration.
  uint64_t to_ns(uint64_t ticks) const;

  // Re-measures the tick rate over the baseline since process start.
  // Called by the writer before it converts a batch; cheap (a few clock
  // reads; more only when a bracket was interrupted).
  void recalibrate();

  bool uses_tsc() const { return use_tsc_; }
  // The anchor: realtime - monotonic at start, in ns. Every timestamp is a
  // monotonic reading plus this, so two files' clocks differ by their
  // anchors' error (NTP) plus drift; written in each file's `start` event.
  uint64_t epoch_offset_ns() const { return epoch_offset_ns_; }

  // prepare_fork takes the rate lock (last in its lock order) so that a
  // child never inherits it held by a thread it does not have.
  void lock_for_fork() { rate_mu_.lock(); }
  void unlock_after_fork() { rate_mu_.unlock(); }

 private:
  Clock();
  // The hardware sources, for TscCalibration.
  struct Sources {
    uint64_t ticks() const;
    uint64_t mono_ns() const { return monotonic_ns(); }
  };

  // The first rate, measured once, on the first conversion (or the
  // writer's first recalibrate), whichever thread gets there first.
  void ensure_rate() const;
  static constexpr uint64_t kFirstBaselineNs = 200000;
  // ticks() from CLOCK_MONOTONIC, or before the Clock exists (makes it,
  // then reads its source). Out of line: ticks() inlines to a load, a
  // branch and `rdtsc`, with no call its callers need a frame for.
  static uint64_t other_ticks();
  enum : int { kSourceUnknown = 0, kSourceTsc = 1, kSourceMonotonic = 2 };
  // Set once, at the end of the constructor (the TSC anchor taken first).
  static std::atomic<int> source_ __attribute__((visibility("hidden")));
  bool use_tsc_ = false;
  uint64_t epoch_offset_ns_ = 0;  // realtime - monotonic at start
  // Anchor fixed in the constructor; rate via ns_per_tick_. Written by
  // ensure_rate (once, under rate_mu_), then by the writer's recalibrate
  // only.
  mutable TscCalibration calibration_;
  mutable std::atomic<double> ns_per_tick_{1.0};
  mutable std::atomic<bool> rate_ready_{false};
  mutable std::mutex rate_mu_;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_CLOCK_H_
