// Cross-rank analysis: collectives matched across ranks, waits and
// stragglers per step (the model is described in ranks.hpp).
#include "ranks.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <memory>
#include <set>

#include "rank_collector.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

bool is_p2p(const std::string& name) { return name == "send" || name == "recv" || name == "isend" || name == "irecv"; }
bool is_send(const std::string& name) { return name == "send" || name == "isend"; }

std::unique_ptr<RankCollector> collect(const std::vector<std::string>& files, unsigned threads,
                                       const ReadOptions& options, bool self_time, ReadStats* stats) {
  threads = useful_threads(files, threads, options);
  std::vector<std::unique_ptr<RankCollector>> cols;
  std::vector<LineConsumer*> ptrs;
  for (unsigned t = 0; t < threads; ++t) {
    cols.push_back(std::make_unique<RankCollector>(self_time));
    ptrs.push_back(cols.back().get());
  }
  *stats = read_traces(files, ptrs, options);
  for (unsigned t = 1; t < threads; ++t) cols[0]->merge(*cols[t]);
  cols[0]->resolve();
  return std::move(cols[0]);
}

// Ranks first, by rank; processes without one after them, by file and pid;
// a process's GPU tracks right after it, by device; GPU tracks of no known
// process after the processes of their file.
void sort_processes(std::vector<RankProcess>& ps) {
  auto rank_of = [](const RankProcess& p) { return p.device >= 0 ? p.owner_rank : p.rank; };
  auto process_of = [](const RankProcess& p) -> const std::string& { return p.device >= 0 ? p.owner : p.pid; };
  std::stable_sort(ps.begin(), ps.end(), [&](const RankProcess& a, const RankProcess& b) {
    const bool ra = rank_of(a) >= 0, rb = rank_of(b) >= 0;
    if (ra != rb) return ra;
    if (ra && rank_of(a) != rank_of(b)) return rank_of(a) < rank_of(b);
    if (a.file != b.file) return a.file < b.file;
    const bool ua = a.device >= 0 && a.owner.empty(), ub = b.device >= 0 && b.owner.empty();
    if (ua != ub) return ub;
    if (process_of(a) != process_of(b)) return process_of(a) < process_of(b);
    if (a.device != b.device) return a.device < b.device;
    return a.pid < b.pid;
  });
}

// What every file says about the run as a whole: missing and cut-short ranks,
// the clock alignment.
void check_run(RankReport& r) {
  std::set<int64_t> seen;
  for (RankProcess& p : r.processes) {
    auto ignore = [&](const char* key, int64_t v) {
      const bool size = std::string(key) == "world_size";
      r.ignored_values.push_back(std::string(key) + " " + std::to_string(v) + " in " + r.files[p.file] +
                                 " ignored (" +
                                 (size ? "more than " + std::to_string(kMaxWorldSize) + " ranks" : "more than a day") +
                                 ")");
    };
    if (p.world_size > kMaxWorldSize) {
      ignore("world_size", p.world_size);
      p.world_size = -1;
    }
    // Taken as absent: the rank's clock counts as unaligned (offset 0).
    if (p.has_offset && (p.clock_offset_ns > kMaxClockOffsetNs || p.clock_offset_ns < -kMaxClockOffsetNs)) {
      ignore("clock_offset_ns", p.clock_offset_ns);
      p.has_offset = false;
      p.clock_offset_ns = 0;
    }
    if (p.has_uncertainty && p.uncertainty_ns > kMaxClockOffsetNs) {
      ignore("clock_offset_uncertainty_ns", p.uncertainty_ns);
      p.has_uncertainty = false;
      p.uncertainty_ns = 0;
    }
    r.world_size = std::max(r.world_size, p.world_size);
    if (p.rank < 0) continue;
    seen.insert(p.rank);
    if (!p.ended) r.incomplete_ranks.push_back(p.rank);
    if (!p.has_offset) r.offsets_unknown.push_back(p.rank);
    if (p.has_uncertainty) r.max_uncertainty_ns = std::max(r.max_uncertainty_ns, p.uncertainty_ns);
  }
  for (int64_t k = 0; k < r.world_size; ++k)
    if (!seen.count(k)) r.missing_ranks.push_back(k);
}

// The step of a comm event in its process: the one whose interval holds its
// start (the latest-starting such); -1: none. Not its step arg: the arg stays
// on the calls after the loop (the end-of-job barrier), which are in no step.
int64_t step_of(const ProcessSteps* ps, int64_t ts) {
  if (!ps) return -1;
  for (size_t i = ps->steps.size(); i-- > 0;)
    if (ps->steps[i].ts <= ts && ts < ps->steps[i].end) return static_cast<int64_t>(i);
  return -1;
}

// Who arrived last, each rank's wait (clipped to its own time in the call)
// and transfer.
void settle(Collective& c) {
  std::sort(c.ranks.begin(), c.ranks.end(),
            [](const CollectiveRank& a, const CollectiveRank& b) { return a.process < b.process; });
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t i = 0; i < c.ranks.size(); ++i) {
    first = std::min(first, c.ranks[i].arrival_ns);
    if (c.ranks[i].arrival_ns > last) {  // ties: the lowest rank
      last = c.ranks[i].arrival_ns;
      c.last = i;
    }
  }
  c.spread_ns = saturating_sub(last, first);
  for (CollectiveRank& x : c.ranks) {
    x.wait_ns = std::min(saturating_sub(last, x.arrival_ns), x.dur_ns);
    x.transfer_ns = x.dur_ns - x.wait_ns;
    c.waited_ns = saturating_add(c.waited_ns, x.wait_ns);
  }
  if (c.src >= 0 || c.dst >= 0) c.group_size = 2;  // a send and its recv
  if (c.group_size <= 0) c.group_size = static_cast<int64_t>(c.ranks.size());
  c.step = c.ranks.empty() ? -1 : c.ranks[0].step;
}

void match_collectives(RankReport& r, const std::vector<CommEvent>& comms, const std::vector<ProcessSteps>& steps) {
  std::map<std::pair<size_t, std::string>, size_t> proc_index;
  for (size_t i = 0; i < r.processes.size(); ++i) proc_index[{r.processes[i].file, r.processes[i].pid}] = i;
  std::map<std::pair<size_t, std::string>, const ProcessSteps*> proc_steps;
  for (const ProcessSteps& ps : steps) proc_steps[{ps.file, ps.pid}] = &ps;

  std::map<std::string, size_t> by_key;
  std::set<std::pair<size_t, size_t>> taken;  // (collective, process)
  for (const CommEvent& e : comms) {
    auto pi = proc_index.find({e.file, e.pid});
    if (!e.has_seq || pi == proc_index.end() || r.processes[pi->second].rank < 0) {
      ++r.unmatched_comm;  // an annotation, or a process that is no rank
      continue;
    }
    const RankProcess& p = r.processes[pi->second];
    std::string key;
    int64_t src = -1, dst = -1;
    if (is_p2p(e.name)) {
      src = is_send(e.name) ? p.rank : e.peer;
      dst = is_send(e.name) ? e.peer : p.rank;
      key = "p2p\x1f" + e.group + '\x1f' + std::to_string(src) + '>' + std::to_string(dst) + '\x1f' +
            std::to_string(e.seq);
    } else {
      key = e.group + '\x1f' + e.name + '\x1f' + std::to_string(e.seq);
    }
    auto [it, fresh] = by_key.try_emplace(key, r.collectives.size());
    if (fresh) {
      Collective c;
      c.group = e.group;
      c.name = is_p2p(e.name) ? "send/recv" : e.name;
      c.seq = e.seq;
      c.src = src;
      c.dst = dst;
      r.collectives.push_back(std::move(c));
    }
    if (!taken.insert({it->second, pi->second}).second) {
      ++r.duplicate_comm;
      continue;
    }
    Collective& c = r.collectives[it->second];
    c.group_size = std::max(c.group_size, e.group_size);
    auto ps = proc_steps.find({e.file, e.pid});
    CollectiveRank x;
    x.process = pi->second;
    x.step = step_of(ps == proc_steps.end() ? nullptr : ps->second, e.ts_ns);
    x.arrival_ns = saturating_add(e.ts_ns, p.clock_offset_ns);
    x.dur_ns = e.dur_ns;
    x.end_ns = saturating_add(x.arrival_ns, e.dur_ns);
    x.bytes = e.bytes;
    c.ranks.push_back(x);
  }
  for (Collective& c : r.collectives) settle(c);
  std::stable_sort(r.collectives.begin(), r.collectives.end(), [](const Collective& a, const Collective& b) {
    const int64_t ta = a.ranks[a.last].arrival_ns, tb = b.ranks[b.last].arrival_ns;
    return a.step != b.step ? a.step < b.step : ta < tb;
  });
}

using Interval = std::pair<int64_t, int64_t>;  // [begin, end) ns on rank 0's clock
using Intervals = std::vector<Interval>;

// The length of the union of intervals (sorts them in place).
int64_t union_ns(Intervals& v) {
  std::sort(v.begin(), v.end());
  int64_t total = 0, b = 0, e = INT64_MIN;
  for (const Interval& x : v) {
    if (x.second <= x.first) continue;
    if (x.first > e) {
      if (e > b) total = saturating_add(total, e - b);
      b = x.first;
      e = x.second;
    } else {
      e = std::max(e, x.second);
    }
  }
  if (e > b) total = saturating_add(total, e - b);
  return total;
}

// The step x rank table and each step's straggler, from the collectives.
void attribute(RankReport& r, const StepReport* steps) {
  std::map<std::pair<int64_t, size_t>, StepRankRow> cells;  // (step, process)
  auto cell = [&](int64_t step, size_t proc) -> StepRankRow& {
    StepRankRow& row = cells[{step, proc}];
    row.step = step;
    row.process = proc;
    return row;
  };
  if (steps) {
    std::map<std::pair<size_t, std::string>, size_t> proc_index;
    for (size_t i = 0; i < r.processes.size(); ++i) proc_index[{r.processes[i].file, r.processes[i].pid}] = i;
    size_t row = 0;
    for (const ProcessSteps& ps : steps->processes) {
      auto pi = proc_index.find({ps.file, ps.pid});
      for (size_t s = 0; s < ps.steps.size(); ++s, ++row) {
        if (pi == proc_index.end()) continue;
        const StepRow& sr = steps->rows[row];
        StepRankRow& c = cell(static_cast<int64_t>(s), pi->second);
        c.label = sr.label;
        c.duration_us = sr.duration_us;
        c.traced_us = sr.traced_us;
      }
    }
  }
  // Times in collectives are wall time: a rank's async collectives (DDP's
  // gradient buckets, launched back to back) overlap, and all wait for the
  // same late rank at once, so their times are merged as intervals, never
  // summed (summing counted one 0.2 s straggler three times over 3 buckets).
  std::map<size_t, Intervals> proc_comm, proc_wait;                  // process ->
  std::map<std::pair<int64_t, size_t>, Intervals> cell_comm, cell_wait;  // (step, process) ->
  // Waits a late rank caused: per (late rank's cell or process) and waiting process.
  std::map<std::pair<size_t, size_t>, Intervals> proc_caused;
  std::map<std::tuple<int64_t, size_t, size_t>, Intervals> cell_caused;
  std::map<int64_t, int64_t> max_wait;  // step -> longest single wait
  std::map<int64_t, std::set<int64_t>> absent;  // step -> ranks that never arrived at one of its collectives
  std::set<int64_t> ended_early;
  std::vector<size_t> ranked;  // processes with a rank: the whole job
  for (size_t i = 0; i < r.processes.size(); ++i)
    if (r.processes[i].rank >= 0) ranked.push_back(i);
  for (Collective& c : r.collectives) {
    // A collective of the whole job (not a send/recv, not a subgroup) that
    // some rank with a file never entered: it ended first, and everyone in
    // the call waited for it from arrival to end.
    if (!c.complete() && c.src < 0 && ranked.size() >= 2 && c.group_size >= static_cast<int64_t>(ranked.size())) {
      for (size_t a : ranked) {
        if (std::any_of(c.ranks.begin(), c.ranks.end(), [&](const CollectiveRank& x) { return x.process == a; }))
          continue;
        absent[c.step].insert(r.processes[a].rank);
        ended_early.insert(r.processes[a].rank);
        if (r.ended_early_step < 0 || c.step < r.ended_early_step) r.ended_early_step = c.step;
        cell(c.step, a);
        for (const CollectiveRank& x : c.ranks) {
          const Interval whole_call{x.arrival_ns, x.end_ns};
          proc_caused[{a, x.process}].push_back(whole_call);
          cell_caused[{c.step, a, x.process}].push_back(whole_call);
        }
      }
    }
    const bool has_late = c.ranks.size() >= 2;  // else nobody to wait for
    const CollectiveRank* late = has_late ? &c.ranks[c.last] : nullptr;
    for (size_t i = 0; i < c.ranks.size(); ++i) {
      const CollectiveRank& x = c.ranks[i];
      const Interval in_call{x.arrival_ns, x.end_ns};
      const Interval waiting{x.arrival_ns, saturating_add(x.arrival_ns, x.wait_ns)};
      ++r.processes[x.process].comm_calls;
      proc_comm[x.process].push_back(in_call);
      proc_wait[x.process].push_back(waiting);
      cell(x.step, x.process);
      cell_comm[{x.step, x.process}].push_back(in_call);
      cell_wait[{x.step, x.process}].push_back(waiting);
      int64_t& mw = max_wait[x.step];
      mw = std::max(mw, x.wait_ns);
      if (late && i != c.last && x.wait_ns > 0) {
        proc_caused[{late->process, x.process}].push_back(waiting);
        cell_caused[{late->step, late->process, x.process}].push_back(waiting);
      }
    }
    if (!c.complete()) ++r.partial_collectives;
    if (!late) continue;
    ++r.processes[late->process].last_arrivals;
    ++cell(late->step, late->process).last_arrivals;
  }
  for (auto& [proc, iv] : proc_comm) {
    RankProcess& p = r.processes[proc];
    p.comm_ns = union_ns(iv);
    p.wait_ns = union_ns(proc_wait[proc]);
    p.transfer_ns = p.comm_ns - p.wait_ns;  // waits lie inside the calls
  }
  for (auto& [key, iv] : cell_comm) {
    StepRankRow& row = cells[key];
    row.comm_ns = union_ns(iv);
    row.wait_ns = union_ns(cell_wait[key]);
    row.transfer_ns = row.comm_ns - row.wait_ns;
  }
  for (auto& [key, iv] : proc_caused)
    r.processes[key.first].caused_wait_ns = saturating_add(r.processes[key.first].caused_wait_ns, union_ns(iv));
  for (auto& [key, iv] : cell_caused) {
    StepRankRow& row = cells[{std::get<0>(key), std::get<1>(key)}];
    row.caused_wait_ns = saturating_add(row.caused_wait_ns, union_ns(iv));
  }
  for (auto& [key, row] : cells) r.step_rows.push_back(row);
  // Per step: the rank that cost the others the most waiting.
  for (size_t i = 0; i < r.step_rows.size();) {
    StepStraggler s;
    s.step = r.step_rows[i].step;
    s.min_duration_us = r.step_rows[i].duration_us;
    std::vector<std::pair<int64_t, int64_t>> late;  // (caused wait, rank)
    for (; i < r.step_rows.size() && r.step_rows[i].step == s.step; ++i) {
      const StepRankRow& row = r.step_rows[i];
      s.max_duration_us = std::max(s.max_duration_us, row.duration_us);
      s.min_duration_us = std::min(s.min_duration_us, row.duration_us);
      if (row.caused_wait_ns > 0) late.push_back({row.caused_wait_ns, r.processes[row.process].rank});
    }
    std::sort(late.begin(), late.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    for (auto& [w, rank] : late) s.late_ranks.push_back(rank);
    s.absent_ranks.assign(absent[s.step].begin(), absent[s.step].end());
    if (!late.empty()) {
      s.straggler = late[0].second;
      s.caused_wait_ns = late[0].first;
    }
    if (!s.absent_ranks.empty()) {  // a rank that never came outranks any late one
      auto worst = std::find_if(late.begin(), late.end(), [&](const auto& l) { return absent[s.step].count(l.second); });
      s.straggler = worst != late.end() ? worst->second : s.absent_ranks.front();
      s.caused_wait_ns = worst != late.end() ? worst->first : 0;
    }
    s.max_wait_ns = max_wait[s.step];
    r.steps.push_back(std::move(s));
  }
  r.ended_early.assign(ended_early.begin(), ended_early.end());
}

}  // namespace

RankReport scan_ranks(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options) {
  RankReport r;
  r.files = files;
  r.processes = collect(files, threads, options, false, &r.stats)->processes();
  sort_processes(r.processes);
  check_run(r);
  return r;
}

RankReport analyze_ranks(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options,
                         bool with_steps) {
  RankReport r;
  r.files = files;
  std::unique_ptr<RankCollector> c = collect(files, threads, options, true, &r.stats);
  r.processes = c->processes();
  r.nesting = c->nesting();
  sort_processes(r.processes);
  check_run(r);
  // The steps model costs two more reads: only worth it across ranks (the
  // report asks on every input, most of them one process).
  size_t ranks = 0;
  for (const RankProcess& p : r.processes) ranks += p.rank >= 0;
  std::unique_ptr<StepReport> steps;
  if (with_steps && ranks >= 2) steps = std::make_unique<StepReport>(analyze_steps(files, threads, options));
  int64_t traced = 0;  // thread time: a GPU track's is device time
  for (const RankProcess& p : r.processes)
    if (p.device < 0) traced = saturating_add(traced, p.self_ns);
  r.traced_us = ns_to_us(traced);
  match_collectives(r, c->comms(), steps ? steps->processes : std::vector<ProcessSteps>{});
  attribute(r, steps.get());
  return r;
}

std::string process_label(const RankProcess& p) {
  if (p.device >= 0) {
    const std::string gpu = "GPU " + std::to_string(p.device);
    if (p.owner_rank >= 0) return gpu + " of rank " + std::to_string(p.owner_rank);
    if (!p.owner.empty()) return gpu + " of pid " + p.owner + " (file " + std::to_string(p.file) + ")";
    return gpu + " (file " + std::to_string(p.file) + ")";
  }
  if (p.rank >= 0) return "rank " + std::to_string(p.rank);
  return "pid " + p.pid + " (file " + std::to_string(p.file) + ")";
}

}  // namespace dftracer::analyze
