// The reader's step filter (--steps, Python steps=): per process, the wall
// spans of the chosen steps. A line whose ts lies in none of its process's
// spans is not read; a line without a ts (metadata) always is. Built by
// select_steps (analyses/step_select.hpp) from the steps the analyzer finds.
#pragma once

#include <cstddef>
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

// The filter one reading thread applies: whether a timed line of file
// `file` lies in one of its process's chosen steps (a line without a pid
// belongs to none). Lines come in runs of one process: the last process's
// spans are kept.
class StepSpanFilter {
 public:
  StepSpanFilter(const StepSpans* steps) : steps_(steps) {}  // NOLINT: converts, as in LineSink{...}
  bool active() const { return steps_ != nullptr; }
  bool keep(size_t file, std::string_view line, int64_t ts) {
    std::string_view pid;
    if (!line_pid(line, pid)) return false;
    if (file != file_ || pid != pid_) {
      file_ = file;
      pid_.assign(pid);
      spans_ = steps_->spans(file, pid);
    }
    return spans_ && StepSpans::inside(*spans_, ts);
  }

 private:
  const StepSpans* steps_;
  size_t file_ = SIZE_MAX;
  std::string pid_;
  const std::vector<std::pair<int64_t, int64_t>>* spans_ = nullptr;
};

}  // namespace dftracer::analyze
