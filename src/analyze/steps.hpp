// Steps (`summary --by step`, `dftracer.analyze.steps`): a user's training
// steps found without configuration, and each step's traced time split into
// compile / forward / backward / optimizer / data / other (event_category.hpp)
// by self time (self_time.hpp), so the split adds up to the step's traced time.
//
// Two passes over the input, both streamed like `summary`:
//   1. StepFinder: per process (file, pid), the intervals of each `step` arg
//      value (first start to last end of the events carrying it), and the
//      top-level events of the main thread (tid == pid: not inside another
//      event of that thread). Memory: one interval per step value plus one per
//      top-level event of each thread, never the whole trace. The main thread
//      is tid == pid (Linux); a process without such a thread (tids renumbered
//      by another tool, a trace of threads only) uses the thread whose first
//      event starts first.
//   2. StepAttributor: every complete event of a process that lies inside one
//      of its steps (any thread) gives its self time to that step's category;
//      the rest is "outside". Memory: the steps, and the nesting stacks.
// The repeated region, where there is one, bounds the steps (a `step` arg
// inside names them); else the `step` arg values do; without either, no steps.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "event_decoder.hpp"
#include "self_time.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

// The categories of event_category.hpp, in the order of the columns.
inline constexpr const char* kStepCategories[] = {"compile", "forward", "backward", "optimizer", "data", "other"};
inline constexpr size_t kNumStepCategories = 6;

struct StepInterval {
  int64_t ts = 0, end = 0;
  std::string label;  // the step arg's value, else the region's name
};

// What pass 1 found for one process.
struct ProcessSteps {
  size_t file = 0;
  std::string pid;
  std::string source;  // "args.step" or "region" ("" when none was found)
  std::string region;  // the repeated top-level region's name (source "region")
  std::vector<StepInterval> steps;  // by start
};

// Pass 1 (one per reader thread; merge, then plan()).
class StepFinder : public LineConsumer {
 public:
  StepFinder();
  void begin_piece(size_t file_index) override { file_ = file_index; }
  DecodeStatus consume(std::string_view line, size_t padded_capacity) override;
  void add_event(size_t file, const Event& e);
  void merge(StepFinder& other);
  // The steps of every process that has any, ordered by (file, pid).
  std::vector<ProcessSteps> plan() const;

 private:
  struct Top {
    int64_t end;
    std::string name;
  };
  using TopLevel = std::multimap<int64_t, Top>;  // a thread's top-level events by start
  struct Process {
    std::map<std::string, StepInterval> by_arg;  // step value -> interval
    TopLevel main;                               // the tid == pid thread's
    std::map<std::string, TopLevel> others;      // other threads', while no tid == pid thread is seen
  };
  static void add_top(TopLevel& top, int64_t ts, int64_t end, std::string_view name, size_t cap);
  // The main thread's top-level events: tid == pid, else the thread whose first event starts first.
  static const TopLevel& main_thread(const Process& p);
  EventDecoder decoder_;
  Event ev_;
  size_t file_ = 0;
  std::map<std::pair<size_t, std::string>, Process> processes_;
  Process* last_ = nullptr;  // the process of the last event (map nodes do not move)
  size_t last_file_ = 0;
  std::string last_pid_;
};

struct StepRow {
  std::string pid;
  size_t step = 0;  // 0-based, in order of start within the process
  std::string label;
  double start_us = 0, duration_us = 0, traced_us = 0;
  double by_category_us[kNumStepCategories] = {};
  double compile_share = 0;  // compile over traced time
  bool outlier = false;
  bool slow = false;  // with outlier: longer than typical ("slow"), else shorter ("fast")
};

struct StepReport {
  std::vector<ProcessSteps> processes;
  std::vector<StepRow> rows;  // by process, then step
  double outside_us[kNumStepCategories] = {};  // self time of events in no step
  double outside_traced_us = 0;
  NestingStats nesting;
  ReadStats stats;
};

// The outlier rule, for the outputs and the docs.
inline constexpr const char* kStepOutlierRule =
    "duration more than max(3 * MAD, 0.5 * median) above (slow) or below (fast) the median of its process's "
    "steps (at least 3 steps)";
enum class StepOutlier { none, slow, fast };
// Classifies one process's step durations (same order).
std::vector<StepOutlier> step_outlier_kinds(const std::vector<double>& durations);
// Flags the outliers, slow or fast, among one process's step durations.
std::vector<bool> step_outliers(const std::vector<double>& durations);

// Reads `files` twice (find, then attribute) on `threads` threads.
StepReport analyze_steps(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options = {});

void write_steps_table(std::ostream& os, const StepReport& r);
void write_steps_json(std::ostream& os, const StepReport& r);
void write_steps_csv(std::ostream& os, const StepReport& r);

}  // namespace dftracer::analyze
