// The report's section for a torchrun job: a rank x step heat map
// of step time (wait time in each cell's tooltip and colour toggle) and the
// straggler table, from the cross-rank analysis (ranks.hpp). Its own HTML and
// script, added to the page before </body>, so report.cpp needs one call.
#pragma once

#include <string>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

// `page` with the ranks section added when the inputs hold two ranks or more
// (its own read of the inputs); otherwise `page` unchanged.
std::string with_ranks_section(std::string page, const std::vector<std::string>& files, unsigned threads,
                               const ReadOptions& options);

}  // namespace dftracer::analyze
