// The step filter (--steps, Python steps=): an analysis restricted to a range
// of the steps `summary --by step` finds, per process, by position.
//
// A range is a Python slice of each process's steps, numbered from 0 in
// order of start as `summary --by step` numbers them: "2:" every step from
// the third, "3:10" steps 3 to 9, ":-1" all but the last, "4" step 4 alone.
// The events of a process kept are those whose ts lies in one of its chosen
// steps' [start, end); a process without steps (a DataLoader worker) keeps
// none. Metadata is always read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "step_finder.hpp"
#include "steps.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

struct StepSlice {
  std::optional<int64_t> start, stop;  // slice bounds; negative counts from the end
  bool single = false;                 // "4": step 4 alone (stop unused)
  std::string text;                    // as given, for messages; "" is no filter
  bool set() const { return !text.empty(); }
  // The chosen positions among n steps, ascending.
  std::vector<size_t> pick(size_t n) const;
};

// Throws std::invalid_argument (one line naming the text and the form) for
// anything but START:STOP, START:, :STOP, : or one index (integers).
StepSlice parse_step_slice(std::string_view text);

// Pass 1 of the step analysis alone (StepFinder over `files`).
StepPlan find_steps(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options = {});

// The line for a range that picks no step, where each process has at most
// `most` steps (0: the input has none).
std::string no_step_chosen(const StepSlice& range, size_t most);

// The spans of the steps `range` picks from `plan`. Throws
// std::invalid_argument with one line when the plan has no step at all, or
// the range picks none in any process.
StepSpans select_steps(const StepPlan& plan, const StepSlice& range);

// summary --by step with a range: keeps the chosen steps' rows of `r` (the
// steps are found over the whole input: a filtered read would find other
// steps). Throws std::invalid_argument (select_steps' line) when it keeps none.
void keep_step_rows(const StepSlice& range, StepReport& r);

// Sets options->steps to `spans`, narrowing the window to their hull (the
// read of chosen steps, whoever chose them).
void apply_step_spans(StepSpans spans, ReadOptions* options);

// analyze_steps under a step filter: the steps (processes, rows) are found
// over the read's window before the filter narrowed it, then cut to the
// chosen ones -- found in the chosen steps' events alone, a step whose mark
// lies just before its span would be lost; the rest (runs, outside) is the
// filtered read's. Without a filter, analyze_steps.
StepReport analyze_chosen_steps(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options);

// Finds the steps of `files` (read with *options' window) and sets
// options->steps, narrowing the window to the chosen spans' hull. Nothing
// when `range` is unset.
void apply_step_filter(const StepSlice& range, const std::vector<std::string>& files, unsigned threads,
                       ReadOptions* options);

}  // namespace dftracer::analyze
