// The report's device-time section (device_time.hpp): when the inputs hold GPU
// events (torch.profiler/Kineto exports, or our CUDA capture's), a line of the
// answer and a section of the page: per step GPU busy/idle and CPU- or
// GPU-bound, device time per category, the top kernels and ops. Its own HTML
// and script, added before </body>, so report.cpp needs one call.
#pragma once

#include <string>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

// `page` with the device section added when the inputs hold device events
// (its own read of the inputs), and their answer line appended to `answer`;
// otherwise both unchanged.
std::string with_device_section(std::string page, const std::vector<std::string>& files, unsigned threads,
                                const ReadOptions& options, std::string* answer);

}  // namespace dftracer::analyze
