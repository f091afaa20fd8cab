#include "efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

EfficiencyFigures efficiency_figures(double flops, int64_t flops_ns, double bytes, int64_t bytes_ns,
                                     const Calibration* peak) {
  EfficiencyFigures f;
  const bool has_flops = flops > 0 && flops_ns > 0, has_bytes = bytes > 0 && bytes_ns > 0;
  if (has_flops) f.gflops = flops / static_cast<double>(flops_ns);
  if (has_bytes) f.gbps = bytes / static_cast<double>(bytes_ns);
  if (has_flops && has_bytes) f.ai = flops / bytes;
  if (has_flops) f.bound = has_bytes && peak && peak->valid() && f.ai * peak->peak_gbps < peak->peak_gflops ? "memory" : "compute";
  else if (has_bytes) f.bound = "memory";
  if (!peak || !peak->valid()) {
    if (has_flops && has_bytes) f.bound = "";  // which roof binds needs the peaks
    return f;
  }
  if (has_flops) {
    f.attainable_gflops = has_bytes ? std::min(peak->peak_gflops, f.ai * peak->peak_gbps) : peak->peak_gflops;
    f.peak_frac = f.gflops / f.attainable_gflops;
  } else if (has_bytes) {
    f.peak_frac = f.gbps / peak->peak_gbps;
  }
  f.above_peak = f.peak_frac > 1;
  return f;
}

namespace {

constexpr const char* kEfficiencySorts[] = {"self",  "count", "flops", "bytes",           "gflops",
                                            "gbps",  "ai",    "attainable_gflops", "peak_frac"};

double sort_value(const EfficiencyRow& r, const std::string& column) {
  if (column == "count") return static_cast<double>(r.count);
  if (column == "flops") return r.flops;
  if (column == "bytes") return r.bytes;
  if (column == "gflops") return r.f.gflops;
  if (column == "gbps") return r.f.gbps;
  if (column == "ai") return r.f.ai;
  if (column == "attainable_gflops") return r.f.attainable_gflops;
  if (column == "peak_frac") return r.f.peak_frac;
  return r.self_us;
}

}  // namespace

void check_efficiency_sort(const std::string& column) {
  if (std::find_if(std::begin(kEfficiencySorts), std::end(kEfficiencySorts),
                   [&](const char* c) { return column == c; }) == std::end(kEfficiencySorts))
    throw std::invalid_argument("efficiency rows sort by self, count, flops, bytes, gflops, gbps, ai, "
                                "attainable_gflops or peak_frac, not '" + column + "'");
}

std::vector<EfficiencyRow> efficiency_rows(const SummaryAggregator& agg, size_t top_n, const Calibration* peak,
                                           const std::string& sort) {
  check_efficiency_sort(sort);
  std::vector<EfficiencyRow> rows;
  for (const auto& [k, g] : agg.groups()) {
    if (!(g.flops > 0) && !(g.bytes > 0)) continue;  // views and the like declare 0 of both
    EfficiencyRow r;
    r.key = split_group_key(k);
    r.count = g.count;
    r.self_us = ns_to_us(g.self_ns);
    r.flops = g.flops;
    r.bytes = g.bytes;
    r.f = efficiency_figures(g.flops, g.flops_ns, g.bytes, g.bytes_ns, peak);
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), [&sort](const EfficiencyRow& a, const EfficiencyRow& b) {
    const double x = sort_value(a, sort), y = sort_value(b, sort);
    if (std::isnan(x) != std::isnan(y)) return std::isnan(y);  // a row without the figure goes last
    if (!std::isnan(x) && x != y) return x > y;
    if (sort != "self" && a.self_us != b.self_us) return a.self_us > b.self_us;
    return a.key < b.key;
  });
  if (top_n && rows.size() > top_n) rows.resize(top_n);
  return rows;
}

Efficiency efficiency(const std::vector<std::string>& files, const std::vector<GroupKey>& keys, size_t top_n,
                      unsigned threads, const ReadOptions& options, const std::string& calibration_path,
                      const std::string& sort) {
  check_efficiency_sort(sort);  // before the read
  Efficiency e;
  e.keys = keys;
  // The calibration first: a bad --calibration fails before the read.
  const std::string cal = find_calibration(files, calibration_path);
  if (!cal.empty()) e.calibration = read_calibration(cal);
  std::unique_ptr<SummaryAggregator> agg = aggregate_traces(files, keys, threads, options, &e.stats);
  agg->resolve_nesting();
  e.rows = efficiency_rows(*agg, top_n, e.calibration.valid() ? &e.calibration : nullptr, sort);
  return e;
}

size_t above_peak_rows(const Efficiency& e) {
  return std::count_if(e.rows.begin(), e.rows.end(), [](const EfficiencyRow& r) { return r.f.above_peak; });
}

namespace {

std::string peaks_line(const Efficiency& e) {
  if (!e.calibration.valid())
    return "no calibration found (beside the trace, or in " + default_calibration_path() +
           "): run 'dftracer-analyze calibrate' for the fraction of peak";
  const Calibration& c = e.calibration;
  auto from = [](const std::string& kernel) { return kernel.empty() ? std::string() : " (" + kernel + ")"; };
  std::string where;
  if (c.threads) where += std::to_string(c.threads) + " threads, ";
  if (!c.host.empty()) where += "measured on " + c.host + (c.load.loaded ? " while it was loaded" : "") + ", ";
  else if (c.load.loaded) where += "measured while the machine was loaded, ";
  return "peaks: " + fmt_num(c.peak_gflops, 1) + " GFLOP/s" + from(c.gflops_kernel) + ", " + fmt_num(c.peak_gbps, 1) +
         " GB/s" + from(c.gbps_kernel) + " (" + where + "from " + c.path + ")";
}

std::string sci(double v) {
  if (std::isnan(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

void write_efficiency_table(std::ostream& os, const Efficiency& e) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header;
  for (const GroupKey& k : e.keys) header.push_back(group_key_name(k));
  for (const char* h : {"count", "self", "FLOPs", "bytes", "GFLOP/s", "GB/s", "FLOP/B", "roof GFLOP/s", "of peak",
                        "bound"})
    header.push_back(h);
  cells.push_back(header);
  for (const EfficiencyRow& r : e.rows) {
    std::vector<std::string> c = r.key;
    c.insert(c.end(), {std::to_string(r.count), human_time(r.self_us), sci(r.flops), sci(r.bytes),
                       fmt_num(r.f.gflops, 2), fmt_num(r.f.gbps, 2), fmt_num(r.f.ai, 2),
                       fmt_num(r.f.attainable_gflops, 1),
                       std::isnan(r.f.peak_frac) ? ""
                                                 : fmt_num(100 * r.f.peak_frac, 1) + (r.f.above_peak ? "%!" : "%"),
                       r.f.bound});
    cells.push_back(std::move(c));
  }
  write_aligned(os, cells, e.keys.size());
  os << e.rows.size() << " groups with FLOPs or bytes; " << peaks_line(e) << '\n';
  if (e.rows.empty()) os << kNoFlopsWhy << '\n';
  if (size_t n = above_peak_rows(e))
    os << n << (n == 1 ? " group" : " groups") << ' ' << above_peak_line(e.calibration) << '\n';
}

void write_efficiency_json(std::ostream& os, const Efficiency& e) {
  std::string o = "{\"group_by\":[";
  for (size_t i = 0; i < e.keys.size(); ++i) {
    if (i) o += ',';
    append_json_string(o, group_key_name(e.keys[i]));
  }
  o += "],\"calibration\":";
  if (e.calibration.valid()) {
    o += "{\"peak_gflops\":" + json_num(e.calibration.peak_gflops) + ",\"peak_gbps\":" +
         json_num(e.calibration.peak_gbps) + ",\"threads\":" + std::to_string(e.calibration.threads) + ",\"host\":";
    append_json_string(o, e.calibration.host);
    o += ",\"path\":";
    append_json_string(o, e.calibration.path);
    o += std::string(",\"loaded\":") + (e.calibration.load.loaded ? "true" : "false") + "}";
  } else {
    o += "null";
  }
  o += ",\"rows\":[";
  for (size_t i = 0; i < e.rows.size(); ++i) {
    const EfficiencyRow& r = e.rows[i];
    o += i ? ",{" : "{";
    append_key_members(o, e.keys, r.key);
    o += "\"count\":" + std::to_string(r.count) + ",\"self_us\":" + json_num(r.self_us) +
         ",\"flops\":" + json_num(r.flops) + ",\"bytes\":" + json_num(r.bytes) + ",\"gflops\":" + json_num(r.f.gflops) +
         ",\"gbps\":" + json_num(r.f.gbps) + ",\"ai\":" + json_num(r.f.ai) +
         ",\"attainable_gflops\":" + json_num(r.f.attainable_gflops) + ",\"peak_frac\":" + json_num(r.f.peak_frac) +
         ",\"above_peak\":" + (r.f.above_peak ? "true" : "false") + ",\"bound\":";
    append_json_string(o, r.f.bound);
    o += "}";
  }
  o += "],\"above_peak\":";
  if (above_peak_rows(e)) append_json_string(o, above_peak_line(e.calibration));
  else o += "null";
  o += ",\"skipped\":" + skipped_json(e.stats) + "}\n";
  os << o;
}

void write_efficiency_csv(std::ostream& os, const Efficiency& e) {
  std::string o;
  for (const GroupKey& k : e.keys) o += csv_field(group_key_name(k)) + ",";
  for (size_t i = 0; i < std::size(kEfficiencyColumns); ++i) o += (i ? "," : "") + std::string(kEfficiencyColumns[i]);
  o += '\n';
  auto num = [](double v) { return std::isnan(v) ? std::string() : json_num(v); };
  for (const EfficiencyRow& r : e.rows) {
    for (const std::string& k : r.key) o += csv_field(k) + ",";
    o += std::to_string(r.count) + "," + num(r.self_us) + "," + num(r.flops) + "," + num(r.bytes) + "," +
         num(r.f.gflops) + "," + num(r.f.gbps) + "," + num(r.f.ai) + "," + num(r.f.attainable_gflops) + "," +
         num(r.f.peak_frac) + "," + (r.f.above_peak ? "true" : "false") + "," + r.f.bound + "\n";
  }
  os << o;
}

std::string efficiency_text(const Efficiency& e, const std::string& format) {
  std::ostringstream os;
  if (format == "json") write_efficiency_json(os, e);
  else if (format == "csv") write_efficiency_csv(os, e);
  else write_efficiency_table(os, e);
  return os.str();
}

}  // namespace dftracer::analyze
