// `report`: one self-contained HTML page (no network access: its script and
// styles are inline) with charts drawn as SVG by that script. It opens on the
// answer (the model's ops and modules with the most self time, the time
// outside any module by what it is, compile vs run, the per-step split), then
// compile work and user regions, the module icicle, the roofline (efficiency.hpp),
// steps and events per process over time, the phases, I/O, and the input
// that was skipped. Each section is one member of the page's data, built by
// its own function in report.cpp, and one function of the page's script.
#pragma once

#include <string>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

struct ReportResult {
  ReadStats stats;
  std::string answer;  // the lines the page opens on, for the terminal
};

// Throws InputError when `out_path` cannot be written. The roofline uses the
// calibration find_calibration() finds (`calibration_path` when not empty).
ReportResult write_report(const std::vector<std::string>& files, const std::string& out_path, size_t top_n,
                          unsigned threads, const ReadOptions& options = {},
                          const std::string& calibration_path = "");

}  // namespace dftracer::analyze
