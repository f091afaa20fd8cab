#include "category_wall.hpp"

#include <cstdio>
#include <ostream>
#include <vector>

#include "text_format.hpp"

namespace dftracer::analyze {

namespace {
struct Row {
  std::string category;
  double wall_us = 0, thread_us = 0;
  uint64_t count = 0;
};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
}  // namespace

CategoryWallReads read_category_wall(const std::vector<std::string>& files, unsigned threads,
                                     const ReadOptions& options) {
  CategoryWallReads r;
  r.steps = analyze_steps(files, threads, options);
  ReadOptions ro = options;
  ro.runtime_files = r.steps.runtime_files;
  r.by_category = summarize(files, parse_group_keys("category"), 0, threads, ro);
  return r;
}

void write_category_wall(std::ostream& os, const StepReport& steps, const Summary& s, const std::string& format) {
  const RunWall w = model_run_wall(steps);
  std::vector<Row> rows;
  for (size_t c = 0; c < kNumStepCategories; ++c) rows.push_back({kStepCategories[c], w.wall_us[c], 0, 0});
  rows.push_back({"untraced", w.untraced_us, 0, 0});
  for (const SummaryRow& r : s.rows)
    for (Row& x : rows)
      if (!r.key.empty() && r.key[0] == x.category) {
        x.thread_us += r.self_us;
        x.count += r.count;
      }
  auto share = [&](double us) { return w.span_us > 0 ? us / w.span_us : 0.0; };
  const std::string rule =
      "wall: each instant of the run (first to last event of each process that runs the model, added over " +
      std::to_string(w.processes) +
      " process(es)) goes to the first category any of its threads was in: compile > gc > checkpoint > optimizer > "
      "backward > forward > comm > data > other, untraced when none; thread: self time added over threads";
  if (format == "json") {
    std::string o = "{\"span_us\":" + json_num(w.span_us) + ",\"processes\":" + std::to_string(w.processes) +
                    ",\"traced_us\":" + json_num(s.traced_us) + ",\"rule\":";
    append_json_string(o, rule);
    o += ",\"rows\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& x = rows[i];
      o += i ? ",{\"category\":" : "{\"category\":";
      append_json_string(o, x.category);
      o += ",\"wall_us\":" + json_num(x.wall_us) + ",\"wall_share\":" + json_num(share(x.wall_us)) +
           ",\"thread_us\":" + json_num(x.thread_us) + ",\"count\":" + std::to_string(x.count) + "}";
    }
    os << o << "],\"skipped\":" << skipped_json(s.stats) << "}\n";
    return;
  }
  if (format == "csv") {
    std::string o = "category,wall_us,wall_share,thread_us,count\n";
    for (const Row& x : rows)
      o += x.category + "," + json_num(x.wall_us) + "," + json_num(share(x.wall_us)) + "," + json_num(x.thread_us) +
           "," + std::to_string(x.count) + "\n";
    os << o;
    return;
  }
  std::vector<std::vector<std::string>> cells = {{"category", "wall_ms", "wall%", "thread_ms", "count"}};
  for (const Row& x : rows)
    cells.push_back({x.category, fixed(x.wall_us / 1e3, 3), fixed(100 * share(x.wall_us), 1) + "%",
                     x.category == "untraced" ? "" : fixed(x.thread_us / 1e3, 3),
                     x.category == "untraced" ? "" : std::to_string(x.count)});
  write_aligned(os, cells, 1);
  os << "run " << fixed(w.span_us / 1e3, 3) << " ms; " << rule << "\n";
}

}  // namespace dftracer::analyze
