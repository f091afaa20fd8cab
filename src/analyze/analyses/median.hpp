// The median of a sample: the middle value, or the mean of the two middle
// values for an even count; T{} for none. One definition for the steps, the
// report and diff, so "median" means the same in every output.
#pragma once

#include <algorithm>
#include <vector>

namespace dftracer::analyze {

template <typename T>
T median_of(std::vector<T> v) {
  if (v.empty()) return T{};
  const size_t n = v.size(), mid = n / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const T upper = v[mid];
  if (n % 2) return upper;
  return static_cast<T>((*std::max_element(v.begin(), v.begin() + mid) + upper) / 2);
}

}  // namespace dftracer::analyze
