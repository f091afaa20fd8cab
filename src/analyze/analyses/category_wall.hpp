// `summary --by category`: compile vs run in wall time. Each category's wall
// time over the run of the processes that run the model (steps.hpp's
// model_run_wall: never more than the run), beside its thread time (the
// self times of its events, added over threads: a worker pool compiling for
// 44 s while the main thread waits is 44 s of wall time and ~100 s of thread
// time) and its event count.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "steps.hpp"
#include "summary.hpp"

namespace dftracer::analyze {

// Its two reads of `files`: the steps (wall time per category) and the summary
// by category (thread time), the second with the runtime's files (their I/O is
// other work, runtime_files.hpp) that the first found.
struct CategoryWallReads {
  StepReport steps;
  Summary by_category;
};
CategoryWallReads read_category_wall(const std::vector<std::string>& files, unsigned threads,
                                     const ReadOptions& options);

// `by_category`: summarize(..., --by category); `steps`: analyze_steps of the same input.
void write_category_wall(std::ostream& os, const StepReport& steps, const Summary& by_category,
                         const std::string& format);

}  // namespace dftracer::analyze
