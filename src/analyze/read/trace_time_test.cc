// Trace times as exact nanoseconds: the text-to-ns parser on every number form
// a trace holds, and both line decoders (fast path and simdjson) reading the
// writer's three-decimal microseconds without losing a nanosecond.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "event_decoder.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {
namespace {

int64_t ns_of(const std::string& text) {
  int64_t ns = -12345;
  EXPECT_TRUE(us_text_to_ns(text, ns)) << text;
  return ns;
}

TEST(TraceTime, MicrosecondTextToExactNanoseconds) {
  EXPECT_EQ(ns_of("0"), 0);
  EXPECT_EQ(ns_of("-0"), 0);
  EXPECT_EQ(ns_of("7"), 7000);
  EXPECT_EQ(ns_of("0.125"), 125);
  EXPECT_EQ(ns_of("1727387307981693.001"), 1727387307981693001);
  EXPECT_EQ(ns_of("1727387307981693.999"), 1727387307981693999);
  EXPECT_EQ(ns_of("1727387307981693.5"), 1727387307981693500);
  EXPECT_EQ(ns_of("-3.25"), -3250);
  // More than three decimals: nearest ns, ties away from zero.
  EXPECT_EQ(ns_of("0.0004"), 0);
  EXPECT_EQ(ns_of("0.0005"), 1);
  EXPECT_EQ(ns_of("-0.0005"), -1);
  EXPECT_EQ(ns_of("2.00049999999999999999999999999"), 2000);
  EXPECT_EQ(ns_of("123.4567"), 123457);
  // Exponents (Chrome traces from other tools), exact too.
  EXPECT_EQ(ns_of("1.5e3"), 1500000);
  EXPECT_EQ(ns_of("1727387307981693001e-3"), 1727387307981693001);
  EXPECT_EQ(ns_of("25E-4"), 3);
  EXPECT_EQ(ns_of("1e-9"), 0);
  EXPECT_EQ(ns_of("9223372036854775.807"), INT64_MAX);
  int64_t ns = 0;
  for (const char* bad : {"", "-", "1.", ".5", "01", "1e", "1e+", "abc", "1 ", "0x10", "9223372036854775.808", "1e300",
                          "99999999999999999999"})
    EXPECT_FALSE(us_text_to_ns(bad, ns)) << bad;
}

// The file's text for `ns` as our writer puts it: microseconds, three decimals.
std::string us_text(int64_t ns) {
  char text[64];
  std::snprintf(text, sizeof text, "%s%lld.%03lld", ns < 0 ? "-" : "", std::llabs(ns / 1000), std::llabs(ns % 1000));
  return text;
}

// Regression: ns_to_us(2905) gave 2.9050000000000002 (whole + frac/1000
// rounds twice), not the 2.905 that parsing the file's "2.905" gives.
TEST(TraceTime, MicrosecondsAreTheNearestDouble) {
  for (int64_t base : {int64_t{-20000}, int64_t{1727387307981693000}, int64_t{9007199254740000},
                       -int64_t{1727387307981693000}}) {
    for (int64_t ns = base; ns < base + 40000; ++ns) {
      std::string text = us_text(ns);
      ASSERT_EQ(ns_to_us(ns), std::strtod(text.c_str(), nullptr)) << text;
    }
  }
}

TEST(TraceTime, BothDecodersKeepEveryNanosecond) {
  EventDecoder dec;
  Event ev;
  auto check = [&](std::string line, int64_t ts_ns, int64_t dur_ns) {
    size_t n = line.size();
    line.resize(n + kLinePadding);
    std::string_view v(line.data(), n);
    ASSERT_EQ(dec.decode(v, line.size(), ev), DecodeStatus::Ok) << v;
    EXPECT_EQ(ev.ts_ns, ts_ns) << v;
    EXPECT_EQ(ev.dur_ns, dur_ns) << v;
    ASSERT_EQ(dec.decode_with_simdjson(v, line.size(), ev), DecodeStatus::Ok) << v;
    EXPECT_EQ(ev.ts_ns, ts_ns) << v;
    EXPECT_EQ(ev.dur_ns, dur_ns) << v;
  };
  // Our writer's layout (fast path), DFTracer v1's quoted numbers (simdjson).
  check(R"({"id":1,"name":"a","cat":"op","pid":1,"tid":2,"ts":1727387307981693.001,"dur":0.375,"ph":"X"})",
        1727387307981693001, 375);
  check(R"({"id":"0","name":"a","cat":"POSIX","pid":"1","tid":"2","ts":"1698080323775554","dur":"141","ph":"X"})",
        1698080323775554000, 141000);
  check(R"({"name":"a","ph":"X","ts":1.727387307981693001e15,"dur":1e-3})", 1727387307981693001, 1);
  std::string big = R"({"name":"a","ph":"X","ts":1e300,"dur":1})";
  big.resize(big.size() + kLinePadding);
  EXPECT_EQ(dec.decode(std::string_view(big.data(), big.size() - kLinePadding), big.size(), ev),
            DecodeStatus::BadField);
}

}  // namespace
}  // namespace dftracer::analyze
