// `report`: one self-contained HTML page (no network access: its script and
// styles are inline) with charts drawn as SVG by that script: top ops by time,
// time by module, the forward/backward/inference split, and events per process
// over time.
#pragma once

#include <string>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

struct ReportResult {
  ReadStats stats;
};

// Throws InputError when `out_path` cannot be written.
ReportResult write_report(const std::vector<std::string>& files, const std::string& out_path, size_t top_n,
                          unsigned threads, const ReadOptions& options = {});

}  // namespace dftracer::analyze
