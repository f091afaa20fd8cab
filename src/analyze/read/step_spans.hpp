// The reader's step filter (--steps, Python steps=): per process, the wall
// spans of the chosen steps. A line whose ts lies in none of its process's
// spans is not read; a line without a ts (metadata) always is. Built by
// select_steps (analyses/step_select.hpp) from the steps the analyzer finds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dftracer::analyze {

struct StepSpans {
  // (file index in the read's file list, pid as the decoder's pid_text) ->
  // the chosen steps' [ts, end) in ns, by start.
  std::map<std::pair<size_t, std::string>, std::vector<std::pair<int64_t, int64_t>>> by_process;
  // The read's window before it was narrowed to the chosen spans: where the
  // steps were found (a step mark lies just before its step's span).
  int64_t outer_from_ns = INT64_MIN, outer_to_ns = INT64_MAX;
  // The spans of one process, nullptr when it has none chosen.
  const std::vector<std::pair<int64_t, int64_t>>* spans(size_t file, std::string_view pid) const {
    auto it = by_process.find({file, std::string(pid)});
    return it == by_process.end() ? nullptr : &it->second;
  }
  static bool inside(const std::vector<std::pair<int64_t, int64_t>>& s, int64_t ts) {
    // The last span starting at or before ts.
    size_t lo = 0, hi = s.size();
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (s[mid].first <= ts) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && ts < s[lo - 1].second;
  }
};

// The top-level "pid" of a stripped trace line as the decoder's pid_text
// would hold it (a number's digits, a string's contents); false when none.
bool line_pid(std::string_view line, std::string_view& pid);

}  // namespace dftracer::analyze
