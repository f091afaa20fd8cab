#include "clock.h"

#include "dftracer/dftracer.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dftracer {
namespace {

// Invariant TSC: CPUID.80000007H:EDX[8]. Without it the TSC may stop in deep
// C-states or change rate with frequency, so we fall back to the vDSO clock.
bool has_invariant_tsc() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

}  // namespace

Clock& Clock::instance() {
  static Clock* clock = new Clock();  // never destroyed: used until the last exit handler
  return *clock;
}

Clock::Clock() {
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  uint64_t mono = monotonic_ns();
  uint64_t real = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + static_cast<uint64_t>(rt.tv_nsec);
  epoch_offset_ns_ = real - mono;
  use_tsc_ = has_invariant_tsc() && getenv("DFTRACER_NO_TSC") == nullptr;
  __atomic_store_n(&dft_hot.tsc, use_tsc_ ? 1 : 0, __ATOMIC_RELEASE);  // dft_ticks_inline() may now read the TSC
  anchor_mono_ns_ = monotonic_ns();
  anchor_ticks_ = ticks();
  if (use_tsc_) {
    // A first estimate over ~2 ms; recalibrate() refines it as the run goes.
    uint64_t m0 = monotonic_ns(), t0 = ticks(), m1 = m0, t1 = t0;
    while (m1 - m0 < 2000000) {
      m1 = monotonic_ns();
      t1 = ticks();
    }
    ns_per_tick_.store(static_cast<double>(m1 - m0) / static_cast<double>(t1 - t0),
                       std::memory_order_relaxed);
  }
}

void Clock::recalibrate() {
  if (!use_tsc_) return;
  uint64_t m = monotonic_ns();
  uint64_t t = ticks();
  // Below 50 ms of baseline the start-up estimate is as good as this one.
  if (m - anchor_mono_ns_ < 50000000 || t <= anchor_ticks_) return;
  ns_per_tick_.store(static_cast<double>(m - anchor_mono_ns_) / static_cast<double>(t - anchor_ticks_),
                     std::memory_order_relaxed);
}

uint64_t Clock::to_ns(uint64_t t) const {
  if (!use_tsc_) return t + epoch_offset_ns_;
  double k = ns_per_tick_.load(std::memory_order_relaxed);
  int64_t dt = static_cast<int64_t>(t - anchor_ticks_);
  int64_t dns = static_cast<int64_t>(static_cast<double>(dt) * k);
  return anchor_mono_ns_ + epoch_offset_ns_ + static_cast<uint64_t>(dns);
}

}  // namespace dftracer
