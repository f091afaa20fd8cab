// A fixed-size log-bucketed histogram of durations, for p50/p95 in bounded memory.
//
// Each power of two between 2^-10 us (~1 ns) and 2^40 us (~12.7 days) is split
// into 64 linear sub-buckets, and a quantile reports the middle of its bucket,
// so its relative error is at most 1/128 (0.78%). Values outside the range
// are clamped into the end buckets, and every answer is clamped to the exact
// [min, max], so a group whose durations are all equal reports them exactly.
// Octaves are allocated on first use (64 counters each): a group that spans ten
// octaves costs ~5 KB whatever the number of events.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

namespace dftracer::analyze {
class PartialCodec;  // the analyzer's partial summaries (partial_summary.cpp)
}  // namespace dftracer::analyze

namespace dftracer::format {

class LogHistogram {
 public:
  static constexpr int kMinExp = -10;
  static constexpr int kMaxExp = 40;  // exclusive
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kOctaves = kMaxExp - kMinExp;
  static constexpr double kMaxRelativeError = 1.0 / (2 * kSub);

  LogHistogram() = default;
  LogHistogram(LogHistogram&&) = default;
  LogHistogram& operator=(LogHistogram&&) = default;

  // `v`, `n` times (an aggregated trace row stands for several events).
  void add(double v, uint64_t n = 1) {
    count_ += n;
    if (!(v > 0)) {  // zero (and, defensively, NaN/negative) durations
      zeros_ += n;
      return;
    }
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    int exp = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    int sub = static_cast<int>((bits >> (52 - kSubBits)) & (kSub - 1));
    if (exp < kMinExp) {
      exp = kMinExp;
      sub = 0;
    } else if (exp >= kMaxExp) {
      exp = kMaxExp - 1;
      sub = kSub - 1;
    }
    auto& oct = octaves_[exp - kMinExp];
    if (!oct) oct = std::make_unique<Octave>(Octave{});
    (*oct)[sub] += n;
  }

  void merge(const LogHistogram& o) {
    count_ += o.count_;
    zeros_ += o.zeros_;
    for (int i = 0; i < kOctaves; ++i) {
      if (!o.octaves_[i]) continue;
      if (!octaves_[i]) octaves_[i] = std::make_unique<Octave>(Octave{});
      for (int s = 0; s < kSub; ++s) (*octaves_[i])[s] += (*o.octaves_[i])[s];
    }
  }

  uint64_t count() const { return count_; }

  // The write-time index stores a histogram as its zero count and its
  // non-empty buckets (bucket = octave * kSub + sub-bucket), and the reader
  // rebuilds it from them: the same quantiles as the events would give.
  uint64_t zeros() const { return zeros_; }
  template <class F>
  void for_each_bucket(F f) const {
    for (int i = 0; i < kOctaves; ++i) {
      if (!octaves_[i]) continue;
      for (int s = 0; s < kSub; ++s)
        if ((*octaves_[i])[s]) f(i * kSub + s, (*octaves_[i])[s]);
    }
  }
  void add_zeros(uint64_t n) {
    count_ += n;
    zeros_ += n;
  }
  // False (nothing added) for a bucket out of range.
  bool add_bucket(int bucket, uint64_t n) {
    if (bucket < 0 || bucket >= kOctaves * kSub) return false;
    auto& oct = octaves_[bucket / kSub];
    if (!oct) oct = std::make_unique<Octave>(Octave{});
    (*oct)[bucket % kSub] += n;
    count_ += n;
    return true;
  }

  // Nearest-rank quantile q in [0,1], clamped to [lo, hi] (the exact min/max).
  double quantile(double q, double lo, double hi) const {
    if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
    uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
    if (rank < 1) rank = 1;
    uint64_t seen = zeros_;
    if (seen >= rank) return clamp(0.0, lo, hi);
    for (int i = 0; i < kOctaves; ++i) {
      if (!octaves_[i]) continue;
      for (int s = 0; s < kSub; ++s) {
        seen += (*octaves_[i])[s];
        if (seen >= rank) {
          double base = std::ldexp(1.0, i + kMinExp);
          double mid = base * (1.0 + (s + 0.5) / kSub);
          return clamp(mid, lo, hi);
        }
      }
    }
    return hi;
  }

 private:
  friend class analyze::PartialCodec;  // partial_summary.cpp: a histogram travels as bytes
  using Octave = std::array<uint64_t, kSub>;
  static double clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

  uint64_t count_ = 0;
  uint64_t zeros_ = 0;
  std::array<std::unique_ptr<Octave>, kOctaves> octaves_{};
};

}  // namespace dftracer::format

// The analyzer (src/analyze) names these unqualified.
namespace dftracer::analyze {
using format::LogHistogram;
}  // namespace dftracer::analyze
