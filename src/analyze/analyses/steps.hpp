// Steps (`summary --by step`, `dftracer.analyze.steps`): a run's training
// steps found without configuration (step_finder.hpp: step marks, the step
// arg, or a repeated region at any depth), and each step's time split into
// compile / forward / backward / optimizer / comm / data / other
// (event_category.hpp)
// two ways:
//   - wall time (wall_time.hpp): the step's duration split by what any thread
//     of the process was doing, by priority, plus "untraced"; the parts add up
//     to the duration, so a share can never exceed the step;
//   - thread time: the self time (self_time.hpp) of every event of the process
//     inside the step, added over threads (a worker thread compiling while the
//     main thread waits counts for both).
//
// Two passes over the input, both streamed like `summary`:
//   1. StepFinder (step_finder.hpp): the steps, and the wall-time unions.
//   2. StepAttributor: every complete event of a process that lies inside one
//      of its steps (any thread) gives its self time to that step's category;
//      the rest is "outside". Memory: the steps, and the nesting stacks.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "event_decoder.hpp"
#include "self_time.hpp"
#include "step_finder.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

// The categories of event_category.hpp, in the order of the columns.
inline constexpr const char* kStepCategories[] = {"compile", "forward", "backward", "optimizer", "comm",
                                                   "data",    "gc",      "checkpoint", "other"};
inline constexpr size_t kNumStepCategories = 9;
// A category's index in kStepCategories; anything else is "other", the last.
constexpr size_t step_category_index(std::string_view cat) {
  for (size_t i = 0; i < kNumStepCategories; ++i)
    if (cat == kStepCategories[i]) return i;
  return kNumStepCategories - 1;
}
static_assert(kNumStepCategories == kNumWallCategories);

struct StepRow {
  std::string pid;
  size_t step = 0;  // 0-based, in order of start within the process
  std::string label;
  double start_us = 0, duration_us = 0;
  double wall_us[kNumStepCategories] = {};  // the duration split by priority (wall_time.hpp)
  double untraced_us = 0;                   // no event of the process open
  double traced_us = 0;                     // thread time: the self times below, added
  double by_category_us[kNumStepCategories] = {};  // thread time (self time) per category
  double compile_share = 0;  // compile wall time over the duration
  bool outlier = false;
  bool slow = false;  // with outlier: longer than typical ("slow"), else shorter ("fast")
  bool end_estimated = false;  // StepInterval::end_estimated
};

// One process's run: from its first event's start to its last event's end.
struct ProcessRun {
  std::string pid;
  std::string source;  // as ProcessSteps: "region", "marks", "args.step", "" or "helper"
  double span_us = 0;
  double wall_us[kNumStepCategories] = {};
  double untraced_us = 0;
  // Garbage collections inside the span (on any thread; those while the
  // interpreter imports, builds the model or exits are outside): how many,
  // and the longest. Adjacent collections of two threads count once.
  uint64_t gc_collections = 0;
  double gc_longest_us = 0;
};

struct StepReport {
  std::vector<ProcessSteps> processes;
  std::vector<ProcessSteps> without_steps;  // processes with none ("helper": a data worker)
  std::vector<ProcessRun> runs;             // every process, those with steps first
  std::vector<StepRow> rows;  // by process, then step
  double outside_us[kNumStepCategories] = {};  // self time of events in no step
  double outside_traced_us = 0;
  NestingStats nesting;
  ReadStats stats;
  size_t capped_regions = 0;  // region occurrences the finder did not keep (memory cap)
  // The runtime's files, found by pass 1: a later read of the same input
  // (the summary by category beside it) takes them (ReadOptions::runtime_files).
  std::shared_ptr<const RuntimeFiles> runtime_files;
};

// The wall time of the processes that run the model (every process but the
// helpers), summed: compile vs run over the run, never more than its span.
struct RunWall {
  size_t processes = 0;
  double span_us = 0, untraced_us = 0;
  double wall_us[kNumStepCategories] = {};
  uint64_t gc_collections = 0;  // ProcessRun's, added; the longest of them
  double gc_longest_us = 0;
};
RunWall model_run_wall(const StepReport& r);

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
