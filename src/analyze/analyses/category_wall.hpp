// `summary --by category`: compile vs run in wall time. Each category's wall
// time over the run of the processes that run the model (steps.hpp's
// model_run_wall: never more than the run), beside its thread time (the
// self times of its events, added over threads: a worker pool compiling for
// 44 s while the main thread waits is 44 s of wall time and ~100 s of thread
// time) and its event count.
#pragma once

#include <iosfwd>
#include <string>

#include "steps.hpp"
#include "summary.hpp"

namespace dftracer::analyze {

// `by_category`: summarize(..., --by category); `steps`: analyze_steps of the same input.
void write_category_wall(std::ostream& os, const StepReport& steps, const Summary& by_category,
                         const std::string& format);

}  // namespace dftracer::analyze
