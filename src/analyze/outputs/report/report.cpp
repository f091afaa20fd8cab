#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "calibration.hpp"
#include "device_track.hpp"
#include "event_category.hpp"
#include "efficiency.hpp"
#include "event_decoder.hpp"
#include "io_view.hpp"
#include "text_format.hpp"
#include "median.hpp"
#include "module_tree.hpp"
#include "output_file.hpp"
#include "report_groups.hpp"
#include "report_device.hpp"
#include "report_memory.hpp"
#include "report_page.hpp"
#include "report_ranks.hpp"
#include "step_select.hpp"
#include "steps.hpp"
#include "summary.hpp"  // append_json_string
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

// Whole microseconds at or before ns (floor, also for times before the epoch).
int64_t floor_us(int64_t ns) { return ns / 1000 - (ns % 1000 < 0); }

// Event counts of one process in time bins of 2^shift microseconds. When a
// process needs more than kMaxBins bins the bins double in width, so memory
// stays bounded however long the trace.
struct Timeline {
  static constexpr size_t kMaxBins = 4096;
  int shift = 0;
  std::map<int64_t, uint64_t> bins;

  void coarsen_to(int s) {
    if (s <= shift) return;
    std::map<int64_t, uint64_t> nb;
    for (auto& [k, c] : bins) nb[k >> (s - shift)] += c;
    bins.swap(nb);
    shift = s;
  }
  void add(int64_t ts_us) {
    int64_t k = ts_us >> shift;
    ++bins[k];
    while (bins.size() > kMaxBins) coarsen_to(shift + 1);
  }
  void merge(Timeline& o) {
    int s = std::max(shift, o.shift);
    coarsen_to(s);
    o.coarsen_to(s);
    for (auto& [k, c] : o.bins) bins[k] += c;
    while (bins.size() > kMaxBins) coarsen_to(shift + 1);
  }
};

// Every section comes from the summary model (self time, summary.hpp)
// grouped by name, module, phase, category (event_category.hpp) and cat at
// once, rolled up per key afterwards (the cat gives an event's kind, report_groups.hpp).
const char* kReportKeys = "name,module,phase,category,cat";
enum ReportKey : size_t { kName = 0, kModule = 1, kPhase = 2, kCategory = 3, kCat = 4, kNumReportKeys = 5 };

class ReportConsumer : public LineConsumer {
 public:
  // The I/O section's args (fhash, ret, FH's value) are captured by the same
  // decode: the report reads its inputs once for its groups and I/O alike.
  // `runtime`: the runtime's files (runtime_files.hpp), for the category key.
  explicit ReportConsumer(std::shared_ptr<const RuntimeFiles> runtime)
      : groups_(parse_group_keys(kReportKeys), std::move(runtime)) {
    const ArgCapture c = IoAccumulator::capture();
    // The groups read args.fhash where the I/O view captures it.
    if (groups_.fhash_slot() >= c.keys.size() || c.keys[groups_.fhash_slot()] != "fhash")
      throw std::logic_error("report: the category key's fhash slot is not the I/O view's");
    decoder_.capture_args(c);
  }
  void begin_piece(size_t file_index) override { groups_.begin_piece(file_index); }
  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st != DecodeStatus::Ok) return st;
    groups_.add_event(ev_);
    io_.add(ev_);
    if (ev_.is_metadata()) {
      if (ev_.name == "process_name" && !ev_.meta_name.empty())
        process_names_[std::string(ev_.pid_text)] = std::string(ev_.meta_name);
      return st;
    }
    if (!ev_.is_complete() || !ev_.has_dur) return st;
    if (ev_.has_ts) {
      int64_t us = floor_us(ev_.ts_ns);
      (is_device_event(ev_) ? device_pids_ : cpu_pids_).emplace(ev_.pid_text);
      timelines_[std::string(ev_.pid_text)].add(us);
      first_ts_us_ = std::min(first_ts_us_, us);
    }
    return st;
  }

  void merge(ReportConsumer& o) {
    groups_.merge(o.groups_);
    io_.merge(o.io_);
    for (auto& [pid, tl] : o.timelines_) timelines_[pid].merge(tl);
    for (auto& [pid, n] : o.process_names_) process_names_.emplace(pid, n);
    device_pids_.insert(o.device_pids_.begin(), o.device_pids_.end());
    cpu_pids_.insert(o.cpu_pids_.begin(), o.cpu_pids_.end());
    first_ts_us_ = std::min(first_ts_us_, o.first_ts_us_);
  }

  SummaryAggregator groups_;
  std::map<std::string, Timeline> timelines_;
  std::map<std::string, std::string> process_names_;
  std::set<std::string> device_pids_, cpu_pids_;  // pids with device work, with CPU events: GPU rows of the timeline
  int64_t first_ts_us_ = INT64_MAX;  // INT64_MAX: no event had a ts
  IoAccumulator io_{io_report_options()};

 private:
  EventDecoder decoder_;
  Event ev_;
};

// The groups of one report key (name, module, ...) with everything else summed.
using Rollup = std::unordered_map<std::string, GroupStats>;
Rollup rollup(const SummaryAggregator& agg, size_t key) {
  Rollup m;
  for (const auto& [k, g] : agg.groups()) m[split_group_key(k)[key]].merge(g);
  return m;
}

bool is_no_module(std::string_view m) { return m.empty() || m == "(none)"; }  // summary's key without args.module

// The names of the events whose kind (report_groups.hpp) is one of `kinds`.
Rollup names_of_kind(const SummaryAggregator& agg, std::initializer_list<std::string_view> kinds) {
  Rollup m;
  for (const auto& [k, g] : agg.groups()) {
    const std::vector<std::string> v = split_group_key(k);
    if (std::find(kinds.begin(), kinds.end(), event_kind(v[kCat], v[kName])) != kinds.end()) m[v[kName]].merge(g);
  }
  return m;
}

// The modules (events with args.module), and the time of the events without
// one split by what it is (no_module_label).
std::pair<Rollup, Rollup> modules_and_no_module(const SummaryAggregator& agg) {
  std::pair<Rollup, Rollup> r;
  for (const auto& [k, g] : agg.groups()) {
    const std::vector<std::string> v = split_group_key(k);
    if (!is_no_module(v[kModule])) r.first[v[kModule]].merge(g);
    else r.second[no_module_label(v[kCategory], event_kind(v[kCat], v[kName]))].merge(g);
  }
  return r;
}

// Labels of a rollup by self time, descending (ties by label), at most `top` (0 = all).
std::vector<const Rollup::value_type*> by_self(const Rollup& m, size_t top) {
  std::vector<const Rollup::value_type*> v;
  for (const auto& kv : m) v.push_back(&kv);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) {
    return a->second.self_ns != b->second.self_ns ? a->second.self_ns > b->second.self_ns : a->first < b->first;
  });
  if (top && v.size() > top) v.resize(top);
  return v;
}

// JSON array of [label, count, self_us, total_us] sorted by self time, at most `top` (0 = all).
std::string totals_json(const Rollup& m, size_t top) {
  std::string o = "[";
  for (auto* kv : by_self(m, top)) {
    if (o.size() > 1) o += ',';
    o += '[';
    append_json_string(o, kv->first);
    o += "," + std::to_string(kv->second.count) + "," + json_num(ns_to_us(kv->second.self_ns)) + "," +
         json_num(ns_to_us(kv->second.total_ns)) + "]";
  }
  return o + "]";
}

std::string pct(double part, double whole) { return fmt_num(whole > 0 ? 100 * part / whole : 0, 1) + "%"; }

// "a 4.9%, b 4.8%": the `n` modules with the most self time and their share
// of `traced` ("" when no event names a module).
std::string modules_text(const Rollup& modules, size_t n, double traced) {
  std::string m;
  for (auto* kv : by_self(modules, n)) {
    if (kv->first.empty() || kv->first == "(none)") continue;  // summary's key for events without a module
    m += (m.empty() ? "" : ", ") + kv->first + " " + pct(ns_to_us(kv->second.self_ns), traced);
  }
  return m;
}

// The answer's first line: the model's hottest ops (`ops`: op and kernel events only).
std::string ops_line(const Rollup& ops, double traced) {
  auto top = by_self(ops, 3);
  if (top.empty()) return "Hottest ops: no op or kernel event (the regions and compile charts show the rest).";
  std::string l = "Hottest ops by self time: ";
  for (size_t i = 0; i < top.size(); ++i) {
    const double self = ns_to_us(top[i]->second.self_ns);
    l += (i ? ", " : "") + top[i]->first + " " + pct(self, traced) + (i ? "" : " of the traced time") + " (" +
         human_time(self) + ", " + std::to_string(top[i]->second.count) + " events)";
  }
  return l;
}

// Python's garbage collections: those inside the run of the processes that
// run the model (how many, the longest, their wall share), then the whole
// trace's (`gc`: the names of kind gc, gc.gen0..gc.gen2), which also holds
// the collections while the interpreter imports, builds the model and exits
// and a DataLoader worker's; "" when there are none.
std::string gc_line(const Rollup& gc, const RunWall& w, const StepReport& st) {
  uint64_t count = 0, full = 0;
  int64_t self_ns = 0;
  for (const auto& [name, g] : gc) {
    count += g.count;
    self_ns += g.self_ns;
    if (name == "gc.gen2") full += g.count;
  }
  if (count == 0) return "";
  constexpr size_t c = step_category_index("gc");
  auto n = [](uint64_t k) { return std::to_string(k) + (k == 1 ? " collection" : " collections"); };
  std::string l = "Python garbage collection: " + n(w.gc_collections) + " in the run";
  if (w.gc_collections) {
    l += ", the longest " + human_time(w.gc_longest_us) + ", " + pct(w.wall_us[c], w.span_us) + " of its wall time";
    double steps_us = 0, steps_gc_us = 0;  // the steps alone: the loop's own collections
    for (const StepRow& x : st.rows) {
      steps_us += x.duration_us;
      steps_gc_us += x.wall_us[c];
    }
    if (steps_us > 0) l += " and " + pct(steps_gc_us, steps_us) + " of the steps'";
    l += " (those inside compile work count as compile)";
  }
  return l + "; the whole trace holds " + std::to_string(count) + " (" + std::to_string(full) + " full), " +
         human_time(ns_to_us(self_ns)) + " of thread time (also at start-up, at exit and in data workers)";
}

// Checkpoint calls (torch.save, state_dict, safetensors, save_pretrained:
// the names of kind checkpoint, each one outermost call): how many, their
// wall time in the run and inside the steps (a save between two steps is
// outside them), the longest, and the names with the most time; "" when
// there are none.
std::string checkpoint_line(const Rollup& ckpt, const RunWall& w, const StepReport& st) {
  uint64_t count = 0;
  const Rollup::value_type* longest = nullptr;
  for (const auto& kv : ckpt) {
    count += kv.second.count;
    if (!longest || kv.second.max_ns > longest->second.max_ns) longest = &kv;
  }
  if (count == 0) return "";
  constexpr size_t c = step_category_index("checkpoint");
  std::string l = "Checkpoints: " + std::to_string(count) + (count == 1 ? " call" : " calls") + ", " +
                  human_time(w.wall_us[c]) + " of the run's wall time (" + pct(w.wall_us[c], w.span_us) + ")";
  double steps_us = 0, steps_ckpt_us = 0;
  for (const StepRow& x : st.rows) {
    steps_us += x.duration_us;
    steps_ckpt_us += x.wall_us[c];
  }
  if (steps_us > 0) l += ", " + pct(steps_ckpt_us, steps_us) + " of the steps'";
  l += "; the longest " + longest->first + " " + human_time(ns_to_us(longest->second.max_ns));
  std::vector<const Rollup::value_type*> v;
  for (const auto& kv : ckpt) v.push_back(&kv);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) {
    return a->second.total_ns != b->second.total_ns ? a->second.total_ns > b->second.total_ns : a->first < b->first;
  });
  for (size_t i = 0; i < v.size() && i < 3; ++i)
    l += (i ? ", " : "; most time: ") + v[i]->first + " " + human_time(ns_to_us(v[i]->second.total_ns)) + " (" +
         std::to_string(v[i]->second.count) + ")";
  return l;
}

// The answer the page opens on, and `report` prints: the op and the modules
// with the most self time, compile vs run, I/O (when traced) and the steps, each one line.
std::vector<std::string> answer_lines(const Summary& s, const Rollup& names, const Rollup& gc, const Rollup& ckpt,
                                      const Rollup& modules, const Rollup& categories, const StepReport& st,
                                      const IoView& io) {
  std::vector<std::string> lines;
  const double traced = s.traced_us;
  if (!s.complete_events) return {"No complete events were read."};
  lines.push_back(ops_line(names, traced));
  const std::string m = modules_text(modules, 4, traced);
  lines.push_back(m.empty() ? "Top modules: no event names an nn.Module (args.module)." : "Top modules by self time: " + m);
  // Compile vs run in wall time (wall_time.hpp): worker threads compiling
  // while the main thread waits count once; their thread time is beside it.
  const RunWall w = model_run_wall(st);
  auto thread_us = [&](const char* c) {
    auto it = categories.find(c);
    return it == categories.end() ? 0.0 : ns_to_us(it->second.self_ns);
  };
  std::string run;
  for (size_t c = 1; c < kNumStepCategories; ++c)
    run += std::string(c > 1 ? ", " : "") + kStepCategories[c] + " " + pct(w.wall_us[c], w.span_us);
  run += ", untraced " + pct(w.untraced_us, w.span_us);
  std::string l = "Compile vs run (wall time" + (w.processes > 1 ? ", " + std::to_string(w.processes) +
                                                                       " processes added" : std::string()) +
                  "): compile " + pct(w.wall_us[0], w.span_us) + " (" + human_time(w.wall_us[0]) + " of " +
                  human_time(w.span_us) + "), run " + pct(w.span_us - w.wall_us[0], w.span_us) + " (" + run + ")";
  const double compile_threads = thread_us("compile");
  if (compile_threads > 1.05 * w.wall_us[0])
    l += "; compile thread time " + human_time(compile_threads) + " (threads added)";
  lines.push_back(l);
  if (const std::string g = gc_line(gc, w, st); !g.empty()) lines.push_back(g);
  if (const std::string k = checkpoint_line(ckpt, w, st); !k.empty()) lines.push_back(k);
  if (io.total.ops) {  // I/O calls are leaves: their time is their self time
    // The program's data I/O first; the runtime's own (imports, shared
    // libraries, the trace itself: io_view.hpp's io_file_kind) in one clause.
    const IoStats& t = io.data;
    const double us = t.time_ns / 1e3;
    auto mib = [](uint64_t b) { return fmt_num(b / 1048576.0, 3) + " MiB"; };
    std::string l3 = "I/O: data " + std::to_string(t.ops) + " POSIX/STDIO calls, " + human_time(us) + " (" +
                     pct(us, traced) + " of the traced time); read " + mib(t.read_bytes) + " in " +
                     std::to_string(t.reads) + " calls, wrote " + mib(t.write_bytes) + " in " + std::to_string(t.writes) +
                     " (" + std::to_string(t.small_reads + t.small_writes) + " under " +
                     std::to_string(io.options.small_bytes) + " B)";
    auto most = io.by_file.end();
    for (auto it = io.by_file.begin(); it != io.by_file.end(); ++it)
      if (io.file_kind.at(it->first) == IoFileKind::Data &&
          (most == io.by_file.end() || it->second.time_ns > most->second.time_ns))
        most = it;
    if (most != io.by_file.end())
      l3 += "; most data I/O time: " + most->first + " " + human_time(most->second.time_ns / 1e3) + " (" +
            std::to_string(most->second.ops) + " calls)";
    if (io.checkpoint.ops)
      l3 += "; checkpoint files: " + std::to_string(io.checkpoint.ops) + " calls, " +
            human_time(io.checkpoint.time_ns / 1e3) + ", read " + mib(io.checkpoint.read_bytes) + ", wrote " +
            mib(io.checkpoint.write_bytes);
    if (io.runtime.ops)
      l3 += "; Python imports and libraries: " + std::to_string(io.runtime.ops) + " calls, " +
            human_time(io.runtime.time_ns / 1e3);
    lines.push_back(l3);
  }
  if (!st.rows.empty()) {
    std::vector<double> later;
    std::string outliers;
    const std::string* pid = nullptr;  // each process's first row (its first step, or the first chosen) is "the first"
    for (const StepRow& x : st.rows) {
      if (pid && *pid == x.pid) later.push_back(x.duration_us);
      pid = &x.pid;
      if (x.outlier) outliers += (outliers.empty() ? "" : ", ") + std::string(x.slow ? "slow" : "fast") + " step " +
                                 std::to_string(x.step) + (st.processes.size() > 1 ? " of pid " + x.pid : "");
    }
    std::string l2 = "Steps: " + std::to_string(st.rows.size()) + "; the first " + human_time(st.rows[0].duration_us) +
                     ", compile " + pct(st.rows[0].compile_share, 1.0) + " of its wall time";
    if (!later.empty()) {
      l2 += "; the others " + human_time(median_of(later)) + " (median)";
    }
    lines.push_back(l2 + (outliers.empty() ? "; no outlier" : "; outliers: " + outliers));
  } else {
    lines.push_back("Steps: none found (no step mark or step arg, no optimizer step, and no user region repeats on a main thread).");
  }
  lines.push_back(std::to_string(s.complete_events) + " complete events, " + human_time(traced) + " traced.");
  return lines;
}

// The run's wall time by category, as totals_json's rows: [label, 0, wall_us, wall_us].
std::string wall_json(const RunWall& w) {
  std::vector<std::pair<std::string, double>> parts;
  for (size_t c = 0; c < kNumStepCategories; ++c) parts.emplace_back(kStepCategories[c], w.wall_us[c]);
  parts.emplace_back("untraced", w.untraced_us);
  std::stable_sort(parts.begin(), parts.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string o = "[";
  for (const auto& [label, us] : parts) {
    if (o.size() > 1) o += ',';
    o += '[';
    append_json_string(o, label);
    o += ",0," + json_num(us) + "," + json_num(us) + "]";
  }
  return o + "]";
}

std::string string_array_json(const std::vector<std::string>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) o += ',';
    append_json_string(o, v[i]);
  }
  return o + "]";
}

// {"rows": [[label, duration_us, compile_us..other_us, untraced_us (wall time), outlier, start_us,
//  duration_us, pid, slow]], "categories" (with "untraced"), "rule", "first_compile_share"};
// start relative to `origin_us`.
std::string steps_report_json(const StepReport& st, double origin_us) {
  std::string o = "{\"categories\":[";
  for (size_t c = 0; c < kNumStepCategories; ++c) o += std::string(c ? ",\"" : "\"") + kStepCategories[c] + "\"";
  o += ",\"untraced\"],\"rule\":";
  append_json_string(o, kStepOutlierRule);
  o += ",\"first_compile_share\":" + json_num(st.rows.empty() ? 0 : st.rows[0].compile_share) + ",\"rows\":[";
  for (size_t i = 0; i < st.rows.size(); ++i) {
    const StepRow& x = st.rows[i];
    o += i ? ",[" : "[";
    append_json_string(o, (st.processes.size() > 1 ? "pid " + x.pid + " " : "") + "step " + std::to_string(x.step));
    o += "," + json_num(x.duration_us);
    for (double v : x.wall_us) o += "," + json_num(v);
    o += "," + json_num(x.untraced_us);
    o += x.outlier ? ",true," : ",false,";
    o += json_num(x.start_us - origin_us) + "," + json_num(x.duration_us) + ",";
    append_json_string(o, x.pid);
    o += x.slow ? ",true]" : ",false]";
  }
  return o + "]}";
}

// The roofline: the peaks (null without a calibration) and one point per op
// that declared both FLOPs and bytes: [name, ai, gflops, self_us, peak_frac, bound, above_peak];
// "above_peak": the line saying the calibration is too low when a point is above its roof.
std::string roofline_json(const Rollup& names, const Calibration& cal, size_t top) {
  const Calibration* peak = cal.valid() ? &cal : nullptr;
  std::string o = "{\"peak_gflops\":" + json_num(peak ? cal.peak_gflops : kNaN) +
                  ",\"peak_gbps\":" + json_num(peak ? cal.peak_gbps : kNaN) + ",\"calibration\":";
  append_json_string(o, peak ? cal.path : default_calibration_path());
  o += ",\"points\":[";
  size_t n = 0, without_bytes = 0, above = 0;
  for (auto* kv : by_self(names, 0)) {
    const GroupStats& g = kv->second;
    if (!(g.flops > 0)) continue;  // views and the like declare 0 FLOPs
    EfficiencyFigures f = efficiency_figures(g.flops, g.flops_ns, g.bytes, g.bytes_ns, peak);
    if (std::isnan(f.ai) || std::isnan(f.gflops)) {
      ++without_bytes;
      continue;
    }
    if (n++ == top) break;
    o += n > 1 ? ",[" : "[";
    append_json_string(o, kv->first);
    o += "," + json_num(f.ai) + "," + json_num(f.gflops) + "," + json_num(ns_to_us(g.self_ns)) + "," +
         json_num(f.peak_frac) + ",";
    append_json_string(o, f.bound);
    o += f.above_peak ? ",true]" : ",false]";
    above += f.above_peak;
  }
  o += "],\"without_bytes\":" + std::to_string(without_bytes) + ",\"above_peak\":";
  if (above) append_json_string(o, std::to_string(above) + " op(s) " + above_peak_line(cal));
  else o += "null";
  return o + "}";
}

// What was left out of the input, and what the nesting had to estimate.
std::string bad_input_json(const ReadStats& st, const NestingStats& nesting) {
  std::string line = st.problems_line();
  std::string o = "{\"line\":";
  append_json_string(o, line.empty() ? "nothing skipped: every line was read" : line);
  o += ",\"counts\":[";
  const std::pair<const char*, uint64_t> counts[] = {
      {"malformed lines", st.malformed},           {"events with mistyped fields", st.bad_fields},
      {"truncated gzip members", st.truncated_members}, {"corrupt gzip members", st.corrupt_members},
      {"empty files", st.empty_files},             {"mismatched .idx files", st.bad_indexes},
      {"gzip piece mismatches", st.boundary_mismatches}, {"oversized lines or documents", st.oversized},
      {"parents nested approximately", nesting.approximated}};
  for (size_t i = 0; i < std::size(counts); ++i) {
    o += i ? ",[" : "[";
    append_json_string(o, counts[i].first);
    o += "," + std::to_string(counts[i].second) + "]";
  }
  return o + "]}";
}

// A timeline row's label and order: a process's GPU (a device track of ours,
// format/device_track.hpp) right below the process, "GPU <d> (pid <p>)"; a
// Kineto trace's GPU (pid = the device index, its process not known) after
// every process, "GPU <d>"; a process, "pid <p> <name>".
std::pair<std::string, std::string> timeline_row(const ReportConsumer& r, const std::string& pid) {
  int64_t owner = -1, device = -1;
  if (format::parse_device_track_pid(pid, &owner, &device)) {
    const std::string p = std::to_string(owner);
    return {p + '\x01' + pid, "GPU " + std::to_string(device) + " (pid " + p + ")"};
  }
  if (r.device_pids_.count(pid) && !r.cpu_pids_.count(pid)) return {std::string("\x02") + pid, "GPU " + pid};
  auto nm = r.process_names_.find(pid);
  return {pid, "pid " + pid + (nm != r.process_names_.end() ? " " + nm->second : "")};
}

// Bins as [start_us_relative, count], at most ~200 per process for the page.
std::string timeline_json(ReportConsumer& r) {
  std::string data = "[";
  bool first = true;
  char buf[96];
  std::map<std::string, std::pair<std::string, const Timeline*>> rows;  // by order: label, bins
  for (auto& [pid, tl] : r.timelines_) {
    auto [order, label] = timeline_row(r, pid);
    rows.emplace(order, std::make_pair(label, &tl));
  }
  for (auto& [order, row] : rows) {
    const std::string& label = row.first;
    const Timeline& tl = *row.second;
    Timeline t = tl;  // coarsen a copy down to <= 200 bins
    if (!t.bins.empty()) {
      while (static_cast<double>(t.bins.rbegin()->first - t.bins.begin()->first) >= 200) t.coarsen_to(t.shift + 1);
    }
    const int shift = t.shift;
    if (!first) data += ',';
    first = false;
    data += "{\"label\":";
    append_json_string(data, label);
    std::snprintf(buf, sizeof buf, ",\"width\":%.0f,\"bins\":[", std::ldexp(1.0, shift));
    data += buf;
    double origin = r.first_ts_us_ != INT64_MAX ? static_cast<double>(r.first_ts_us_) : 0;
    bool fb = true;
    for (auto& [k, c] : t.bins) {
      std::snprintf(buf, sizeof buf, "%s[%.0f,%llu]", fb ? "" : ",", std::ldexp(static_cast<double>(k), shift) - origin,
                    static_cast<unsigned long long>(c));
      data += buf;
      fb = false;
    }
    data += "]}";
  }
  return data + "]";
}

// Reads `files` into one ReportConsumer (one per reader thread, merged).
std::unique_ptr<ReportConsumer> read_report(const std::vector<std::string>& files, unsigned threads,
                                            const ReadOptions& options, ReadStats* stats) {
  std::vector<std::unique_ptr<ReportConsumer>> cons;
  std::vector<LineConsumer*> ptrs;
  for (unsigned t = 0; t < threads; ++t) {
    cons.push_back(std::make_unique<ReportConsumer>(options.runtime_files));
    ptrs.push_back(cons.back().get());
  }
  *stats = read_traces(files, ptrs, options);
  for (unsigned t = 1; t < threads; ++t) cons[0]->merge(*cons[t]);
  return std::move(cons[0]);
}

// The steady state: every step but the first (its compile, first calls,
// allocator growth and optimizer state are warm-up), as `--steps 1:` reads
// it, when no step range was given and some process has two steps or more.
// The charts' rows for it (the page shows it first, the whole run one click
// away) and one answer line; "" when there is none. One more read: the spans
// come from the steps already found.
std::string steady_json(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options,
                        const StepReport& steps, size_t top_n, std::vector<std::string>* answer) {
  if (options.steps) return "";
  size_t kept = 0, procs = 0;
  for (const ProcessSteps& p : steps.processes)
    if (p.steps.size() >= 2) kept += p.steps.size() - 1, ++procs;
  if (kept == 0) return "";
  double wall_us = 0;
  for (const StepRow& x : steps.rows)
    if (x.step > 0) wall_us += x.duration_us;
  StepPlan plan;
  plan.processes = steps.processes;
  ReadOptions ro = options;
  apply_step_spans(select_steps(plan, parse_step_slice("1:")), &ro);
  ReadStats stats;
  std::unique_ptr<ReportConsumer> r = read_report(files, threads, ro, &stats);
  const double traced = build_summary(r->groups_, 0).traced_us;  // resolves the nesting: self times final
  const Rollup ops = names_of_kind(r->groups_, {"op"});
  const auto [modules, no_module] = modules_and_no_module(r->groups_);
  const std::string what = "every step but the first: " + std::to_string(kept) + " step" + (kept > 1 ? "s" : "") +
                           (procs > 1 ? " of " + std::to_string(procs) + " processes" : "") + ", " +
                           human_time(wall_us) + " of wall time";
  std::string line = "Steady state (" + what + "): ";
  auto top = by_self(ops, 3);
  if (top.empty()) line += "no op or kernel event";
  for (size_t i = 0; i < top.size(); ++i)
    line += (i ? ", " : "hottest ops ") + top[i]->first + " " + pct(ns_to_us(top[i]->second.self_ns), traced);
  if (const std::string m = modules_text(modules, 3, traced); !m.empty()) line += "; top modules " + m;
  answer->insert(answer->end() - 1, line + " of its traced time");  // before the events line
  std::string o = "{\"what\":";
  append_json_string(o, what);
  o += ",\"top_ops\":" + totals_json(ops, top_n);
  o += ",\"by_module\":" + totals_json(modules, top_n);
  o += ",\"no_module\":" + totals_json(no_module, 0);
  o += ",\"regions\":" + totals_json(names_of_kind(r->groups_, {"region", "graph", "comm", "checkpoint"}), top_n);
  o += ",\"by_phase\":" + totals_json(rollup(r->groups_, kPhase), 0);
  return o + "}";
}

}  // namespace

ReportResult write_report(const std::vector<std::string>& files, const std::string& out_path, size_t top_n,
                          unsigned threads, const ReadOptions& options, const std::string& calibration_path) {
  refuse_input_as_output(out_path, files);
  // The calibration before the read: a bad --calibration fails fast.
  Calibration cal;
  if (std::string p = find_calibration(files, calibration_path); !p.empty()) cal = read_calibration(p);
  threads = useful_threads(files, threads, options);
  ReportResult res;
  const StepReport steps = analyze_chosen_steps(files, threads, options);  // its own reads
  ReadOptions ro = options;  // with the runtime's files the steps' first pass found
  ro.runtime_files = steps.runtime_files;
  std::unique_ptr<ReportConsumer> whole = read_report(files, threads, ro, &res.stats);
  ReportConsumer& r = *whole;
  Summary s = build_summary(r.groups_, 0);  // resolves the nesting: self times final
  Rollup by_key[kNumReportKeys];
  for (size_t k = 0; k < kNumReportKeys; ++k) by_key[k] = rollup(r.groups_, k);
  const double origin_us = r.first_ts_us_ != INT64_MAX ? static_cast<double>(r.first_ts_us_) : 0;
  // POSIX/STDIO events, aggregated in the same pass (io_view.cpp's
  // IoAccumulator): a line of the answer, and a section of the page when there are some.
  const IoView io = r.io_.finish(res.stats);
  const Rollup ops = names_of_kind(r.groups_, {"op"});  // the model's own work leads
  const auto [modules, no_module] = modules_and_no_module(r.groups_);
  std::vector<std::string> answer =
      answer_lines(s, ops, names_of_kind(r.groups_, {"gc"}), names_of_kind(r.groups_, {"checkpoint"}), modules,
                   by_key[kCategory], steps, io);
  const std::string steady = steady_json(files, threads, ro, steps, top_n, &answer);
  for (const std::string& l : answer) res.answer += l + "\n";

  // The page's data, one member per section, in the order the page shows them.
  std::string data = "{\"files\":" + std::to_string(files.size()) + ",\"events\":" + std::to_string(s.complete_events);
  data += ",\"total_us\":" + json_num(s.total_us) + ",\"traced_us\":" + json_num(s.traced_us);
  data += ",\"answer\":" + string_array_json(answer);
  data += ",\"top_ops\":" + totals_json(ops, top_n);
  data += ",\"by_module\":" + totals_json(modules, top_n);
  data += ",\"no_module\":" + totals_json(no_module, 0);
  data += ",\"compile_phases\":" + totals_json(names_of_kind(r.groups_, {"compile"}), top_n);
  data += ",\"regions\":" + totals_json(names_of_kind(r.groups_, {"region", "graph", "comm", "checkpoint"}), top_n);
  data += ",\"by_category\":" + wall_json(model_run_wall(steps));
  data += ",\"steps\":" + steps_report_json(steps, origin_us);
  std::ostringstream tree_json;  // the module icicle from the same groups
  write_module_tree_json(tree_json, build_module_tree(r.groups_, kModule));
  std::string tree = tree_json.str();
  data += ",\"module_tree\":" + tree.substr(0, tree.size() - 1);  // without its newline
  data += ",\"roofline\":" + roofline_json(by_key[kName], cal, 40);
  data += ",\"by_phase\":" + totals_json(by_key[kPhase], 0);
  if (!steady.empty()) data += ",\"steady\":" + steady;
  if (io.total.ops) data += ",\"io\":" + io_report_json(io, top_n);
  data += ",\"timeline\":" + timeline_json(r);
  data += ",\"bad_input\":" + bad_input_json(res.stats, s.nesting);
  data += "}";
  std::string page = fill_page(kReportPage, "@DATA@", data);  // page.html, page.css, page.js
  page = with_ranks_section(std::move(page), files, threads, options);  // several ranks: heat map, stragglers
  // GPU events (event_category.hpp is_device_event; not in the CPU tables): device time, from one more read only then.
  if (r.groups_.device_events() > 0)
    page = with_device_section(std::move(page), files, threads, options, &res.answer);
  // Memory capture's args seen in the main pass: the memory section's own reads (chart, peaks).
  if (s.has_memory) page = with_memory_section(std::move(page), files, options);
  write_output_file(out_path, page);
  return res;
}

}  // namespace dftracer::analyze
