#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "event_decoder.hpp"
#include "io_view.hpp"
#include "text_format.hpp"
#include "module_tree.hpp"
#include "output_file.hpp"
#include "report_ranks.hpp"
#include "steps.hpp"
#include "summary.hpp"  // append_json_string
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

// One bar: the events of a name, module or phase, their self and total time.
struct Totals {
  uint64_t count = 0;
  double self_us = 0, total_us = 0;
};

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

// The bars come from the summary model (self time, summary.hpp) grouped by
// name, module and phase at once, rolled up per key afterwards.
const char* kReportKeys = "name,module,phase";

class ReportConsumer : public LineConsumer {
 public:
  void begin_piece(size_t file_index) override { groups_.begin_piece(file_index); }
  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st != DecodeStatus::Ok) return st;
    groups_.add_event(ev_);
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
    for (auto& [pid, tl] : o.timelines_) timelines_[pid].merge(tl);
    for (auto& [pid, n] : o.process_names_) process_names_.emplace(pid, n);
    first_ts_us_ = std::min(first_ts_us_, o.first_ts_us_);
  }

  SummaryAggregator groups_{parse_group_keys(kReportKeys)};
  std::map<std::string, Timeline> timelines_;
  std::map<std::string, std::string> process_names_;
  int64_t first_ts_us_ = INT64_MAX;  // INT64_MAX: no event had a ts

 private:
  EventDecoder decoder_;
  Event ev_;
};

// JSON array of [label, count, self_us, total_us] sorted by self time, at most `top` (0 = all).
std::string totals_json(const std::unordered_map<std::string, Totals>& m, size_t top) {
  std::vector<std::pair<std::string, Totals>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) {
    return a.second.self_us != b.second.self_us ? a.second.self_us > b.second.self_us : a.first < b.first;
  });
  if (top && v.size() > top) v.resize(top);
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) o += ',';
    o += '[';
    append_json_string(o, v[i].first);
    char buf[96];
    std::snprintf(buf, sizeof buf, ",%llu,%.3f,%.3f]", static_cast<unsigned long long>(v[i].second.count),
                  v[i].second.self_us, v[i].second.total_us);
    o += buf;
  }
  return o + "]";
}

// {"rows": [[label, traced_us, compile_us..other_us, outlier]], "categories", "rule", "first_compile_share"}
std::string steps_report_json(const StepReport& st) {
  std::string o = "{\"categories\":[";
  for (size_t c = 0; c < kNumStepCategories; ++c) o += std::string(c ? ",\"" : "\"") + kStepCategories[c] + "\"";
  o += "],\"rule\":";
  append_json_string(o, kStepOutlierRule);
  o += ",\"first_compile_share\":" + json_num(st.rows.empty() ? 0 : st.rows[0].compile_share) + ",\"rows\":[";
  for (size_t i = 0; i < st.rows.size(); ++i) {
    const StepRow& x = st.rows[i];
    o += i ? ",[" : "[";
    append_json_string(o, (st.processes.size() > 1 ? "pid " + x.pid + " " : "") + "step " + std::to_string(x.step));
    o += "," + json_num(x.traced_us);
    for (double v : x.by_category_us) o += "," + json_num(v);
    o += x.outlier ? ",true]" : ",false]";
  }
  return o + "]}";
}

const char* kPage = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>dftracer-analyze report</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
.note{color:#666;font-size:13px}
svg.chart{display:block;border:1px solid #ddd;background:#fcfcfc}
svg.chart text{font-size:11px;fill:#333}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
</style></head><body>
<h1>Trace report</h1>
<p class="note" id="overview"></p>
<h2>Top operations by self time</h2><div id="top-ops"></div>
<div id="steps-section" hidden><h2>Per step: compile / forward / backward / optimizer / data / other (self time)</h2>
<p class="note" id="steps-summary"></p><div id="by-step"></div><div class="legend" id="steps-legend"></div></div>
<h2>Self time by module</h2><div id="by-module"></div>
<h2>Module tree (total time; width = a module's total, below it its children)</h2><div id="module-icicle"></div>
<h2>Forward / backward / inference (self time)</h2><div id="by-phase"></div>
<h2>Events per process over time</h2><div id="timeline"></div><div class="legend" id="timeline-legend"></div>
<div id="io-section" hidden><h2>I/O time by file</h2><p class="note" id="io-summary"></p><div id="io-by-file"></div>
<h2>I/O time by call</h2><div id="io-by-call"></div></div>
<script id="report-data" type="application/json">@DATA@</script>
<script>
(function(){
"use strict";
var D = JSON.parse(document.getElementById("report-data").textContent);
var NS = "http://www.w3.org/2000/svg";
var COLORS = ["#4e79a7","#f28e2b","#e15759","#76b7b2","#59a14f","#edc948","#b07aa1","#ff9da7","#9c755f","#bab0ac"];
function el(name, attrs, parent){ var e=document.createElementNS(NS,name); for(var k in attrs) e.setAttribute(k,attrs[k]); if(parent) parent.appendChild(e); return e; }
function fmt(us){ if(us>=1e6) return (us/1e6).toFixed(3)+" s"; if(us>=1e3) return (us/1e3).toFixed(3)+" ms"; return us.toFixed(3)+" us"; }
function bars(target, rows, title){
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
    el("title",{},b).textContent=r[0]+": "+fmt(r[2])+" self, "+fmt(r[3])+" total, in "+r[1]+" events";
    el("text",{x:labelW+Math.max(w,1)+5,y:y+14},svg).textContent=fmt(r[2])+" ("+r[1]+")";
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
// Steps (steps.hpp): one stacked bar per step, its traced time split by category.
function stepBars(){
  var S=D.steps; if(!S || !S.rows.length) return;
  document.getElementById("steps-section").hidden=false;
  document.getElementById("steps-summary").textContent=S.rows.length+" steps; first step: compile "+(100*S.first_compile_share).toFixed(1)+"% of its traced time. Outlier (!): "+S.rule+".";
  var rowH=20, labelW=160, W=1000, H=S.rows.length*rowH+10, max=0;
  S.rows.forEach(function(r){ if(r[1]>max) max=r[1]; });
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"time per step"},document.getElementById("by-step"));
  S.rows.forEach(function(r,i){
    var y=5+i*rowH, x=labelW;
    el("text",{x:labelW-6,y:y+14,"text-anchor":"end"},svg).textContent=(r[8]?"! ":"")+r[0];
    for(var c=0;c<S.categories.length;c++){
      var w=max>0?(W-labelW-130)*r[2+c]/max:0; if(w<=0) continue;
      var b=el("rect",{"class":"step-part",x:x,y:y+2,width:w,height:rowH-5,fill:COLORS[c]},svg);
      el("title",{},b).textContent=r[0]+": "+S.categories[c]+" "+fmt(r[2+c]); x+=w;
    }
    el("text",{x:x+5,y:y+14},svg).textContent=fmt(r[1])+" traced";
  });
  var legend=document.getElementById("steps-legend");
  S.categories.forEach(function(c,i){ var s=document.createElement("span"); s.innerHTML="<i style=\"background:"+COLORS[i]+"\"></i>"; s.appendChild(document.createTextNode(c)); legend.appendChild(s); });
}
stepBars();
document.getElementById("overview").textContent=D.events+" complete events, "+fmt(D.traced_us)+" traced (the threads' time inside any event: the self times add up to it), "+fmt(D.total_us)+" summed duration, from "+D.files+" file(s).";
bars("top-ops", D.top_ops, "top operations");
bars("by-module", D.by_module, "time by module");
bars("by-phase", D.by_phase, "time by phase");
icicle("module-icicle", D.module_tree);
timeline("timeline");
if(D.io){ document.getElementById("io-section").hidden=false; document.getElementById("io-summary").textContent=D.io.summary;
  bars("io-by-file", D.io.by_file, "I/O time by file"); bars("io-by-call", D.io.by_call, "I/O time by call"); }
document.body.setAttribute("data-rendered","yes");
})();
</script></body></html>
)HTML";

}  // namespace

ReportResult write_report(const std::vector<std::string>& files, const std::string& out_path, size_t top_n,
                          unsigned threads, const ReadOptions& options) {
  refuse_input_as_output(out_path, files);
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
  Summary s = build_summary(r.groups_, 0);
  // The module icicle from the same groups (key 1 of kReportKeys is module).
  std::ostringstream tree_json;
  write_module_tree_json(tree_json, build_module_tree(r.groups_, 1));
  std::unordered_map<std::string, Totals> by_key[3];  // name, module, phase
  for (const SummaryRow& row : s.rows) {
    for (size_t k = 0; k < 3; ++k) {
      Totals& t = by_key[k][row.key[k]];
      t.count += row.count;
      t.self_us += row.self_us;
      t.total_us += row.total_us;
    }
  }
  std::string data = "{\"files\":" + std::to_string(files.size()) + ",\"events\":" + std::to_string(s.complete_events);
  char buf[96];
  std::snprintf(buf, sizeof buf, ",\"total_us\":%.3f,\"traced_us\":%.3f", s.total_us, s.traced_us);
  data += buf;
  data += ",\"top_ops\":" + totals_json(by_key[0], top_n);
  data += ",\"by_module\":" + totals_json(by_key[1], 30);
  data += ",\"by_phase\":" + totals_json(by_key[2], 0);
  data += ",\"steps\":" + steps_report_json(analyze_steps(files, threads, options));  // its own two reads
  std::string tree = tree_json.str();
  data += ",\"module_tree\":" + tree.substr(0, tree.size() - 1);  // without its newline
  // POSIX/STDIO events (issue #14): their own read of the inputs (io_view.cpp);
  // the page shows the section only when there are some.
  IoView io = io_view(files, IoOptions{}, threads, options);
  if (io.total.ops) data += ",\"io\":" + io_report_json(io, top_n);
  data += ",\"timeline\":[";
  // Bins as [start_us_relative, count], at most ~200 per process for the page.
  bool first = true;
  for (auto& [pid, tl] : r.timelines_) {
    int shift = tl.shift;
    Timeline t = tl;  // coarsen a copy down to <= 200 bins
    if (!t.bins.empty()) {
      while (static_cast<double>(t.bins.rbegin()->first - t.bins.begin()->first) >= 200) t.coarsen_to(t.shift + 1);
    }
    shift = t.shift;
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
  data += "]}";
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
