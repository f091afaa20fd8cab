// Trace times: the file's microsecond numbers as exact integer nanoseconds.
//
// Why integers: our writer puts nanoseconds in the file as microseconds with
// three decimals ("ts":1727387307981693.125), and an epoch microsecond count
// (~1.7e15) held in a double keeps only quarter microseconds. So the analyzer
// reads `ts`/`dur` straight from their decimal text into int64 nanoseconds
// (exact for up to three decimals; more are rounded to the nearest ns, ties
// away from zero) and converts to microseconds only at its outputs.
// int64 ns covers +-292 years around the epoch; a value beyond is not a time.
#pragma once

#include <cstdint>
#include <string_view>

namespace dftracer::format {

// `text` is a JSON number (sign, digits, fraction, exponent; nothing else) of
// microseconds. Sets `ns` and returns true when it is one and fits in int64 ns.
inline bool us_text_to_ns(std::string_view text, int64_t& ns) {
  const char* p = text.data();
  const char* e = p + text.size();
  auto digit = [&](const char* q) { return q < e && *q >= '0' && *q <= '9'; };
  bool neg = p < e && *p == '-';
  p += neg;
  if (!digit(p)) return false;
  // The significant digits (leading zeros dropped) and where the point goes.
  // Digits past sig's room are cut: an integer digit then only shifts the
  // point (the value is out of range anyway), a fraction digit is below the
  // rounding digit, which always lies in sig when the value fits.
  char sig[24];
  int nsig = 0;
  int point_shift = 0;  // power of ten to apply to the digits in sig
  auto take = [&](char c, bool fraction) {
    if (nsig == static_cast<int>(sizeof sig)) {
      point_shift += !fraction;
      return;
    }
    if (fraction) --point_shift;
    if (nsig == 0 && c == '0') return;
    sig[nsig++] = c;
  };
  if (*p == '0') {
    ++p;  // JSON: a leading 0 stands alone
  } else {
    while (digit(p)) take(*p++, false);
  }
  if (p < e && *p == '.') {
    ++p;
    if (!digit(p)) return false;
    while (digit(p)) take(*p++, true);
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    ++p;
    bool eneg = p < e && *p == '-';
    if (p < e && (*p == '+' || *p == '-')) ++p;
    if (!digit(p)) return false;
    int ex = 0;
    while (digit(p)) {
      if (ex < 100000) ex = ex * 10 + (*p - '0');
      ++p;
    }
    point_shift += eneg ? -ex : ex;
  }
  if (p != e) return false;
  if (nsig == 0) {
    ns = 0;
    return true;
  }
  int scale = point_shift + 3;  // microseconds -> nanoseconds
  int keep = scale >= 0 ? nsig : nsig + scale;
  if (keep < 0) {
    ns = 0;  // below half a nanosecond
    return true;
  }
  uint64_t v = 0;
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  for (int i = 0; i < keep; ++i) {
    uint64_t d = static_cast<uint64_t>(sig[i] - '0');
    if (v > (kMax - d) / 10) return false;
    v = v * 10 + d;
  }
  for (int i = 0; scale > 0 && i < scale; ++i) {
    if (v > kMax / 10) return false;
    v *= 10;
  }
  if (keep < nsig && sig[keep] >= '5') {  // round to nearest, ties away from zero
    if (v == kMax) return false;
    ++v;
  }
  ns = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// Microseconds for the outputs (Chrome-trace unit): the double nearest to
// ns/1000, as a decimal parser would give for the file's text. Sums and
// extremes are kept in ns and converted here once.
inline double ns_to_us(int64_t ns) {
  constexpr int64_t kExact = int64_t{1} << 53;
  // Both operands exact: one IEEE division rounds correctly.
  if (ns > -kExact && ns < kExact) return static_cast<double>(ns) / 1000.0;
  // Epoch scale: whole microseconds convert exactly and the spacing of the
  // result (>= 2^-9 us) is so coarse that rounding the fraction first cannot
  // move the sum across a rounding boundary (those are multiples of 2^-10,
  // at least 1/128000 us away from any k/1000 that is not one of them).
  int64_t whole = ns / 1000, frac = ns % 1000;
  return static_cast<double>(whole) + static_cast<double>(frac) / 1000.0;
}

// a + b, held at the int64 limits instead of overflowing (sums of durations
// from hostile input; real traces never come near).
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

inline int64_t saturating_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}

}  // namespace dftracer::format

// The analyzer (src/analyze) names these unqualified.
namespace dftracer::analyze {
using format::us_text_to_ns;
using format::ns_to_us;
using format::saturating_add;
using format::saturating_sub;
}  // namespace dftracer::analyze
