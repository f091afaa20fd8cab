// The summary's memory columns, apart from memory.cpp's reading so that the
// summary (and the fuzz target built from it) needs none of the step finder.
#include <cmath>
#include <string>
#include <vector>

#include "memory.hpp"
#include "summary.hpp"
#include "text_format.hpp"

namespace dftracer::analyze {

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = std::fabs(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  const std::string sign = bytes < 0 ? "-" : "";
  return sign + (u == 0 ? fmt_num(v, 0) : fmt_num(v, 2)) + " " + units[u];
}

void append_memory_cells(std::vector<std::string>& cells, const SummaryRow& r) {
  cells.push_back(human_bytes(r.alloc_bytes));
  cells.push_back(human_bytes(r.free_bytes));
  cells.push_back(human_bytes(r.alloc_bytes - r.free_bytes));
}

void append_memory_members(std::string& json, const SummaryRow& r) {
  json += ",\"alloc_bytes\":" + json_num(r.alloc_bytes) + ",\"free_bytes\":" + json_num(r.free_bytes) +
          ",\"net_bytes\":" + json_num(r.alloc_bytes - r.free_bytes);
}

void append_memory_csv(std::string& csv, const SummaryRow& r) {
  csv += "," + json_num(r.alloc_bytes) + "," + json_num(r.free_bytes) + "," + json_num(r.alloc_bytes - r.free_bytes);
}

}  // namespace dftracer::analyze
