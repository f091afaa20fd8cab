// The outputs of the cross-rank analysis. Every table is built once as rows
// of typed cells (rank_tables below) and then written as JSON, CSV or text, so
// the three formats and the Python DataFrames (built from the JSON) cannot
// disagree on a number.
#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ranks.hpp"
#include "summary.hpp"  // append_json_string, skipped_json
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

struct Cell {
  enum Kind { Null, Num, Text, Bool } kind = Null;
  double num = 0;
  std::string text;
};
Cell num(double v) { return {Cell::Num, v, {}}; }
Cell num_ns(int64_t ns) { return num(ns_to_us(ns)); }
Cell integer(int64_t v) { return num(static_cast<double>(v)); }
Cell text(std::string s) { return {Cell::Text, 0, std::move(s)}; }
Cell boolean(bool b) { return {Cell::Bool, b ? 1.0 : 0.0, {}}; }
Cell rank_or_null(int64_t r) { return r >= 0 ? integer(r) : Cell{}; }

struct Table {
  std::vector<const char*> columns;
  std::vector<std::vector<Cell>> rows;
};

std::string json_cell(const Cell& c) {
  switch (c.kind) {
    case Cell::Num:
      return json_num(c.num);
    case Cell::Bool:
      return c.num != 0 ? "true" : "false";
    case Cell::Text: {
      std::string o;
      append_json_string(o, c.text);
      return o;
    }
    case Cell::Null:
      break;
  }
  return "null";
}

std::string csv_cell(const Cell& c) {
  switch (c.kind) {
    case Cell::Num:
      return json_num(c.num);
    case Cell::Bool:
      return c.num != 0 ? "true" : "false";
    case Cell::Text:
      return csv_field(c.text);
    case Cell::Null:
      break;
  }
  return "";
}

std::string text_cell(const Cell& c) {
  if (c.kind == Cell::Num) return c.num == static_cast<int64_t>(c.num) ? json_num(c.num) : fmt_num(c.num, 3);
  if (c.kind == Cell::Bool) return c.num != 0 ? "yes" : "";
  return c.kind == Cell::Text ? c.text : "";
}

// {"columns":[...],"rows":[[...],...]}: what pandas.DataFrame(rows, columns) takes.
std::string table_json(const Table& t) {
  std::string o = "{\"columns\":[";
  for (size_t i = 0; i < t.columns.size(); ++i) o += (i ? ",\"" : "\"") + std::string(t.columns[i]) + "\"";
  o += "],\"rows\":[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    o += r ? ",\n[" : "\n[";
    for (size_t i = 0; i < t.rows[r].size(); ++i) o += (i ? "," : "") + json_cell(t.rows[r][i]);
    o += "]";
  }
  return o + "]}";
}

void table_csv(std::ostream& os, const Table& t) {
  std::string o;
  for (size_t i = 0; i < t.columns.size(); ++i) o += (i ? "," : "") + std::string(t.columns[i]);
  o += "\n";
  for (auto& row : t.rows) {
    for (size_t i = 0; i < row.size(); ++i) o += (i ? "," : "") + csv_cell(row[i]);
    o += "\n";
  }
  os << o;
}

void table_text(std::ostream& os, const Table& t, size_t top = 0) {
  std::vector<std::vector<std::string>> cells;
  cells.emplace_back(t.columns.begin(), t.columns.end());
  for (size_t r = 0; r < t.rows.size() && (top == 0 || r < top); ++r) {
    cells.emplace_back();
    for (const Cell& c : t.rows[r]) cells.back().push_back(text_cell(c));
  }
  write_aligned(os, cells, 0);  // every column right-aligned
  if (top && t.rows.size() > top) os << "(" << t.rows.size() - top << " more rows: --format json or csv)\n";
}

const RankProcess& proc(const RankReport& r, size_t i) { return r.processes[i]; }

Table ranks_table(const RankReport& r) {
  Table t{{"rank", "local_rank", "group_rank", "world_size", "hostname", "pid", "file", "complete", "count", "self_us",
           "total_us", "share", "comm_us", "wait_us", "transfer_us", "comm_calls", "last_arrivals", "caused_wait_us",
           "clock_offset_ns", "clock_offset_uncertainty_ns", "gpu", "gpu_of"},
          {}};
  for (const RankProcess& p : r.processes) {
    const double self_us = ns_to_us(p.self_ns);
    // A GPU track's row: its device and its process; device time in total_us, no share of thread time.
    const bool gpu = p.device >= 0;
    const std::string of = !gpu ? "" : p.owner_rank >= 0 ? "rank " + std::to_string(p.owner_rank)
                                     : !p.owner.empty() ? "pid " + p.owner : "";
    t.rows.push_back({rank_or_null(p.rank), rank_or_null(p.local_rank), rank_or_null(p.group_rank),
                      rank_or_null(p.world_size), text(p.hostname), text(p.pid),
                      text(p.file < r.files.size() ? r.files[p.file] : ""), boolean(p.ended),
                      integer(static_cast<int64_t>(p.complete)), num(self_us), num_ns(p.total_ns),
                      gpu ? Cell{} : num(r.traced_us > 0 ? self_us / r.traced_us : 0), num_ns(p.comm_ns), num_ns(p.wait_ns),
                      num_ns(p.transfer_ns), integer(static_cast<int64_t>(p.comm_calls)),
                      integer(static_cast<int64_t>(p.last_arrivals)), num_ns(p.caused_wait_ns),
                      p.has_offset ? integer(p.clock_offset_ns) : Cell{},
                      p.has_uncertainty ? integer(p.uncertainty_ns) : Cell{}, gpu ? integer(p.device) : Cell{},
                      gpu && !of.empty() ? text(of) : Cell{}});
  }
  return t;
}

// "N processes" or "N processes and M GPU tracks" (their rows in the ranks table).
std::string processes_text(const RankReport& r) {
  size_t gpus = 0;
  for (const RankProcess& p : r.processes) gpus += p.device >= 0;
  const size_t procs = r.processes.size() - gpus;
  std::string s = std::to_string(procs) + (procs == 1 ? " process" : " processes");
  if (gpus) s += " and " + std::to_string(gpus) + (gpus == 1 ? " GPU track" : " GPU tracks");
  return s;
}

Table steps_table(const RankReport& r) {
  std::map<int64_t, int64_t> straggler;
  for (const StepStraggler& s : r.steps) straggler[s.step] = s.straggler;
  Table t{{"step", "rank", "pid", "label", "duration_us", "traced_us", "comm_us", "wait_us", "transfer_us",
           "last_arrivals", "caused_wait_us", "straggler"},
          {}};
  for (const StepRankRow& x : r.step_rows) {
    const RankProcess& p = proc(r, x.process);
    t.rows.push_back({integer(x.step), rank_or_null(p.rank), text(p.pid), text(x.label), num(x.duration_us),
                      num(x.traced_us), num_ns(x.comm_ns), num_ns(x.wait_ns), num_ns(x.transfer_ns),
                      integer(static_cast<int64_t>(x.last_arrivals)), num_ns(x.caused_wait_ns),
                      boolean(p.rank >= 0 && straggler[x.step] == p.rank)});
  }
  return t;
}

std::string rank_list(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

Table stragglers_table(const RankReport& r) {
  Table t{{"step", "straggler", "caused_wait_us", "max_wait_us", "late_ranks", "slowest_us", "fastest_us",
           "absent_ranks"},
          {}};
  for (const StepStraggler& s : r.steps)
    t.rows.push_back({integer(s.step), rank_or_null(s.straggler), num_ns(s.caused_wait_ns), num_ns(s.max_wait_ns),
                      text(rank_list(s.late_ranks)), num(s.max_duration_us), num(s.min_duration_us),
                      text(rank_list(s.absent_ranks))});
  return t;
}

Table collectives_table(const RankReport& r) {
  Table t{{"id", "step", "group", "name", "seq", "src", "dst", "group_size", "ranks_seen", "complete", "last_rank",
           "spread_us", "waited_us", "transfer_us", "bytes"},
          {}};
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const Collective& c = r.collectives[i];
    const CollectiveRank& late = c.ranks[c.last];
    t.rows.push_back({integer(static_cast<int64_t>(i)), integer(c.step), text(c.group), text(c.name),
                      integer(c.seq), rank_or_null(c.src), rank_or_null(c.dst), integer(c.group_size),
                      integer(static_cast<int64_t>(c.ranks.size())), boolean(c.complete()),
                      rank_or_null(proc(r, late.process).rank), num_ns(c.spread_ns), num_ns(c.waited_ns),
                      num_ns(late.transfer_ns), num(late.bytes)});
  }
  return t;
}

Table waits_table(const RankReport& r) {
  Table t{{"id", "step", "rank", "arrival_us", "wait_us", "transfer_us", "dur_us", "bytes", "last"}, {}};
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const Collective& c = r.collectives[i];
    int64_t first = INT64_MAX;
    for (const CollectiveRank& x : c.ranks) first = std::min(first, x.arrival_ns);
    for (size_t k = 0; k < c.ranks.size(); ++k) {
      const CollectiveRank& x = c.ranks[k];
      t.rows.push_back({integer(static_cast<int64_t>(i)), integer(x.step), rank_or_null(proc(r, x.process).rank),
                        num_ns(saturating_sub(x.arrival_ns, first)), num_ns(x.wait_ns), num_ns(x.transfer_ns),
                        num_ns(x.dur_ns), num(x.bytes), boolean(k == c.last)});
    }
  }
  return t;
}

Table table_named(const RankReport& r, const std::string& name) {
  if (name == "ranks") return ranks_table(r);
  if (name == "steps") return steps_table(r);
  if (name == "stragglers") return stragglers_table(r);
  if (name == "collectives") return collectives_table(r);
  return waits_table(r);
}

std::string int_list_json(const std::vector<int64_t>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + std::to_string(v[i]);
  return o + "]";
}

// The run as a whole: world size, missing and cut-short ranks, alignment.
std::string run_json(const RankReport& r) {
  std::string o = "\"world_size\":" + (r.world_size >= 0 ? std::to_string(r.world_size) : std::string("null"));
  o += ",\"missing_ranks\":" + int_list_json(r.missing_ranks);
  o += ",\"incomplete_ranks\":" + int_list_json(r.incomplete_ranks);
  o += ",\"ended_early\":" + int_list_json(r.ended_early);
  o += ",\"alignment\":{\"max_uncertainty_us\":" + json_num(ns_to_us(r.max_uncertainty_ns)) +
       ",\"offsets_unknown\":" + int_list_json(r.offsets_unknown) + ",\"note\":";
  append_json_string(o, alignment_note(r));
  o += "},\"partial_collectives\":" + std::to_string(r.partial_collectives) +
       ",\"unmatched_comm\":" + std::to_string(r.unmatched_comm) +
       ",\"duplicate_comm\":" + std::to_string(r.duplicate_comm);
  o += ",\"events\":" + std::to_string(r.stats.events) + ",\"skipped\":" + skipped_json(r.stats);
  return o;
}

void run_text(std::ostream& os, const RankReport& r) {
  size_t ranks = 0;
  for (const RankProcess& p : r.processes) ranks += p.rank >= 0;
  os << ranks << " ranks";
  if (r.world_size >= 0) os << " of world size " << r.world_size;
  os << ", " << processes_text(r) << "; " << alignment_note(r) << "\n";
  const std::string problems = rank_problems_line(r);
  if (!problems.empty()) os << problems << "\n";
}

}  // namespace

std::string alignment_note(const RankReport& r) {
  size_t ranks = 0;
  for (const RankProcess& p : r.processes) ranks += p.rank >= 0;
  if (ranks < 2) return "one rank: no clock alignment needed";
  if (r.offsets_unknown.size() == ranks)
    return "no clock_offset_ns in any file: ranks' clocks taken as aligned (offsets 0), alignment unknown";
  std::string s = "clocks aligned to rank 0's within +-" + human_time(ns_to_us(r.max_uncertainty_ns));
  if (!r.offsets_unknown.empty())
    s += "; no clock_offset_ns for rank(s) " + rank_list(r.offsets_unknown) + ": taken as 0, their alignment unknown";
  return s;
}

std::string rank_problems_line(const RankReport& r) {
  std::string s;
  if (!r.missing_ranks.empty())
    s += "missing rank(s) " + rank_list(r.missing_ranks) + " of world size " + std::to_string(r.world_size) +
         " (no trace file)";
  if (!r.incomplete_ranks.empty())
    s += (s.empty() ? "" : "; ") + std::string("incomplete rank(s) ") + rank_list(r.incomplete_ranks) +
         " (file cut short: no end event)";
  if (!r.ended_early.empty())
    s += (s.empty() ? "" : "; ") + std::string("rank(s) ") + rank_list(r.ended_early) +
         " ended early: absent from collectives the other ranks entered, from step " +
         std::to_string(r.ended_early_step) + " (it failed or exited there; the others waited for it)";
  if (r.partial_collectives)
    s += (s.empty() ? "" : "; ") + std::to_string(r.partial_collectives) +
         " collective(s) seen on fewer ranks than their group size";
  for (const std::string& v : r.ignored_values) s += (s.empty() ? "" : "; ") + v;
  return s;
}

void check_rank_sort(const std::string& sort) {
  if (sort != "self" && sort != "total")
    throw std::invalid_argument("--by rank sorts by self or total, not '" + sort + "'");
}

namespace {

// ranks_table(r), its rows ordered and cut as write_rank_summary_* say.
Table rank_summary_table(const RankReport& r, const std::string& sort, size_t top) {
  Table t = ranks_table(r);
  if (sort.empty() && top == 0) return t;
  const bool by_total = sort == "total";
  std::vector<size_t> order(r.processes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const RankProcess &a = r.processes[x], &b = r.processes[y];
    return by_total ? a.total_ns > b.total_ns : a.self_ns > b.self_ns;
  });
  if (top && order.size() > top) order.resize(top);
  std::vector<std::vector<Cell>> rows;
  for (size_t i : order) rows.push_back(std::move(t.rows[i]));
  t.rows = std::move(rows);
  return t;
}

}  // namespace

void write_rank_summary_table(std::ostream& os, const RankReport& r, const std::string& sort, size_t top) {
  run_text(os, r);
  Table t = rank_summary_table(r, sort, top);
  // The file column is long and the text view is for reading: leave it out.
  for (auto& row : t.rows) row.erase(row.begin() + 6);
  t.columns.erase(t.columns.begin() + 6);
  table_text(os, t);
  os << "self: duration minus nested events (same thread); share of all processes' traced time; wait: in "
        "collectives, for the last rank to arrive\n";
  if (t.rows.size() < r.processes.size())
    os << "(top " << t.rows.size() << " of " << r.processes.size() << " rows by " << (sort.empty() ? "self" : sort)
       << " time shown)\n";
}

void write_rank_summary_json(std::ostream& os, const RankReport& r, const std::string& sort, size_t top) {
  os << "{" << run_json(r) << ",\"traced_us\":" << json_num(r.traced_us) << ",\"ranks\":"
     << table_json(rank_summary_table(r, sort, top)) << "}\n";
}

void write_rank_summary_csv(std::ostream& os, const RankReport& r, const std::string& sort, size_t top) {
  table_csv(os, rank_summary_table(r, sort, top));
}

void write_ranks_json(std::ostream& os, const RankReport& r, const std::vector<std::string>& tables) {
  std::string o = "{" + run_json(r) + ",\"traced_us\":" + json_num(r.traced_us);
  for (const std::string& name : tables) o += ",\"" + name + "\":" + table_json(table_named(r, name));
  os << o << "}\n";
}

void write_ranks_json(std::ostream& os, const RankReport& r) {
  write_ranks_json(os, r, std::vector<std::string>(std::begin(kRankTables), std::end(kRankTables)));
}

void write_ranks_csv(std::ostream& os, const RankReport& r, const std::string& table) {
  table_csv(os, table_named(r, table));
}

bool write_no_ranks(std::ostream& os, const RankReport& r, const std::string& format) {
  for (const RankProcess& p : r.processes)
    if (p.rank >= 0) return false;
  const std::string note =
      "no ranks: these traces carry no rank metadata (not a torchrun/torch.distributed job); " + processes_text(r);
  size_t gpus = 0;
  for (const RankProcess& p : r.processes) gpus += p.device >= 0;
  if (format == "json") {
    std::string o = "{\"ranks\":0,\"processes\":" + std::to_string(r.processes.size() - gpus) + ",\"note\":";
    append_json_string(o, note);
    o += ",\"gpu_tracks\":" + std::to_string(gpus);
    os << o << ",\"events\":" << r.stats.events << ",\"skipped\":" << skipped_json(r.stats) << "}\n";
  } else {
    os << note << "\n";
  }
  return true;
}

void write_ranks_text(std::ostream& os, const RankReport& r, size_t top) {
  run_text(os, r);
  // Step x rank: each rank's step duration, the straggler starred.
  std::map<int64_t, std::map<int64_t, std::pair<double, bool>>> grid;
  std::set<int64_t> ranks;
  std::map<int64_t, int64_t> straggler;
  for (const StepStraggler& s : r.steps) straggler[s.step] = s.straggler;
  for (const StepRankRow& x : r.step_rows) {
    const int64_t rank = proc(r, x.process).rank;
    if (rank < 0 || x.step < 0) continue;
    ranks.insert(rank);
    grid[x.step][rank] = {x.duration_us, straggler[x.step] == rank};
  }
  if (!grid.empty()) {
    os << "\nstep duration (ms) per rank; * = the step's straggler (made the others wait longest)\n";
    Table t;
    t.columns.push_back("step");
    std::vector<std::string> heads;
    for (int64_t k : ranks) heads.push_back("rank " + std::to_string(k));
    for (auto& h : heads) t.columns.push_back(h.c_str());
    for (auto& [step, row] : grid) {
      std::vector<Cell> cells{integer(step)};
      for (int64_t k : ranks) {
        auto it = row.find(k);
        cells.push_back(it == row.end() ? Cell{}
                                        : text(fmt_num(it->second.first / 1e3, 3) + (it->second.second ? "*" : "")));
      }
      t.rows.push_back(std::move(cells));
    }
    table_text(os, t);
  }
  os << "\nstragglers per step (waits in us)\n";
  table_text(os, stragglers_table(r));
  os << "\nwait vs transfer per step and rank (us)\n";
  table_text(os, steps_table(r));
  // The collectives that cost the most waiting first.
  Table c = collectives_table(r);
  std::stable_sort(c.rows.begin(), c.rows.end(),
                   [](const std::vector<Cell>& a, const std::vector<Cell>& b) { return a[11].num > b[11].num; });
  os << "\ncollectives by spread (last arrival - first arrival, us)\n";
  table_text(os, c, top ? top : 20);
  os << "wait: last arrival - own arrival, clipped to the rank's own time in the call; transfer: the rest\n";
}

}  // namespace dftracer::analyze
