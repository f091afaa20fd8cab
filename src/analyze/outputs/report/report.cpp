#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "calibration.hpp"
#include "efficiency.hpp"
#include "event_decoder.hpp"
#include "io_view.hpp"
#include "text_format.hpp"
#include "median.hpp"
#include "module_tree.hpp"
#include "output_file.hpp"
#include "report_groups.hpp"
#include "report_ranks.hpp"
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
  ReportConsumer() { decoder_.capture_args(IoAccumulator::capture()); }
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
    first_ts_us_ = std::min(first_ts_us_, o.first_ts_us_);
  }

  SummaryAggregator groups_{parse_group_keys(kReportKeys)};
  std::map<std::string, Timeline> timelines_;
  std::map<std::string, std::string> process_names_;
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

// The answer the page opens on, and `report` prints: the op and the modules
// with the most self time, compile vs run, I/O (when traced) and the steps, each one line.
std::vector<std::string> answer_lines(const Summary& s, const Rollup& names, const Rollup& modules,
                                      const Rollup& categories, const StepReport& st, const IoView& io) {
  std::vector<std::string> lines;
  const double traced = s.traced_us;
  if (!s.complete_events) return {"No complete events were read."};
  lines.push_back(ops_line(names, traced));
  std::string m;
  for (auto* kv : by_self(modules, 4)) {
    if (kv->first.empty() || kv->first == "(none)") continue;  // summary's key for events without a module
    m += (m.empty() ? "" : ", ") + kv->first + " " + pct(ns_to_us(kv->second.self_ns), traced);
  }
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
    if (io.runtime.ops)
      l3 += "; Python imports and libraries: " + std::to_string(io.runtime.ops) + " calls, " +
            human_time(io.runtime.time_ns / 1e3);
    lines.push_back(l3);
  }
  if (!st.rows.empty()) {
    std::vector<double> later;
    std::string outliers;
    for (const StepRow& x : st.rows) {
      if (x.step > 0) later.push_back(x.duration_us);
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
    lines.push_back("Steps: none found (no step mark or step arg, and no user region repeats on a main thread).");
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

const char* kPage = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>dftracer-analyze report</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}h3{font-size:15px;margin-top:18px}
#answer-lines li{margin:4px 0;font-size:15px}
table#bad-input td{padding:1px 10px;font-size:13px}
.note{color:#666;font-size:13px}
svg.chart{display:block;border:1px solid #ddd;background:#fcfcfc}
svg.chart text{font-size:11px;fill:#333}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
</style></head><body>
<h1>Trace report</h1>
<section id="answer"><h2>Where the time went</h2><ul id="answer-lines"></ul>
<p class="note" id="overview"></p>
<h3>Top model ops and kernels by self time</h3><div id="top-ops"></div>
<h3>Top modules by self time</h3><div id="by-module"></div>
<h3>Self time outside any module, by what it is</h3><p class="note">Events without args.module, first rule that
matches: compile (cat compile), data loading (I/O, DataLoader), optimizer, graph calls between their ops (a compiled
graph's call outside its ops), outside any module (ops of no nn.Module), communication (cat comm), between graphs (a
region's own time: the loop's code outside any graph call or op).</p><div id="no-module"></div>
<h3>Compile vs run: wall time by kind of work</h3><p class="note">The processes that run the model, from first to last
event: each instant goes to the first kind of work any of their threads was doing (compile, optimizer, backward, forward,
data, other), untraced when none; worker threads compiling while the main thread waits count once.</p>
<div id="by-category"></div>
<div id="steps-section" hidden><h3>Per step: compile / forward / backward / optimizer / data / other / untraced (wall time)</h3>
<p class="note" id="steps-summary"></p><div id="by-step"></div><div class="legend" id="steps-legend"></div></div>
</section>
<h2>Compile work (cat compile) by self time</h2><div id="compile-phases"></div>
<h2>User regions and other events by self time</h2><p class="note">Regions (pydftracer's dft_fn/dft_ai, app and
DataLoader regions, record_function scopes), compiled graphs' calls and collectives: their own time, outside the ops
they hold.</p><div id="regions"></div>
<h2>Module tree (total time; width = a module's total, below it its children)</h2><div id="module-icicle"></div>
<h2>Roofline: achieved GFLOP/s against FLOPs per byte</h2><p class="note" id="roofline-note"></p><div id="roofline"></div><p class="note" id="roofline-unlabelled"></p>
<h2>Steps per process over time</h2><div id="step-timeline"></div>
<h2>Events per process over time</h2><div id="timeline"></div><div class="legend" id="timeline-legend"></div>
<h2>Forward / backward / inference (self time)</h2><div id="by-phase"></div>
<div id="io-section" hidden><h2>I/O time by data file</h2><p class="note" id="io-summary"></p><div id="io-by-file"></div>
<p class="note" id="io-runtime"></p>
<h2>I/O time by call</h2><div id="io-by-call"></div>
<h2>I/O time by process</h2><div id="io-by-process"></div>
<h2>I/O bandwidth over time (MiB/s, bytes counted at each call's start)</h2><div id="io-bandwidth"></div><div class="legend" id="io-bandwidth-legend"></div></div>
<h2>Skipped input</h2><p class="note" id="bad-input-line"></p><table id="bad-input"></table>
<script id="report-data" type="application/json">@DATA@</script>
<script>
(function(){
"use strict";
var D = JSON.parse(document.getElementById("report-data").textContent);
var NS = "http://www.w3.org/2000/svg";
var COLORS = ["#4e79a7","#f28e2b","#e15759","#76b7b2","#59a14f","#edc948","#b07aa1","#ff9da7","#9c755f","#bab0ac"];
function el(name, attrs, parent){ var e=document.createElementNS(NS,name); for(var k in attrs) e.setAttribute(k,attrs[k]); if(parent) parent.appendChild(e); return e; }
function fmt(us){ if(us>=1e6) return (us/1e6).toFixed(3)+" s"; if(us>=1e3) return (us/1e3).toFixed(3)+" ms"; return us.toFixed(3)+" us"; }
// One bar per row [name, count, self_us, total_us]; `tip` (optional) makes
// a row's tooltip instead.
function bars(target, rows, title, tip){
  var host=document.getElementById(target);
  if(!rows.length){ host.textContent="No events."; return; }
  var rowH=20, labelW=330, W=1000, H=rows.length*rowH+10, max=0;
  rows.forEach(function(r){ if(r[2]>max) max=r[2]; });
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":title},host);
  rows.forEach(function(r,i){
    var y=5+i*rowH, w=max>0?(W-labelW-130)*r[2]/max:0;
    var label=r[0].length>52?r[0].slice(0,25)+"\u2026"+r[0].slice(-25):r[0];
    el("text",{x:labelW-6,y:y+14,"text-anchor":"end"},svg).textContent=label;
    var b=el("rect",{"class":"bar",x:labelW,y:y+2,width:Math.max(w,1),height:rowH-5,fill:COLORS[i%COLORS.length]},svg);
    el("title",{},b).textContent=tip?tip(r):r[0]+": "+fmt(r[2])+" self, "+fmt(r[3])+" total, in "+r[1]+" events";
    el("text",{x:labelW+Math.max(w,1)+5,y:y+14},svg).textContent=fmt(r[2])+(r[1]>0?" ("+r[1]+")":"");
  });
}
function icicle(target, tree){
  var host=document.getElementById(target);
  if(!tree || !tree.roots.length){ host.textContent="No events with a module."; return; }
  var rowH=22, W=1000, depth=0;
  (function deepest(ns){ ns.forEach(function(n){ depth=Math.max(depth,n.depth+1); deepest(n.children); }); })(tree.roots);
  var svg=el("svg",{"class":"chart","width":W,"height":depth*rowH+2,"role":"img","aria-label":"module tree"},host);
  var scale=tree.tree_us>0?(W-2)/tree.tree_us:0, i=0;
  function draw(nodes, x0){
    var x=x0;
    nodes.forEach(function(n){
      var w=n.total_us*scale, y=1+n.depth*rowH;
      var r=el("rect",{"class":"node",x:x+1,y:y,width:Math.max(w-1,1),height:rowH-2,fill:COLORS[(i++)%COLORS.length]},svg);
      el("title",{},r).textContent=n.path+": "+fmt(n.total_us)+" total, "+fmt(n.self_us)+" self, "+(100*n.share).toFixed(2)+"%, "+n.count+" events";
      if(w>50){ var t=el("text",{x:x+4,y:y+15},svg); t.textContent=n.name.length*6.5>w-8?n.name.slice(0,Math.max(1,Math.floor((w-8)/6.5)))+"\u2026":n.name; }
      draw(n.children, x);
      x+=w;
    });
  }
  draw(tree.roots, 0);
}
function timeline(target){
  var host=document.getElementById(target), procs=D.timeline;
  if(!procs.length){ host.textContent="No timestamped events."; return; }
  var W=1000,H=260,L=60,B=30,T=10,R=20, tmin=Infinity,tmax=-Infinity,cmax=0;
  procs.forEach(function(p){ p.bins.forEach(function(b){ tmin=Math.min(tmin,b[0]); tmax=Math.max(tmax,b[0]+p.width); cmax=Math.max(cmax,b[1]/p.width); }); });
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"events per process over time"},host);
  var sx=function(t){ return L+(W-L-R)*(t-tmin)/Math.max(tmax-tmin,1); }, sy=function(r){ return H-B-(H-B-T)*r/Math.max(cmax,1e-12); };
  el("line",{x1:L,y1:H-B,x2:W-R,y2:H-B,stroke:"#888"},svg); el("line",{x1:L,y1:T,x2:L,y2:H-B,stroke:"#888"},svg);
  el("text",{x:L,y:H-8},svg).textContent="0 s";
  el("text",{x:W-R,y:H-8,"text-anchor":"end"},svg).textContent=((tmax-tmin)/1e6).toFixed(3)+" s";
  el("text",{x:L-4,y:T+10,"text-anchor":"end"},svg).textContent=(cmax*1e6).toPrecision(3)+"/s";
  var legend=document.getElementById("timeline-legend");
  procs.forEach(function(p,i){
    var c=COLORS[i%COLORS.length];
    p.bins.forEach(function(b){
      var x=sx(b[0]), w=Math.max(sx(b[0]+p.width)-x,1), y=sy(b[1]/p.width);
      var r=el("rect",{"class":"bin",x:x,y:y,width:w,height:H-B-y,fill:c,"fill-opacity":0.55},svg);
      el("title",{},r).textContent=p.label+": "+b[1]+" events";
    });
    var s=document.createElement("span"); s.innerHTML="<i style=\"background:"+c+"\"></i>"; s.appendChild(document.createTextNode(p.label)); legend.appendChild(s);
  });
}
// Steps (steps.hpp): one stacked bar per step, its wall time split by category.
// A row: [label, duration, the categories..., outlier, start, duration, pid, slow].
function stepBars(){
  var S=D.steps; if(!S || !S.rows.length) return;
  var k=2+S.categories.length;
  document.getElementById("steps-section").hidden=false;
  document.getElementById("steps-summary").textContent=S.rows.length+" steps; first step: compile "+(100*S.first_compile_share).toFixed(1)+"% of its wall time. Outliers (! slow, ? fast): "+S.rule+".";
  var rowH=20, labelW=160, W=1000, H=S.rows.length*rowH+10, max=0;
  S.rows.forEach(function(r){ if(r[1]>max) max=r[1]; });
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"time per step"},document.getElementById("by-step"));
  S.rows.forEach(function(r,i){
    var y=5+i*rowH, x=labelW;
    el("text",{x:labelW-6,y:y+14,"text-anchor":"end"},svg).textContent=(r[k]?(r[k+4]?"! ":"? "):"")+r[0];
    for(var c=0;c<S.categories.length;c++){
      var w=max>0?(W-labelW-130)*r[2+c]/max:0; if(w<=0) continue;
      var b=el("rect",{"class":"step-part",x:x,y:y+2,width:w,height:rowH-5,fill:COLORS[c]},svg);
      el("title",{},b).textContent=r[0]+": "+S.categories[c]+" "+fmt(r[2+c]); x+=w;
    }
    el("text",{x:x+5,y:y+14},svg).textContent=fmt(r[1]);
  });
  var legend=document.getElementById("steps-legend");
  S.categories.forEach(function(c,i){ var s=document.createElement("span"); s.innerHTML="<i style=\"background:"+COLORS[i]+"\"></i>"; s.appendChild(document.createTextNode(c)); legend.appendChild(s); });
}
// The roofline (efficiency.hpp): log-log, the bandwidth slope up to the
// ridge, then the compute roof; one dot per op, its area its self time.
function roofline(){
  var R=D.roofline, host=document.getElementById("roofline"), note=document.getElementById("roofline-note");
  var have=R.peak_gflops!==null && R.peak_gbps!==null;
  note.textContent=(have?"Peaks "+R.peak_gflops.toFixed(1)+" GFLOP/s and "+R.peak_gbps.toFixed(1)+" GB/s, measured by 'dftracer-analyze calibrate' ("+R.calibration+").":"No calibration found: run 'dftracer-analyze calibrate' (it writes "+R.calibration+") for the roofs.")+
    (R.without_bytes?" "+R.without_bytes+" op(s) with FLOPs but no bytes are not drawn.":"")+(R.above_peak?" "+R.above_peak:"");
  if(!R.points.length){ host.textContent="No op declared both FLOPs and bytes."; return; }
  var W=1000,H=360,L=70,B=40,T=10,Rm=20, xs=[], ys=[];
  R.points.forEach(function(p){ xs.push(p[1]); ys.push(p[2]); });
  if(have){ ys.push(R.peak_gflops); xs.push(R.peak_gflops/R.peak_gbps); }
  var lx0=Math.floor(Math.log10(Math.min.apply(null,xs)))-0.2, lx1=Math.ceil(Math.log10(Math.max.apply(null,xs)))+0.2;
  var ly0=Math.floor(Math.log10(Math.min.apply(null,ys)))-0.2, ly1=Math.log10(Math.max.apply(null,ys))+0.3;
  var sx=function(v){ return L+(W-L-Rm)*(Math.log10(v)-lx0)/(lx1-lx0); }, sy=function(v){ return H-B-(H-B-T)*(Math.log10(v)-ly0)/(ly1-ly0); };
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"roofline"},host);
  el("line",{x1:L,y1:H-B,x2:W-Rm,y2:H-B,stroke:"#888"},svg); el("line",{x1:L,y1:T,x2:L,y2:H-B,stroke:"#888"},svg);
  for(var e=Math.ceil(lx0);e<=lx1;e++){ el("text",{x:sx(Math.pow(10,e)),y:H-B+15,"text-anchor":"middle"},svg).textContent=Math.pow(10,e)+""; }
  for(var f=Math.ceil(ly0);f<=ly1;f++){ el("text",{x:L-4,y:sy(Math.pow(10,f))+4,"text-anchor":"end"},svg).textContent=Math.pow(10,f)+""; }
  el("text",{x:(L+W)/2,y:H-6,"text-anchor":"middle"},svg).textContent="FLOPs per byte (log)";
  el("text",{x:12,y:T+10},svg).textContent="GFLOP/s";
  if(have){
    var ridge=R.peak_gflops/R.peak_gbps, x0=Math.pow(10,lx0), x1=Math.pow(10,lx1);
    var pts=[[x0,x0*R.peak_gbps],[ridge,R.peak_gflops],[x1,R.peak_gflops]].filter(function(p){ return p[1]>=Math.pow(10,ly0); });
    el("polyline",{"class":"roof",points:pts.map(function(p){ return sx(p[0])+","+sy(p[1]); }).join(" "),fill:"none",stroke:"#c33","stroke-width":2},svg);
    el("text",{x:W-Rm-4,y:sy(R.peak_gflops)-5,"text-anchor":"end"},svg).textContent="peak "+R.peak_gflops.toFixed(1)+" GFLOP/s";
  }
  var smax=0, dots=[]; R.points.forEach(function(p){ smax=Math.max(smax,p[3]); });
  R.points.forEach(function(p,i){
    var c=el("circle",{"class":"op",cx:sx(p[1]),cy:sy(p[2]),r:3+9*Math.sqrt(smax>0?p[3]/smax:0),fill:COLORS[i%COLORS.length],"fill-opacity":0.7},svg);
    el("title",{},c).textContent=p[0]+": "+p[2].toFixed(2)+" GFLOP/s at "+p[1].toFixed(2)+" FLOP/B, "+fmt(p[3])+" self"+(p[4]!==null?", "+(100*p[4]).toFixed(1)+(p[6]?"%! (above":"% of")+" the "+p[5]+" roof"+(p[6]?": the calibration is too low)":""):"");
    dots.push({x:sx(p[1]),y:sy(p[2]),r:+c.getAttribute("r"),text:shortOp(p[0])+(p[6]?" (!)":"")});
  });
  var missed=placeLabels(svg, dots.slice(0,12), {x:L,y:T,w:W-Rm-L,h:H-B-T});
  var rest=missed.map(function(d){ return d.text; }), more=Math.max(R.points.length-12,0);
  document.getElementById("roofline-unlabelled").textContent=rest.length||more?"Not labelled (no room, or past the 12 with the most self time; hover a dot for its name): "+rest.join(", ")+(more?(rest.length?" and ":"")+more+" more":"")+".":"";
}
// An op's name without the capture's "function."/"kernel." prefix and ".default" overload.
function shortOp(n){ return n.replace(/^(function|kernel)\./,"").replace(/\.default$/,""); }
function boxOf(e){ var b=e.getBBox(); return {x:b.x,y:b.y,w:b.width,h:b.height}; }
function overlaps(a,b){ return a.x<b.x+b.w && b.x<a.x+a.w && a.y<b.y+b.h && b.y<a.y+a.h; }
// Labels beside dots ({x,y,r,text}, most important first), each at the first
// of eight places around its dot that stays inside `area` and overlaps no
// text already drawn, no other label and no other dot; a label with no free
// place is left out. Returns the dots left without a label.
function placeLabels(svg, dots, area){
  var taken=[].map.call(svg.querySelectorAll("text"), boxOf), missed=[];
  var circles=[].map.call(svg.querySelectorAll("circle"), boxOf);
  dots.forEach(function(d){
    var t=el("text",{"class":"point-label",x:0,y:0},svg); t.textContent=d.text;
    var b=boxOf(t), g=d.r+2, asc=-b.y, done=false;
    var spots=[[g,-g],[g,g+asc],[-g-b.w,-g],[-g-b.w,g+asc],[-b.w/2,-g-2],[-b.w/2,g+asc+2],[g+2,asc/2],[-g-2-b.w,asc/2]];
    for(var k=0;k<spots.length && !done;k++){
      var r={x:d.x+spots[k][0],y:d.y+spots[k][1]+b.y,w:b.w,h:b.h};
      if(r.x<area.x || r.y<area.y || r.x+r.w>area.x+area.w || r.y+r.h>area.y+area.h) continue;
      if(taken.some(function(o){ return overlaps(r,o); })) continue;
      if(circles.some(function(o){ return overlaps(r,{x:o.x+2,y:o.y+2,w:o.w-4,h:o.h-4}); })) continue;
      t.setAttribute("x",d.x+spots[k][0]); t.setAttribute("y",d.y+spots[k][1]); taken.push(r); done=true;
    }
    if(!done){ svg.removeChild(t); missed.push(d); }
  });
  return missed;
}
// Steps per process over time: one row per process, one box per step (an
// outlier outlined, ! slow, ? fast), on the time axis of the event timeline.
function stepTimeline(){
  var S=D.steps, host=document.getElementById("step-timeline");
  if(!S || !S.rows.length){ host.textContent="No steps found."; return; }
  var k=2+S.categories.length;  // outlier, start, duration, pid, slow
  var pids=[], tmax=0; S.rows.forEach(function(r){ if(pids.indexOf(r[k+3])<0) pids.push(r[k+3]); tmax=Math.max(tmax,r[k+1]+r[k+2]); });
  var L=110,W=1000,Rm=20,rowH=26,H=pids.length*rowH+30;
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"steps per process"},host);
  var sx=function(t){ return L+(W-L-Rm)*t/Math.max(tmax,1); };
  pids.forEach(function(p,i){ el("text",{x:L-6,y:8+i*rowH+15,"text-anchor":"end"},svg).textContent="pid "+p; });
  S.rows.forEach(function(r,i){
    var y=8+pids.indexOf(r[k+3])*rowH, x=sx(r[k+1]), w=Math.max(sx(r[k+1]+r[k+2])-x,1);
    var b=el("rect",{"class":"step-box",x:x,y:y,width:w,height:rowH-6,fill:COLORS[i%COLORS.length],"fill-opacity":0.6,stroke:r[k]?"#c00":"none","stroke-width":2},svg);
    el("title",{},b).textContent=(r[k]?(r[k+4]?"slow outlier ":"fast outlier "):"")+r[0]+": "+fmt(r[k+2])+" from "+fmt(r[k+1]);
  });
  el("text",{x:L,y:H-6},svg).textContent="0 s"; el("text",{x:W-Rm,y:H-6,"text-anchor":"end"},svg).textContent=fmt(tmax);
}
// I/O (io_view.hpp): rows [name, calls, time_us, read_bytes, write_bytes];
// bandwidth: read and write MiB/s per bin, side by side.
function mib(b){ return (b/1048576).toFixed(3)+" MiB"; }
function ioTip(r){ return r[0]+": "+fmt(r[2])+" in "+r[1]+" calls; read "+mib(r[3])+", wrote "+mib(r[4]); }
function ioBandwidth(){
  var B=D.io.bandwidth, host=document.getElementById("io-bandwidth");
  if(!B.bins.length){ host.textContent="No read or write calls."; return; }
  var W=1000,H=220,L=90,Bm=30,T=10,R=20, span=B.bins[B.bins.length-1][0]+B.bin_s, max=0;
  B.bins.forEach(function(b){ max=Math.max(max,b[1],b[2]); });
  var rate=function(bytes){ return bytes/1048576/B.bin_s; };
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"I/O bandwidth over time"},host);
  var sx=function(t){ return L+(W-L-R)*t/span; }, sy=function(v){ return H-Bm-(H-Bm-T)*v/Math.max(rate(max),1e-12); };
  el("line",{x1:L,y1:H-Bm,x2:W-R,y2:H-Bm,stroke:"#888"},svg); el("line",{x1:L,y1:T,x2:L,y2:H-Bm,stroke:"#888"},svg);
  el("text",{x:L,y:H-8},svg).textContent="0 s";
  el("text",{x:W-R,y:H-8,"text-anchor":"end"},svg).textContent=fmt(span*1e6)+" ("+fmt(B.bin_s*1e6)+" bins)";
  // The scale's top left of the axis, where no bar is drawn (inside the plot the tallest bar hid it).
  el("line",{x1:L-3,y1:T,x2:L,y2:T,stroke:"#888"},svg);
  el("text",{"class":"axis-max",x:L-5,y:T+4,"text-anchor":"end"},svg).textContent=rate(max).toFixed(1)+" MiB/s";
  B.bins.forEach(function(b){
    var x=sx(b[0]), w=Math.max((sx(b[0]+B.bin_s)-x)/2,1);
    [[1,"read"],[2,"write"]].forEach(function(k){
      if(!b[k[0]]) return;
      var y=sy(rate(b[k[0]]));
      var r=el("rect",{"class":"io-"+k[1],x:x+(k[0]-1)*w,y:y,width:w,height:H-Bm-y,fill:COLORS[k[0]-1]},svg);
      el("title",{},r).textContent=k[1]+" "+rate(b[k[0]]).toFixed(3)+" MiB/s ("+mib(b[k[0]])+") from "+fmt(b[0]*1e6);
    });
  });
  var legend=document.getElementById("io-bandwidth-legend");
  ["read","write"].forEach(function(n,i){ var s=document.createElement("span"); s.innerHTML="<i style=\"background:"+COLORS[i]+"\"></i>"; s.appendChild(document.createTextNode(n)); legend.appendChild(s); });
}
function badInput(){
  var B=D.bad_input; document.getElementById("bad-input-line").textContent=B.line;
  var t=document.getElementById("bad-input");
  B.counts.forEach(function(c){ var tr=document.createElement("tr"); [c[0],c[1]].forEach(function(v){ var td=document.createElement("td"); td.textContent=v; tr.appendChild(td); }); t.appendChild(tr); });
}
var ul=document.getElementById("answer-lines");
D.answer.forEach(function(l){ var li=document.createElement("li"); li.textContent=l; ul.appendChild(li); });
document.getElementById("overview").textContent=D.events+" complete events, "+fmt(D.traced_us)+" traced (the threads' time inside any event: the self times add up to it), "+fmt(D.total_us)+" summed duration, from "+D.files+" file(s).";
bars("top-ops", D.top_ops, "top model ops and kernels");
bars("by-module", D.by_module, "time by module");
bars("no-module", D.no_module, "time outside any module");
bars("by-category", D.by_category, "compile vs run", function(r){ return r[0]+": "+fmt(r[2])+" of wall time"; });
stepBars();
icicle("module-icicle", D.module_tree);
bars("compile-phases", D.compile_phases, "compile work");
bars("regions", D.regions, "user regions and other events");
roofline();
stepTimeline();
timeline("timeline");
bars("by-phase", D.by_phase, "time by phase");
if(D.io){ document.getElementById("io-section").hidden=false; document.getElementById("io-summary").textContent=D.io.summary;
  document.getElementById("io-runtime").textContent=D.io.runtime;
  if(D.io.by_file.length) bars("io-by-file", D.io.by_file, "I/O time by data file", ioTip);
  else document.getElementById("io-by-file").textContent="No data files: every traced file is the runtime's."; bars("io-by-call", D.io.by_call, "I/O time by call", ioTip);
  bars("io-by-process", D.io.by_process, "I/O time by process", ioTip); ioBandwidth(); }
badInput();
document.body.setAttribute("data-rendered","yes");
})();
</script></body></html>
)HTML";

// Bins as [start_us_relative, count], at most ~200 per process for the page.
std::string timeline_json(ReportConsumer& r) {
  std::string data = "[";
  bool first = true;
  char buf[96];
  for (auto& [pid, tl] : r.timelines_) {
    Timeline t = tl;  // coarsen a copy down to <= 200 bins
    if (!t.bins.empty()) {
      while (static_cast<double>(t.bins.rbegin()->first - t.bins.begin()->first) >= 200) t.coarsen_to(t.shift + 1);
    }
    const int shift = t.shift;
    if (!first) data += ',';
    first = false;
    auto nm = r.process_names_.find(pid);
    std::string label = "pid " + pid + (nm != r.process_names_.end() ? " " + nm->second : "");
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

}  // namespace

ReportResult write_report(const std::vector<std::string>& files, const std::string& out_path, size_t top_n,
                          unsigned threads, const ReadOptions& options, const std::string& calibration_path) {
  refuse_input_as_output(out_path, files);
  // The calibration before the read: a bad --calibration fails fast.
  Calibration cal;
  if (std::string p = find_calibration(files, calibration_path); !p.empty()) cal = read_calibration(p);
  threads = useful_threads(files, threads, options);
  std::vector<std::unique_ptr<ReportConsumer>> cons;
  std::vector<LineConsumer*> ptrs;
  for (unsigned t = 0; t < threads; ++t) {
    cons.push_back(std::make_unique<ReportConsumer>());
    ptrs.push_back(cons.back().get());
  }
  ReportResult res;
  res.stats = read_traces(files, ptrs, options);
  for (unsigned t = 1; t < threads; ++t) cons[0]->merge(*cons[t]);
  ReportConsumer& r = *cons[0];
  Summary s = build_summary(r.groups_, 0);  // resolves the nesting: self times final
  Rollup by_key[kNumReportKeys];
  for (size_t k = 0; k < kNumReportKeys; ++k) by_key[k] = rollup(r.groups_, k);
  const StepReport steps = analyze_steps(files, threads, options);  // its own two reads
  const double origin_us = r.first_ts_us_ != INT64_MAX ? static_cast<double>(r.first_ts_us_) : 0;
  // POSIX/STDIO events (issue #14), aggregated in the same pass (io_view.cpp's
  // IoAccumulator): a line of the answer, and a section of the page when there are some.
  const IoView io = r.io_.finish(res.stats);
  const Rollup ops = names_of_kind(r.groups_, {"op"});  // the model's own work leads
  const auto [modules, no_module] = modules_and_no_module(r.groups_);
  const std::vector<std::string> answer = answer_lines(s, ops, modules, by_key[kCategory], steps, io);
  for (const std::string& l : answer) res.answer += l + "\n";

  // The page's data, one member per section, in the order the page shows them.
  std::string data = "{\"files\":" + std::to_string(files.size()) + ",\"events\":" + std::to_string(s.complete_events);
  data += ",\"total_us\":" + json_num(s.total_us) + ",\"traced_us\":" + json_num(s.traced_us);
  data += ",\"answer\":" + string_array_json(answer);
  data += ",\"top_ops\":" + totals_json(ops, top_n);
  data += ",\"by_module\":" + totals_json(modules, top_n);
  data += ",\"no_module\":" + totals_json(no_module, 0);
  data += ",\"compile_phases\":" + totals_json(names_of_kind(r.groups_, {"compile"}), top_n);
  data += ",\"regions\":" + totals_json(names_of_kind(r.groups_, {"region", "graph", "comm"}), top_n);
  data += ",\"by_category\":" + wall_json(model_run_wall(steps));
  data += ",\"steps\":" + steps_report_json(steps, origin_us);
  std::ostringstream tree_json;  // the module icicle from the same groups
  write_module_tree_json(tree_json, build_module_tree(r.groups_, kModule));
  std::string tree = tree_json.str();
  data += ",\"module_tree\":" + tree.substr(0, tree.size() - 1);  // without its newline
  data += ",\"roofline\":" + roofline_json(by_key[kName], cal, 40);
  data += ",\"by_phase\":" + totals_json(by_key[kPhase], 0);
  if (io.total.ops) data += ",\"io\":" + io_report_json(io, top_n);
  data += ",\"timeline\":" + timeline_json(r);
  data += ",\"bad_input\":" + bad_input_json(res.stats, s.nesting);
  data += "}";
  // The data sits in a <script> element: "</" must not close it early.
  std::string safe;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<') safe += "\\u003c";
    else safe += data[i];
  }
  std::string page = kPage;
  page.replace(page.find("@DATA@"), 6, safe);
  page = with_ranks_section(std::move(page), files, threads, options);  // several ranks: heat map, stragglers
  write_output_file(out_path, page);
  return res;
}

}  // namespace dftracer::analyze
