// OutBuffer: the writer's growable byte buffer with the few append helpers
// JSON formatting needs (decimal integers, fixed 3-decimal microseconds, hex)
// written by hand: snprintf would cost more than the rest of an event.
#ifndef DFTRACER_SRC_FILE_OUT_BUFFER_H_
#define DFTRACER_SRC_FILE_OUT_BUFFER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace dftracer {

class OutBuffer {
 public:
  // `reserve` bytes are allocated, not written: a process that formats a
  // few lines touches (and so faults in) only their pages.
  explicit OutBuffer(size_t reserve = 1 << 20) : buf_(new char[reserve > 0 ? reserve : 1]), cap_(reserve > 0 ? reserve : 1) {}

  // Room for n more bytes; returns where to write them.
  char* ensure(size_t n) {
    if (len_ + n > cap_) grow(len_ + n);
    return buf_.get() + len_;
  }
  void advance(size_t n) { len_ += n; }

  void append(const char* s, size_t n) {
    std::memcpy(ensure(n), s, n);
    len_ += n;
  }
  template <size_t N>
  void lit(const char (&s)[N]) { append(s, N - 1); }
  void ch(char c) { *ensure(1) = c; ++len_; }

  // Decimal, written in place: the digit count first (from the bit length),
  // then two digits per division from a table, right to left. Every event
  // has 4-8 integers (id, pid, tid, ts, args), most of 14-16 digits.
  void u64(uint64_t v) {
    static constexpr char kPairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    static constexpr auto kPow10 = [] {
      std::array<uint64_t, 20> p{};
      uint64_t v = 1;
      for (uint64_t& x : p) x = v, v *= 10;  // the last product wraps, unused
      return p;
    }();
    // floor(log10(v)) or one less: bit length * log10(2) (1233 / 4096).
    const unsigned t = static_cast<unsigned>(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
    const size_t n = t + 1 - (v < kPow10[t]) + (v == 0);
    char* p = ensure(20) + n;
    // Eight digits at a time while more remain: one 64-bit division, the
    // rest in 32-bit arithmetic whose four pairs do not wait on each other
    // (a 16-digit timestamp: one such step, then the 32-bit loop).
    while (v >= 100000000) {
      const uint64_t q = v / 100000000;
      const uint32_t low = static_cast<uint32_t>(v - q * 100000000);
      const uint32_t hi4 = low / 10000, lo4 = low % 10000;
      p -= 8;
      std::memcpy(p, kPairs + 2 * (hi4 / 100), 2);
      std::memcpy(p + 2, kPairs + 2 * (hi4 % 100), 2);
      std::memcpy(p + 4, kPairs + 2 * (lo4 / 100), 2);
      std::memcpy(p + 6, kPairs + 2 * (lo4 % 100), 2);
      v = q;
    }
    uint32_t w = static_cast<uint32_t>(v);
    while (w >= 100) {
      p -= 2;
      std::memcpy(p, kPairs + 2 * (w % 100), 2);
      w /= 100;
    }
    if (w >= 10) {
      p -= 2;
      std::memcpy(p, kPairs + 2 * w, 2);
    } else {
      *--p = static_cast<char>('0' + w);
    }
    len_ += n;
  }
  void i64(int64_t v) {
    if (v < 0) { ch('-'); u64(0 - static_cast<uint64_t>(v)); }
    else u64(static_cast<uint64_t>(v));
  }
  // Nanoseconds as microseconds: "123" or "123.456" (trailing zeros trimmed).
  void micros(uint64_t ns) {
    u64(ns / 1000);
    unsigned frac = static_cast<unsigned>(ns % 1000);
    if (frac == 0) return;
    char d[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                 static_cast<char>('0' + frac % 10)};
    size_t n = 4;
    while (d[n - 1] == '0') --n;
    append(d, n);
  }
  void hex16(uint64_t v) {
    static const char kHex[] = "0123456789abcdef";
    char* p = ensure(16);
    for (int i = 15; i >= 0; --i) { p[i] = kHex[v & 15]; v >>= 4; }
    len_ += 16;
  }

  const char* data() const { return buf_.get(); }
  size_t size() const { return len_; }
  void clear() { len_ = 0; }
  // Drops everything after `n` bytes (to undo a partly formatted event).
  void truncate(size_t n) { if (n < len_) len_ = n; }

 private:
  void grow(size_t need) {
    size_t cap = need * 2;
    std::unique_ptr<char[]> bigger(new char[cap]);
    std::memcpy(bigger.get(), buf_.get(), len_);
    buf_ = std::move(bigger);
    cap_ = cap;
  }

  std::unique_ptr<char[]> buf_;
  size_t cap_;
  size_t len_ = 0;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_OUT_BUFFER_H_
