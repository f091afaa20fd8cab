#include "memory_planned.hpp"

#include <algorithm>
#include <charconv>
#include <ostream>

#include <simdjson.h>

#include "memory.hpp"
#include "summary.hpp"
#include "text_format.hpp"

namespace dftracer::analyze {

namespace {

constexpr const char* kKeys[] = {"planned_peak_bytes", "planned_peak_node", "planned_peak_op",
                                 "planned_peak_modules"};
constexpr std::string_view kMarker = "\"planned_peak_bytes\"";

bool parse_number(std::string_view v, double& out) {
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  return !v.empty() && r.ec == std::errc() && r.ptr == v.data() + v.size();
}

// planned_peak_modules: a JSON object module -> bytes (its raw text).
std::vector<std::pair<std::string, double>> parse_modules(std::string_view raw) {
  std::vector<std::pair<std::string, double>> out;
  if (raw.empty()) return out;
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(simdjson::padded_string(raw)).get(obj)) return out;
  for (auto [key, value] : obj) {
    double b = 0;
    if (value.is_number() && !value.get_double().get(b)) out.emplace_back(std::string(key), b);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

PlannedGraphReader::PlannedGraphReader() {
  ArgCapture c;
  c.size = std::size(kKeys);
  for (size_t i = 0; i < c.size; ++i) c.keys[i] = kKeys[i];
  decoder_.capture_args(c);
}

bool PlannedGraphReader::consume(std::string_view line, size_t cap) {
  if (line.find(kMarker) == std::string_view::npos) return false;
  if (decoder_.decode(line, cap, ev_) != DecodeStatus::Ok || !ev_.is_complete()) return false;
  double peak = 0;
  if (!parse_number(ev_.extra_args[0], peak)) {
    ++bad;
    return false;
  }
  PlannedGraph& g = by_graph_[{std::string(ev_.pid_text), std::string(ev_.graph), std::string(ev_.phase)}];
  if (g.calls++ == 0 || peak > g.peak) {
    g.pid = ev_.pid_text;
    g.graph = ev_.graph;
    g.phase = ev_.phase;
    g.peak = peak;
    double node = -1;
    g.peak_node = parse_number(ev_.extra_args[1], node) ? static_cast<int64_t>(node) : -1;
    g.peak_op = ev_.extra_args[2];
    g.modules = parse_modules(ev_.extra_args[3]);
  }
  return true;
}

std::vector<PlannedGraph> PlannedGraphReader::rows() const {
  std::vector<PlannedGraph> v;
  for (const auto& [k, g] : by_graph_) v.push_back(g);
  return v;
}

void write_planned_table(std::ostream& os, const std::vector<PlannedGraph>& rows) {
  if (rows.empty()) return;
  os << "\nplanned memory of compiled graphs (static liveness of the capture backend's graph pass; "
        "not measured, not in the figures above):\n";
  std::vector<std::vector<std::string>> t = {{"pid", "graph", "phase", "op at the peak", "module holding most",
                                              "calls", "planned peak", "at node", "module's bytes"}};
  for (const PlannedGraph& g : rows) {
    const bool any = !g.modules.empty();
    t.push_back({g.pid, g.graph, g.phase, g.peak_op.empty() ? "-" : g.peak_op,
                 !any ? "-" : (g.modules[0].first.empty() ? format::kRootModulePath : g.modules[0].first), std::to_string(g.calls),
                 human_bytes(g.peak), g.peak_node < 0 ? "-" : std::to_string(g.peak_node),
                 any ? human_bytes(g.modules[0].second) : "-"});
  }
  write_aligned(os, t, 5);
}

void append_planned_json(std::string& o, const std::vector<PlannedGraph>& rows) {
  o += ",\"planned\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PlannedGraph& g = rows[i];
    o += i ? ",{\"pid\":" : "{\"pid\":";
    append_json_string(o, g.pid);
    o += ",\"graph\":";
    append_json_string(o, g.graph);
    o += ",\"phase\":";
    append_json_string(o, g.phase);
    o += ",\"calls\":" + std::to_string(g.calls) + ",\"peak_bytes\":" + json_num(g.peak) +
         ",\"peak_node\":" + std::to_string(g.peak_node) + ",\"peak_op\":";
    append_json_string(o, g.peak_op);
    o += ",\"modules\":[";
    for (size_t j = 0; j < g.modules.size(); ++j) {
      o += j ? ",{\"module\":" : "{\"module\":";
      append_json_string(o, g.modules[j].first);
      o += ",\"bytes\":" + json_num(g.modules[j].second) + "}";
    }
    o += "]}";
  }
  o += "]";
}

}  // namespace dftracer::analyze
