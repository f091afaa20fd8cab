#include "diff.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <ostream>
#include <stdexcept>

#include "median.hpp"
#include "text_format.hpp"

namespace dftracer::analyze {

double delta_pct(double a, double b) {
  if (a == 0) return std::nan("");
  return (b - a) / a * 100.0;
}

std::array<double, 8> DiffRow::times() const {
  return {self_a_us,  self_b_us,  self_delta_us(),  delta_pct(self_a_us, self_b_us),
          total_a_us, total_b_us, total_delta_us(), delta_pct(total_a_us, total_b_us)};
}

DiffSort parse_diff_sort(const std::string& s) {
  if (s == "self") return DiffSort::self;
  if (s == "total") return DiffSort::total;
  if (s == "count") return DiffSort::count;
  throw std::invalid_argument("diff sorts by the |delta| of self, total or count, not '" + s + "'");
}

const char* diff_sort_name(DiffSort s) {
  return s == DiffSort::total ? "total" : s == DiffSort::count ? "count" : "self";
}

Diff diff_summaries(const Summary& a, const Summary& b, size_t top_n, DiffSort sort) {
  Diff d;
  d.keys = a.keys;
  d.sort = sort;
  d.traced_a_us = a.traced_us;
  d.traced_b_us = b.traced_us;
  d.total_a_us = a.total_us;
  d.total_b_us = b.total_us;
  d.events_a = a.complete_events;
  d.events_b = b.complete_events;
  d.stats_a = a.stats;
  d.stats_b = b.stats;
  // Ordered by key, so rows of equal impact come out the same on every run.
  std::map<std::vector<std::string>, DiffRow> joined;
  for (const SummaryRow& r : a.rows) {
    DiffRow& row = joined[r.key];
    row.count_a = r.count;
    row.self_a_us = r.self_us;
    row.total_a_us = r.total_us;
  }
  for (const SummaryRow& r : b.rows) {
    DiffRow& row = joined[r.key];
    row.count_b = r.count;
    row.self_b_us = r.self_us;
    row.total_b_us = r.total_us;
  }
  for (auto& [key, row] : joined) {
    row.key = key;
    d.rows.push_back(std::move(row));
  }
  d.groups = d.rows.size();
  std::stable_sort(d.rows.begin(), d.rows.end(), [sort](const DiffRow& x, const DiffRow& y) {
    if (sort == DiffSort::total) {
      const double tx = std::fabs(x.total_delta_us()), ty = std::fabs(y.total_delta_us());
      if (tx != ty) return tx > ty;
    } else if (sort == DiffSort::count) {
      const uint64_t cx = x.count_delta() < 0 ? -static_cast<uint64_t>(x.count_delta()) : x.count_delta();
      const uint64_t cy = y.count_delta() < 0 ? -static_cast<uint64_t>(y.count_delta()) : y.count_delta();
      if (cx != cy) return cx > cy;
    }
    double sx = std::fabs(x.self_delta_us()), sy = std::fabs(y.self_delta_us());
    if (sx != sy) return sx > sy;
    return std::fabs(x.total_delta_us()) > std::fabs(y.total_delta_us());
  });
  if (top_n && d.rows.size() > top_n) d.rows.resize(top_n);
  return d;
}

Diff diff_traces(const std::vector<std::string>& files_a, const std::vector<std::string>& files_b,
                 const std::vector<GroupKey>& keys, size_t top_n, unsigned threads, const ReadOptions& options,
                 DiffSort sort) {
  Summary a = summarize(files_a, keys, 0, threads, options);
  Summary b = summarize(files_b, keys, 0, threads, options);
  return diff_summaries(a, b, top_n, sort);
}

StepSpread step_spread(const StepReport& r) {
  StepSpread sp;
  std::vector<double> d;
  for (const StepRow& row : r.rows) {
    if (row.outlier) ++sp.outliers;
    else d.push_back(row.duration_us);
  }
  sp.steps = d.size();
  if (d.empty()) return sp;
  const size_t n = d.size();
  sp.median_us = median_of(d);
  if (n < 2) return sp;
  double mean = 0;
  for (double x : d) mean += x;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double x : d) ss += (x - mean) * (x - mean);
  if (mean > 0) sp.spread_pct = std::sqrt(ss / static_cast<double>(n - 1)) / mean * 100.0;
  return sp;
}

void mark_noise(Diff& d, const StepSpread& a, const StepSpread& b) {
  d.spread_a = a;
  d.spread_b = b;
  d.noise_pct = std::isnan(a.spread_pct) || std::isnan(b.spread_pct) ? std::nan("")
                                                                       : std::max(a.spread_pct, b.spread_pct);
  for (DiffRow& r : d.rows) {
    const double pct = delta_pct(r.self_a_us, r.self_b_us);
    r.within_noise = r.count_a > 0 && r.count_b > 0 && !std::isnan(pct) && std::fabs(pct) <= d.noise_pct;
  }
}

// ---------------------------------------------------------------------------
// Output

namespace {

std::string signed_time(double us) { return (us > 0 ? "+" : "") + human_time(us); }

std::string signed_pct(double pct) {
  if (std::isnan(pct)) return "new";
  return (pct > 0 ? "+" : "") + fmt_num(pct, 1) + "%";
}

std::string signed_count(int64_t n) { return (n > 0 ? "+" : "") + std::to_string(n); }

// "A: 6 steps, median 776.0 ms, spread ±2.1%" (or why there is no spread).
std::string spread_text(const char* side, const StepSpread& sp) {
  std::string s = std::string(side) + ": " + std::to_string(sp.steps) + (sp.steps == 1 ? " step" : " steps");
  if (sp.outliers) s += " (" + std::to_string(sp.outliers) + " outlier" + (sp.outliers == 1 ? "" : "s") + " left out)";
  if (sp.steps) s += ", median " + human_time(sp.median_us);
  if (!std::isnan(sp.spread_pct)) s += ", spread ±" + fmt_num(sp.spread_pct, 1) + "%";
  return s;
}

}  // namespace

void write_diff_table(std::ostream& os, const Diff& d) {
  const double delta = d.traced_b_us - d.traced_a_us;
  os << "A: " << human_time(d.traced_a_us) << " traced (" << d.events_a << " events), B: "
     << human_time(d.traced_b_us) << " traced (" << d.events_b << " events), delta "
     << signed_time(delta) << " (" << signed_pct(delta_pct(d.traced_a_us, d.traced_b_us)) << ")\n";
  os << spread_text("A", d.spread_a) << "; " << spread_text("B", d.spread_b) << "; ";
  if (std::isnan(d.noise_pct)) os << "no noise estimate (a run with fewer than 2 steps): no delta marked\n";
  else os << "deltas within ±" << fmt_num(d.noise_pct, 1) << "% are marked ~ (noise)\n";
  std::vector<std::string> header;
  for (const GroupKey& k : d.keys) header.push_back(group_key_name(k));
  for (const char* h : {"count A", "count B", "self A", "self B", "self delta", "self %", "total A", "total B",
                        "total delta"})
    header.push_back(h);
  std::vector<std::vector<std::string>> cells{header};
  for (const DiffRow& r : d.rows) {
    std::vector<std::string> c = r.key;
    c.push_back(std::to_string(r.count_a));
    c.push_back(std::to_string(r.count_b));
    c.push_back(human_time(r.self_a_us));
    c.push_back(human_time(r.self_b_us));
    c.push_back(signed_time(r.self_delta_us()));
    // Where A had the group but B not, "-100.0%"; where only B has it, "new".
    c.push_back((r.count_a == 0 ? "new" : signed_pct(delta_pct(r.self_a_us, r.self_b_us))) +
                (r.within_noise ? " ~" : ""));
    c.push_back(human_time(r.total_a_us));
    c.push_back(human_time(r.total_b_us));
    c.push_back(signed_time(r.total_delta_us()));
    cells.push_back(std::move(c));
  }
  write_aligned(os, cells, d.keys.size());  // keys left-aligned
  os << d.groups << " groups";
  if (d.rows.size() < d.groups)
    os << " (top " << d.rows.size() << " by |" << diff_sort_name(d.sort) << " delta| shown)";
  else if (d.sort != DiffSort::self)
    os << " (by |" << diff_sort_name(d.sort) << " delta|)";
  os << "; self: duration minus nested events; delta = B - A\n";
}

namespace {

// The numbers of a row after its key(s), in kDiffColumns order.
// ,"steps":N,"step_outliers":K,"step_median_us":X,"step_spread_pct":Y (null: under 2 steps).
std::string spread_json(const StepSpread& sp) {
  return ",\"steps\":" + std::to_string(sp.steps) + ",\"step_outliers\":" + std::to_string(sp.outliers) +
         ",\"step_median_us\":" + json_num(sp.median_us) + ",\"step_spread_pct\":" + json_num(sp.spread_pct);
}

std::vector<std::string> row_numbers(const DiffRow& r) {
  std::vector<std::string> out{std::to_string(r.count_a), std::to_string(r.count_b), std::to_string(r.count_delta())};
  for (double v : r.times()) out.push_back(json_num(v));
  return out;
}

}  // namespace

void write_diff_json(std::ostream& os, const Diff& d) {
  std::string o = "{\"group_by\":[";
  for (size_t i = 0; i < d.keys.size(); ++i) {
    if (i) o += ',';
    append_json_string(o, group_key_name(d.keys[i]));
  }
  o += "],\"groups\":" + std::to_string(d.groups);
  o += ",\"a\":{\"traced_us\":" + json_num(d.traced_a_us) + ",\"total_us\":" + json_num(d.total_a_us) +
       ",\"complete_events\":" + std::to_string(d.events_a) + ",\"skipped\":" + skipped_json(d.stats_a) +
       spread_json(d.spread_a) + "}";
  o += ",\"b\":{\"traced_us\":" + json_num(d.traced_b_us) + ",\"total_us\":" + json_num(d.total_b_us) +
       ",\"complete_events\":" + std::to_string(d.events_b) + ",\"skipped\":" + skipped_json(d.stats_b) +
       spread_json(d.spread_b) + "}";
  o += ",\"noise_pct\":" + json_num(d.noise_pct);
  o += ",\"traced_delta_us\":" + json_num(d.traced_b_us - d.traced_a_us) +
       ",\"traced_delta_pct\":" + json_num(delta_pct(d.traced_a_us, d.traced_b_us));
  o += ",\"rows\":[";
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DiffRow& r = d.rows[i];
    o += i ? ",\n{" : "\n{";
    append_key_members(o, d.keys, r.key);
    std::vector<std::string> nums = row_numbers(r);
    for (size_t c = 0; c < nums.size(); ++c) o += std::string(c ? "," : "") + "\"" + kDiffColumns[c] + "\":" + nums[c];
    o += std::string(",\"within_noise\":") + (r.within_noise ? "true" : "false") + "}";
  }
  o += "]}\n";
  os << o;
}

void write_diff_csv(std::ostream& os, const Diff& d) {
  std::string o;
  for (const GroupKey& k : d.keys) o += csv_field(group_key_name(k)) + ",";
  for (size_t c = 0; c < std::size(kDiffColumns); ++c) o += std::string(c ? "," : "") + kDiffColumns[c];
  o += "\n";
  for (const DiffRow& r : d.rows) {
    for (const std::string& k : r.key) o += csv_field(k) + ",";
    std::vector<std::string> nums = row_numbers(r);
    for (size_t c = 0; c < nums.size(); ++c) o += (c ? "," : "") + (nums[c] == "null" ? std::string() : nums[c]);
    o += "\n";
  }
  os << o;
}

}  // namespace dftracer::analyze
