// TSC calibration under preemption, on a simulated clock: a 3 GHz TSC and a
// monotonic clock that both follow one simulated "true" time, where every
// read costs 20 ns and a preemption of 5 ms can be scheduled between two
// reads. Converting a tick taken one second after the anchor must land
// within a microsecond of the truth, whatever the preemptions; an
// unbracketed "monotonic, then ticks" calibration is ~80 ms off here.
#include "tsc_calibration.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace dftracer {
namespace {

constexpr uint64_t kTicksPerNs = 3;
constexpr uint64_t kReadCostNs = 20;
constexpr uint64_t kPreemptNs = 5000000;  // 5 ms

// Preempt: where the next scheduled preemption falls.
enum class Preempt { kNone, kBeforeMono, kAfterMono, kEveryRead };

struct SimClock {
  mutable uint64_t now_ns = 1000000000;  // the true time
  mutable Preempt preempt = Preempt::kNone;
  mutable int preemptions = 0;
  mutable int mono_reads = 0;
  int preempt_after_mono_read = -1;  // index of the monotonic read to preempt after

  void advance(uint64_t ns) const { now_ns += ns; }
  void maybe_preempt(Preempt where) const {
    if (preempt == Preempt::kEveryRead || preempt == where) {
      advance(kPreemptNs);
      ++preemptions;
      if (preempt != Preempt::kEveryRead) preempt = Preempt::kNone;
    }
  }
  // The TSC counts from its own origin, not the monotonic clock's.
  uint64_t ticks() const {
    advance(kReadCostNs);
    uint64_t t = now_ns * kTicksPerNs + 777;
    maybe_preempt(Preempt::kBeforeMono);  // the preemption falls after this read
    return t;
  }
  uint64_t mono_ns() const {
    advance(kReadCostNs);
    uint64_t m = now_ns;
    if (mono_reads++ == preempt_after_mono_read) {
      advance(kPreemptNs);
      ++preemptions;
    }
    maybe_preempt(Preempt::kAfterMono);
    return m;
  }
  // The true monotonic time of a tick value.
  static uint64_t truth_of(uint64_t ticks) { return (ticks - 777) / kTicksPerNs; }
};

// Anchors, calibrates at +60 ms with a preemption scheduled inside the
// sample, then converts a tick taken at +1 s: the error in ns.
int64_t error_after_preempted_calibration(Preempt where) {
  SimClock clock;
  TscCalibration cal;
  cal.start(clock);
  clock.advance(60000000);
  clock.preempt = where;
  cal.update(cal.sample(clock));
  EXPECT_EQ(clock.preempt, Preempt::kNone) << "the scheduled preemption did not happen";
  clock.advance(1000000000);
  uint64_t t = clock.ticks();
  return static_cast<int64_t>(cal.to_mono_ns(t, cal.ns_per_tick()) - SimClock::truth_of(t));
}

TEST(TscCalibration, PreemptionBetweenMonotonicAndTicksReadsIsRejected) {
  int64_t err = error_after_preempted_calibration(Preempt::kAfterMono);
  EXPECT_LT(err < 0 ? -err : err, 1000) << "converted time is off by " << err << " ns";
}

TEST(TscCalibration, PreemptionBetweenTicksAndMonotonicReadsIsRejected) {
  int64_t err = error_after_preempted_calibration(Preempt::kBeforeMono);
  EXPECT_LT(err < 0 ? -err : err, 1000) << "converted time is off by " << err << " ns";
}

TEST(TscCalibration, UninterruptedCalibrationIsExact) {
  int64_t err = error_after_preempted_calibration(Preempt::kNone);
  EXPECT_LT(err < 0 ? -err : err, 100) << "converted time is off by " << err << " ns";
}

// When every try of a sample is interrupted the sample is rejected and the
// previous rate stays, rather than a rate measured across a preemption.
TEST(TscCalibration, SampleWithEveryBracketInterruptedKeepsThePreviousRate) {
  SimClock clock;
  TscCalibration cal;
  cal.start(clock);
  clock.advance(60000000);
  ASSERT_TRUE(cal.update(cal.sample(clock)));
  double good = cal.ns_per_tick();
  clock.advance(60000000);
  clock.preempt = Preempt::kEveryRead;
  EXPECT_FALSE(cal.update(cal.sample(clock)));
  EXPECT_GE(clock.preemptions, TscCalibration::kTries);
  EXPECT_DOUBLE_EQ(cal.ns_per_tick(), good);
}

// The anchor itself is bracketed: a preemption while anchoring does not
// shift every later timestamp.
TEST(TscCalibration, PreemptionWhileAnchoringDoesNotShiftTheAnchor) {
  SimClock clock;
  // start() measures the floor with kFloorTries brackets, then anchors: the
  // preemption hits the anchor's first bracket.
  clock.preempt_after_mono_read = TscCalibration::kFloorTries;
  TscCalibration cal;
  cal.start(clock);
  ASSERT_EQ(clock.preemptions, 1);
  const ClockSample& anchor = cal.anchor();
  int64_t skew = static_cast<int64_t>(anchor.mono_ns - SimClock::truth_of(anchor.ticks));
  EXPECT_LT(skew < 0 ? -skew : skew, 100) << "anchor pair is " << skew << " ns apart";
  EXPECT_LE(anchor.bracket, 2 * cal.floor());
}

}  // namespace
}  // namespace dftracer
