// The report's memory section (memory.hpp): each process's memory counter
// track as a line chart, its peak per step, and what the ops added up to the
// CPU peak. write_report() calls it only when the summary saw memory args
// (Summary::has_memory), so a trace without memory capture is read no more.
#pragma once

#include <string>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

// `page` with the memory section added before </body> when the inputs hold a
// memory counter track (its own reads of the inputs); otherwise unchanged.
std::string with_memory_section(std::string page, const std::vector<std::string>& files, const ReadOptions& options);

}  // namespace dftracer::analyze
