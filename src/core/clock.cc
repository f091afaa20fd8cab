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

uint64_t Clock::Sources::ticks() const {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return monotonic_ns();
#endif
}

Clock::Clock() {
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  uint64_t mono = monotonic_ns();
  uint64_t real = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + static_cast<uint64_t>(rt.tv_nsec);
  epoch_offset_ns_ = real - mono;
  use_tsc_ = has_invariant_tsc() && getenv("DFTRACER_NO_TSC") == nullptr;
  __atomic_store_n(&dft_hot.tsc, use_tsc_ ? 1 : 0, __ATOMIC_RELEASE);  // dft_ticks_inline() may now read the TSC
  if (!use_tsc_) return;  // ticks are monotonic ns: nothing to calibrate
  Sources src;
  calibration_.start(src);
  // A first estimate over ~2 ms (longer if its end sample keeps being
  // interrupted, up to ~20 ms); recalibrate() refines it as the run goes.
  uint64_t begin = calibration_.anchor().mono_ns;
  for (;;) {
    uint64_t now = monotonic_ns();
    if (now - begin < 2000000) continue;
    if (calibration_.update(calibration_.sample(src)) || now - begin > 20000000) break;
  }
  ns_per_tick_.store(calibration_.ns_per_tick(), std::memory_order_relaxed);
}

void Clock::recalibrate() {
  if (!use_tsc_) return;
  ClockSample s = calibration_.sample(Sources{});
  // Below 50 ms of baseline the start-up estimate is as good as this one.
  if (s.mono_ns - calibration_.anchor().mono_ns < 50000000) return;
  // Only the writer thread calls this, so calibration_ has one writer;
  // recording threads never read it (they only take ticks).
  if (calibration_.update(s)) ns_per_tick_.store(calibration_.ns_per_tick(), std::memory_order_relaxed);
}

uint64_t Clock::to_ns(uint64_t t) const {
  if (!use_tsc_) return t + epoch_offset_ns_;
  return calibration_.to_mono_ns(t, ns_per_tick_.load(std::memory_order_relaxed)) + epoch_offset_ns_;
}

}  // namespace dftracer
