// The clock's conversion of ticks to epoch time, through the C API: a tick
// converts to a time between the two clock reads around it, whether it is
// the first tick converted (the rate is measured then, not at start-up) or
// a later one.
#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>

#include "dftracer/dftracer.h"

namespace {

// A tick read between two epoch reads converts to a time between them, give
// or take the clock reads' jitter (a few microseconds under load).
void expect_bracketed(uint64_t before, uint64_t tick, uint64_t after) {
  constexpr uint64_t kSlackNs = 20000;
  const uint64_t ns = dft_ticks_to_ns(tick);
  EXPECT_GE(ns + kSlackNs, before);
  EXPECT_LE(ns, after + kSlackNs);
}

TEST(Clock, TicksConvertBetweenTheClockReadsAroundThem) {
  // Taken before anything was converted in this process: the first
  // conversion measures the rate.
  uint64_t b0 = dft_now_ns();
  uint64_t t0 = dft_ticks();
  uint64_t a0 = dft_now_ns();
  timespec pause = {0, 30 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  uint64_t b1 = dft_now_ns();
  uint64_t t1 = dft_ticks();
  uint64_t a1 = dft_now_ns();
  expect_bracketed(b1, t1, a1);
  expect_bracketed(b0, t0, a0);
  // 30 ms apart, converted with the rate measured over a shorter baseline
  // and after it: both ends stay within the slack.
  const uint64_t gap = dft_ticks_to_ns(t1) - dft_ticks_to_ns(t0);
  EXPECT_GE(gap + 40000, b1 - a0);
  EXPECT_LE(gap, a1 - b0 + 40000);
}

}  // namespace
