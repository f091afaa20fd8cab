#include "report_device.hpp"

#include <sstream>

#include "device_steps.hpp"
#include "device_time.hpp"
#include "kineto_import.hpp"
#include "report_page.hpp"
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

std::string with_device_section(std::string page, const std::vector<std::string>& files, unsigned threads,
                                const ReadOptions& options, std::string* answer) {
  const DeviceReport r = device_report(read_device_timeline_with_steps(files, threads, options));
  const size_t at = page.rfind("</body>");
  if (r.device_events == 0 || at == std::string::npos) return page;
  size_t gpu_bound = 0, cpu_bound = 0;
  int64_t span = 0, busy = 0;
  for (const DeviceStep& s : r.steps) {
    gpu_bound += std::string(s.bound) == "gpu-bound";
    cpu_bound += std::string(s.bound) == "cpu-bound";
    span = saturating_add(span, s.span_ns);
    busy = saturating_add(busy, s.busy_ns);
  }
  std::string line = "GPU: " + std::to_string(r.device_events) + " device events, " +
                     human_time(ns_to_us(r.device_ns)) + " of device time";
  if (!r.steps.empty())
    line += "; steps: " + std::to_string(gpu_bound) + " GPU-bound, " + std::to_string(cpu_bound) +
            " CPU-bound, GPU idle " + fmt_num(span ? 100.0 * double(span - busy) / double(span) : 0, 1) + "% of their time";
  *answer += line + "\n";
  std::ostringstream os;
  write_device_json(os, r);
  page.insert(at, fill_page(kDeviceSection, "@DEVICE@", os.str()));  // device_section.html, device_section.js
  return page;
}

}  // namespace dftracer::analyze
