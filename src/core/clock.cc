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

std::atomic<int> Clock::source_{Clock::kSourceUnknown};

uint64_t Clock::other_ticks() {
  if (source_.load(std::memory_order_relaxed) == kSourceUnknown) instance();
  return source_.load(std::memory_order_relaxed) == kSourceTsc ? Sources{}.ticks() : monotonic_ns();
}

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
  if (!use_tsc_) {  // ticks are monotonic ns: nothing to calibrate
    source_.store(kSourceMonotonic, std::memory_order_release);
    return;
  }
  // Only the anchor here: the rate is measured when the first tick is
  // converted (ensure_rate), by when the baseline has grown on its own. A
  // short-lived process no longer spends ~2 ms of CPU at start measuring it.
  calibration_.start(Sources{});
  source_.store(kSourceTsc, std::memory_order_release);
}

void Clock::ensure_rate() const {
  if (rate_ready_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(rate_mu_);
  if (rate_ready_.load(std::memory_order_relaxed)) return;
  // The rate from the anchor to now, over at least kFirstBaselineNs (longer
  // if its end sample keeps being interrupted, up to ~20 ms). Every tick
  // converted with it was taken before this sample, so the conversion
  // interpolates: its error stays at the brackets' error, whatever the
  // baseline.
  uint64_t begin = calibration_.anchor().mono_ns;
  for (;;) {
    uint64_t now = monotonic_ns();
    if (now - begin < kFirstBaselineNs) continue;
    if (calibration_.update(calibration_.sample(Sources{})) || now - begin > 20000000) break;
  }
  ns_per_tick_.store(calibration_.ns_per_tick(), std::memory_order_relaxed);
  rate_ready_.store(true, std::memory_order_release);
}

void Clock::recalibrate() {
  if (!use_tsc_) return;
  ensure_rate();
  ClockSample s = calibration_.sample(Sources{});
  // Each cycle: the ticks it converts were all taken before this sample,
  // so they are interpolated between the anchor and it, never
  // extrapolated from an older, shorter baseline.
  // Only the writer thread calls this, so calibration_ has one writer;
  // recording threads never read it (they only take ticks).
  if (calibration_.update(s)) ns_per_tick_.store(calibration_.ns_per_tick(), std::memory_order_relaxed);
}

uint64_t Clock::to_ns(uint64_t t) const {
  if (!use_tsc_) return t + epoch_offset_ns_;
  ensure_rate();
  return calibration_.to_mono_ns(t, ns_per_tick_.load(std::memory_order_relaxed)) + epoch_offset_ns_;
}

}  // namespace dftracer
