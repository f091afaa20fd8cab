#include "report_memory.hpp"

#include <algorithm>
#include <cstdio>

#include "memory.hpp"
#include "text_format.hpp"

namespace dftracer::analyze {

namespace {

std::string html(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// One series as an SVG polyline over its time span; the peak marked.
std::string chart(const MemorySeries& s) {
  constexpr double W = 900, H = 160, L = 70, T = 10;
  const auto& p = s.points;
  if (p.empty()) return {};
  const double t0 = static_cast<double>(p.front().first), span = std::max(1.0, static_cast<double>(p.back().first) - t0);
  const double top = s.peak > 0 ? s.peak : 1;
  auto x = [&](int64_t ts) { return L + (static_cast<double>(ts) - t0) / span * W; };
  auto y = [&](double v) { return T + H - v / top * H; };
  std::string o = "<svg class=\"chart\" width=\"" + num(L + W + 10) + "\" height=\"" + num(T + H + 24) +
                  "\" role=\"img\" aria-label=\"bytes allocated over time\"><polyline fill=\"none\" stroke=\"#3366cc\" "
                  "points=\"";
  for (const auto& [ts, v] : p) o += num(x(ts)) + "," + num(y(v)) + " ";
  o += "\"/><text x=\"" + num(L - 6) + "\" y=\"" + num(T + 10) + "\" text-anchor=\"end\">" + html(human_bytes(top)) +
       "</text><text x=\"" + num(L - 6) + "\" y=\"" + num(T + H) + "\" text-anchor=\"end\">0</text>";
  o += "<circle cx=\"" + num(x(s.peak_ts_ns)) + "\" cy=\"" + num(y(s.peak)) + "\" r=\"4\" fill=\"#cc3333\"><title>peak " +
       html(human_bytes(s.peak)) + "</title></circle>";
  o += "<text x=\"" + num(L) + "\" y=\"" + num(T + H + 18) + "\">0 s</text><text x=\"" + num(L + W) + "\" y=\"" +
       num(T + H + 18) + "\" text-anchor=\"end\">" + fmt_num(span * 1e-9, 3) + " s</text></svg>";
  return o;
}

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::string o = "<table class=\"memory\">";
  for (size_t i = 0; i < rows.size(); ++i) {
    o += "<tr>";
    for (const std::string& c : rows[i]) o += (i ? "<td>" : "<th>") + html(c) + (i ? "</td>" : "</th>");
    o += "</tr>";
  }
  return o + "</table>";
}

}  // namespace

std::string with_memory_section(std::string page, const std::vector<std::string>& files, const ReadOptions& options) {
  const size_t at = page.rfind("</body>");
  if (at == std::string::npos) return page;
  const MemoryPeaks m = memory_peaks(files, options);
  if (m.series.empty()) return page;
  std::string o = "<div id=\"memory-section\"><h2>Memory: bytes allocated over time (memory counter track)</h2>";
  for (const MemorySeries& s : m.series)
    o += "<h3>pid " + html(s.pid) + ", " + html(s.device) + ": peak " + html(human_bytes(s.peak)) + "</h3>" + chart(s);
  if (!m.steps.empty()) {
    std::vector<std::vector<std::string>> rows = {{"pid", "device", "step", "label", "at start", "peak"}};
    for (const MemoryStepPeak& s : m.steps)
      rows.push_back({s.pid, s.device, std::to_string(s.step), s.label, human_bytes(s.start_bytes), human_bytes(s.peak)});
    o += "<h2>Memory peak per step</h2>" + table(rows);
  }
  for (const PeakComposition& c : m.peaks) {
    o += "<h2>What holds the peak of pid " + html(c.pid) + ", " + html(c.device) + " (" + html(human_bytes(c.peak)) +
         ")</h2><p class=\"note\">The blocks live at the peak, by the op, module, phase and step that allocated "
         "them (" + std::to_string(c.blocks) + " blocks, " + html(human_bytes(c.traced)) + "); before trace (live "
         "before the trace began): " + html(human_bytes(c.before_trace)) + ".</p>";
    for (const PeakHolderList& l : kPeakHolderLists) {
      std::vector<std::vector<std::string>> rows = {{l.title, "blocks", "bytes"}};
      for (const PeakHolder& h : c.*l.rows) rows.push_back({holder_label(h, l), std::to_string(h.blocks), human_bytes(h.bytes)});
      if (rows.size() > 1) o += table(rows);
    }
  }
  for (const PeakComposition& c : m.unheld) o += "<p class=\"note\">" + html(unheld_line(c)) + "</p>";
  o += "</div><style>table.memory{border-collapse:collapse;font-size:12px;margin:6px 0}table.memory td,table.memory "
       "th{border:1px solid #ddd;padding:2px 8px;text-align:right}</style>\n";
  page.insert(at, o);
  return page;
}

}  // namespace dftracer::analyze
