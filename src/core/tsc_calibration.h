// TSC calibration against CLOCK_MONOTONIC, with bracketed clock reads.
//
// Calibrating means pairing a tick count with a monotonic time taken at the
// same instant. Two reads in a row ("monotonic, then ticks") are not the same
// instant when the thread is preempted between them: the pair is off by the
// whole preemption (milliseconds on a loaded machine), and since the writer
// recalibrates every cycle, every event converted in that cycle is shifted.
// So each pair is bracketed, as Quill's RdtscClock does: read ticks, the
// monotonic clock, ticks again; the monotonic read happened somewhere inside
// [t0, t1], so the pair is (midpoint, mono) with an error of at most half
// the bracket. A long bracket means the thread was preempted or interrupted
// inside it: try again, keep the tightest, and reject the sample when even
// that one is long (the previous rate stays; the next cycle tries again).
//
// The sources are a template parameter so tests can drive the calibration
// with a simulated clock and scheduled preemptions (tsc_calibration_test.cc).
#ifndef DFTRACER_SRC_CORE_TSC_CALIBRATION_H_
#define DFTRACER_SRC_CORE_TSC_CALIBRATION_H_

#include <cstdint>

namespace dftracer {

struct ClockSample {
  uint64_t ticks = 0;    // midpoint of the bracket
  uint64_t mono_ns = 0;  // the monotonic read inside it
  uint64_t bracket = ~uint64_t{0};  // t1 - t0, in ticks
};

// The tightest of up to `tries` brackets; stops early at one no longer than
// `good` ticks (the usual cost of the three reads, measured at start-up).
template <class Sources>
ClockSample bracketed_sample(const Sources& src, int tries, uint64_t good) {
  ClockSample best;
  for (int i = 0; i < tries; ++i) {
    uint64_t t0 = src.ticks();
    uint64_t m = src.mono_ns();
    uint64_t t1 = src.ticks();
    if (t1 < t0) continue;  // migrated to a CPU whose TSC is behind: not a bracket
    uint64_t b = t1 - t0;
    if (b < best.bracket) best = ClockSample{t0 + b / 2, m, b};
    if (b <= good) break;
  }
  return best;
}

// The conversion ticks -> monotonic ns: an anchor pair taken once, and a
// rate measured over the whole baseline since the anchor, so the error of one
// sample is divided by the run's length. Not thread-safe by itself: Clock
// publishes the rate atomically.
class TscCalibration {
 public:
  // The floor: the tightest bracket of many tries, i.e. what the three
  // reads cost on this machine when nothing interrupts them.
  static constexpr int kFloorTries = 32;
  // Per sample: stop at a bracket within 2x the floor, else keep the best of
  // this many; reject the sample when the best is over kRejectFactor floors.
  static constexpr int kTries = 16;
  static constexpr uint64_t kRejectFactor = 16;

  template <class Sources>
  void start(const Sources& src) {
    floor_ = bracketed_sample(src, kFloorTries, 0).bracket;
    if (floor_ == 0) floor_ = 1;
    anchor_ = sample(src);
  }

  template <class Sources>
  ClockSample sample(const Sources& src) const {
    return bracketed_sample(src, kTries, 2 * floor_);
  }

  // Rate from the anchor to `s`. False (rate unchanged) when `s` is a bad
  // bracket or not after the anchor.
  bool update(const ClockSample& s) {
    if (s.bracket > kRejectFactor * floor_) return false;
    if (s.ticks <= anchor_.ticks || s.mono_ns <= anchor_.mono_ns) return false;
    ns_per_tick_ = static_cast<double>(s.mono_ns - anchor_.mono_ns) / static_cast<double>(s.ticks - anchor_.ticks);
    return true;
  }

  // Monotonic ns of `ticks` at the given rate.
  uint64_t to_mono_ns(uint64_t ticks, double ns_per_tick) const {
    int64_t dt = static_cast<int64_t>(ticks - anchor_.ticks);
    int64_t dns = static_cast<int64_t>(static_cast<double>(dt) * ns_per_tick);
    return anchor_.mono_ns + static_cast<uint64_t>(dns);
  }

  const ClockSample& anchor() const { return anchor_; }
  uint64_t floor() const { return floor_; }
  double ns_per_tick() const { return ns_per_tick_; }

 private:
  ClockSample anchor_;
  uint64_t floor_ = 1;
  double ns_per_tick_ = 1.0;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_TSC_CALIBRATION_H_
