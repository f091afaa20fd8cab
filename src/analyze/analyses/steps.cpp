#include "steps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string_view>

#include "device_track.hpp"
#include "event_category.hpp"
#include "median.hpp"
#include "step_select.hpp"
#include "summary.hpp"
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

std::string process_key(size_t file, std::string_view pid) { return std::to_string(file) + '\x1f' + std::string(pid); }
}  // namespace

// ---------------------------------------------------------------- pass 2

namespace {

// Self time per (process, step, category): one accumulator each, made up
// front so events only index into them.
class StepAttributor : public LineConsumer {
 public:
  StepAttributor(const std::vector<ProcessSteps>& plan, std::shared_ptr<const RuntimeFiles> runtime)
      : plan_(plan), runtime_(std::move(runtime)) {
    ArgCapture c;
    c.keys[0] = "fhash";  // an I/O call's file: data, or other on a runtime file
    c.size = 1;
    decoder_.capture_args(c);
    for (size_t p = 0; p < plan.size(); ++p) {
      process_index_.emplace(process_key(plan[p].file, plan[p].pid), p);
      first_acc_.push_back(accs_.size());
      for (size_t s = 0; s < plan[p].steps.size(); ++s) {
        for (size_t c = 0; c < kNumStepCategories; ++c)
          new_acc(std::to_string(p) + ':' + std::to_string(s) + ':' + kStepCategories[c]);
      }
    }
    outside_ = accs_.size();
    for (size_t c = 0; c < kNumStepCategories; ++c) new_acc(std::string("outside:") + kStepCategories[c]);
  }

  void begin_piece(size_t file_index) override {
    file_ = file_index;
    nesting_.begin_piece(file_index);
  }
  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st == DecodeStatus::Ok) add_event(ev_);
    return st;
  }

  void add_event(const Event& e) {
    if (!e.is_complete() || !e.has_dur) return;
    if (is_device_event(e)) return;  // GPU time: step_finder.hpp
    const size_t cat = step_category_index(event_category(e, e.extra_args[0], runtime_.get()));
    if (!e.has_ts) {  // cannot be placed nor nested
      *acc(outside_ + cat) = saturating_add(*acc(outside_ + cat), std::max<int64_t>(e.dur_ns, 0));
      return;
    }
    const int64_t end = saturating_add(e.ts_ns, e.dur_ns);
    size_t slot = outside_ + cat;
    if (const ProcessSteps* p = process(e.pid_text)) {
      const size_t s = step_of(*p, e, end);
      if (s != SIZE_MAX) {
        const StepInterval& st = p->steps[s];
        // The step region's own self time is "other", whatever its name says.
        const bool is_region = p->source == "region" && e.name == p->region && e.ts_ns == st.ts && end == st.end;
        slot = first_acc_[proc_] + s * kNumStepCategories + (is_region ? kNumStepCategories - 1 : cat);
      }
    }
    nesting_.add(e.pid_text, e.tid_text, e.ts_ns, e.dur_ns, acc(slot), &accs_[slot]->first);
  }

  void merge(StepAttributor& o) {
    nesting_.finish();
    o.nesting_.finish();
    nesting_.merge(o.nesting_);
    for (size_t i = 0; i < accs_.size(); ++i) accs_[i]->second = saturating_add(accs_[i]->second, o.accs_[i]->second);
  }

  void resolve() {
    nesting_.finish();
    nesting_.resolve([this](const std::string& key) -> int64_t* {
      auto it = groups_.find(key);
      return it == groups_.end() ? nullptr : &it->second;
    });
  }

  int64_t value(size_t slot) const { return accs_[slot]->second; }
  size_t first_acc(size_t process) const { return first_acc_[process]; }
  size_t outside() const { return outside_; }
  const NestingStats& nesting() const { return nesting_.stats(); }

 private:
  using Group = std::unordered_map<std::string, int64_t>::value_type;
  void new_acc(std::string key) { accs_.push_back(&*groups_.emplace(std::move(key), 0).first); }
  int64_t* acc(size_t slot) { return &accs_[slot]->second; }

  const ProcessSteps* process(std::string_view pid) {
    if (cached_file_ != file_ || cached_pid_ != pid) {
      cached_file_ = file_;
      cached_pid_.assign(pid.data(), pid.size());
      auto it = process_index_.find(process_key(file_, pid));
      cached_proc_ = it == process_index_.end() ? SIZE_MAX : it->second;
    }
    proc_ = cached_proc_;
    return proc_ == SIZE_MAX ? nullptr : &plan_[proc_];
  }

  // The latest-starting step that holds the event, SIZE_MAX if none. Not its
  // `step` arg: the arg is sticky (Dynamo's tags stay on the events after the
  // loop: a final barrier, an evaluation), so only the time places an event.
  size_t step_of(const ProcessSteps& p, const Event& e, int64_t end) {
    auto it = std::upper_bound(p.steps.begin(), p.steps.end(), e.ts_ns,
                               [](int64_t ts, const StepInterval& s) { return ts < s.ts; });
    for (int tries = 0; it != p.steps.begin() && tries < 4; ++tries) {
      --it;
      if (end <= it->end) return static_cast<size_t>(it - p.steps.begin());
    }
    return SIZE_MAX;
  }

  const std::vector<ProcessSteps>& plan_;
  std::shared_ptr<const RuntimeFiles> runtime_;
  std::unordered_map<std::string, size_t> process_index_;
  std::unordered_map<std::string, int64_t> groups_;  // nodes never move: the tracker points into them
  std::vector<Group*> accs_;
  std::vector<size_t> first_acc_;
  size_t outside_ = 0;
  EventDecoder decoder_;
  Event ev_;
  SelfTimeTracker nesting_;
  size_t file_ = 0, cached_file_ = SIZE_MAX, cached_proc_ = SIZE_MAX, proc_ = SIZE_MAX;
  std::string cached_pid_;
};


}  // namespace

std::vector<bool> step_outliers(const std::vector<double>& d) {
  std::vector<bool> out;
  for (StepOutlier k : step_outlier_kinds(d)) out.push_back(k != StepOutlier::none);
  return out;
}

std::vector<StepOutlier> step_outlier_kinds(const std::vector<double>& d) {
  std::vector<StepOutlier> out(d.size(), StepOutlier::none);
  if (d.size() < 3) return out;  // no "typical" step to compare with
  const double med = median_of(d);
  std::vector<double> dev;
  for (double x : d) dev.push_back(std::fabs(x - med));
  // MAD alone flags jitter when steps are near-identical (MAD ~ 0): a step
  // must also be half again as long as the median, or at most half of it.
  const double margin = std::max(3 * median_of(dev), 0.5 * med);
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] > med + margin) out[i] = StepOutlier::slow;
    else if (d[i] < med - margin) out[i] = StepOutlier::fast;  // a skipped batch, a cut-short step
  }
  return out;
}

StepReport analyze_steps(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options) {
  threads = useful_threads(files, threads, options);
  StepReport r;
  {
    StepPlan plan = find_steps(files, threads, options);  // its stats are pass 2's: the same input
    r.processes = std::move(plan.processes);
    r.without_steps = std::move(plan.without_steps);
    r.capped_regions = plan.capped;
    r.runtime_files = std::move(plan.runtime_files);
  }
  std::vector<std::unique_ptr<StepAttributor>> attrs;
  std::vector<LineConsumer*> consumers;
  for (unsigned t = 0; t < threads; ++t) {
    attrs.push_back(std::make_unique<StepAttributor>(r.processes, r.runtime_files));
    consumers.push_back(attrs.back().get());
  }
  r.stats = read_traces(files, consumers, options);
  for (unsigned t = 1; t < threads; ++t) attrs[0]->merge(*attrs[t]);
  StepAttributor& a = *attrs[0];
  a.resolve();
  r.nesting = a.nesting();
  for (size_t c = 0; c < kNumStepCategories; ++c) {
    r.outside_us[c] = ns_to_us(a.value(a.outside() + c));
    r.outside_traced_us += r.outside_us[c];
  }
  for (size_t p = 0; p < r.processes.size(); ++p) {
    const ProcessSteps& ps = r.processes[p];
    std::vector<double> durations;
    const size_t first_row = r.rows.size();
    for (size_t s = 0; s < ps.steps.size(); ++s) {
      StepRow row;
      row.pid = ps.pid;
      row.step = s;
      row.label = ps.steps[s].label;
      row.end_estimated = ps.steps[s].end_estimated;
      row.start_us = ns_to_us(ps.steps[s].ts);
      row.duration_us = ns_to_us(saturating_sub(ps.steps[s].end, ps.steps[s].ts));
      int64_t traced = 0;
      for (size_t c = 0; c < kNumStepCategories; ++c) {
        const int64_t v = a.value(a.first_acc(p) + s * kNumStepCategories + c);
        row.by_category_us[c] = ns_to_us(v);
        traced = saturating_add(traced, v);
      }
      row.traced_us = ns_to_us(traced);
      const WallParts w = ps.wall.partition(ps.steps[s].ts, ps.steps[s].end);
      for (size_t c = 0; c < kNumStepCategories; ++c) row.wall_us[c] = ns_to_us(w.by_category[c]);
      row.untraced_us = ns_to_us(w.untraced);
      row.compile_share = row.duration_us > 0 ? row.wall_us[0] / row.duration_us : 0;
      durations.push_back(row.duration_us);
      r.rows.push_back(std::move(row));
    }
    std::vector<StepOutlier> out = step_outlier_kinds(durations);
    for (size_t s = 0; s < out.size(); ++s) {
      r.rows[first_row + s].outlier = out[s] != StepOutlier::none;
      r.rows[first_row + s].slow = out[s] == StepOutlier::slow;
    }
  }
  for (const auto* group : {&r.processes, &r.without_steps})
    for (const ProcessSteps& ps : *group) {
      ProcessRun run;
      run.pid = ps.pid;
      run.source = ps.source;
      if (ps.wall.first() < ps.wall.last()) {
        const WallParts w = ps.wall.partition(ps.wall.first(), ps.wall.last());
        run.span_us = ns_to_us(ps.wall.last() - ps.wall.first());
        for (size_t c = 0; c < kNumStepCategories; ++c) run.wall_us[c] = ns_to_us(w.by_category[c]);
        run.untraced_us = ns_to_us(w.untraced);
        int64_t longest = 0;
        ps.wall.gc_in(ps.wall.first(), ps.wall.last(), &run.gc_collections, &longest);
        run.gc_longest_us = ns_to_us(longest);
      }
      r.runs.push_back(std::move(run));
    }
  return r;
}

RunWall model_run_wall(const StepReport& r) {
  RunWall w;
  for (const ProcessRun& p : r.runs) {
    if (p.source == "helper") continue;
    ++w.processes;
    w.span_us += p.span_us;
    w.untraced_us += p.untraced_us;
    for (size_t c = 0; c < kNumStepCategories; ++c) w.wall_us[c] += p.wall_us[c];
    w.gc_collections += p.gc_collections;
    w.gc_longest_us = std::max(w.gc_longest_us, p.gc_longest_us);
  }
  return w;
}

// ---------------------------------------------------------------- outputs

namespace {
std::string ms(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us / 1e3);
  return buf;
}
std::string pct(double share) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}
std::string source_text(const ProcessSteps& p) {
  if (p.source == "region") return "the repeated region '" + p.region + "' of the main thread";
  if (p.source == "marks") return "the step marks of Dynamo/dft_ai update(step=...)";
  if (p.source == "optimizer") return "the optimizer steps '" + p.region + "' of the main thread (each ends a step)";
  if (p.source == "inference")
    return "the repeated inference work of the main thread, from '" + p.region + "' (one step per iteration)";
  return "the step arg's first event per value";
}
}  // namespace

void write_steps_table(std::ostream& os, const StepReport& r) {
  if (r.processes.empty()) {
    os << "no steps found: no step mark or step arg, no optimizer step, and no user region repeats on a main thread\n";
  }
  size_t row = 0;
  for (const ProcessSteps& p : r.processes) {
    os << "pid " << p.pid << ": " << p.steps.size() << " steps, from " << source_text(p) << "\n";
    std::vector<std::vector<std::string>> cells;
    cells.push_back({"step", "label", "duration_ms"});
    for (const char* c : kStepCategories) cells.back().push_back(c);
    for (const char* c : {"untraced", "compile%", "thread_ms", "outlier"}) cells.back().push_back(c);
    for (size_t s = 0; s < p.steps.size(); ++s, ++row) {
      const StepRow& x = r.rows[row];
      std::vector<std::string> c = {std::to_string(x.step), x.label, ms(x.duration_us)};
      for (double v : x.wall_us) c.push_back(ms(v));
      c.push_back(ms(x.untraced_us));
      c.push_back(pct(x.compile_share));
      c.push_back(ms(x.traced_us));
      c.push_back(x.outlier ? (x.slow ? "slow" : "fast") : "");
      cells.push_back(std::move(c));
    }
    write_aligned(os, cells, 2);
    const StepRow& last = r.rows[row - 1];
    if (last.end_estimated)
      os << "step " << last.step << " ends by estimate (no region bounds the steps): after as many top-level "
         << "events as the other steps had, plus their usual untraced tail\n";
    const StepRow& first = r.rows[row - p.steps.size()];
    os << "first step: compile " << pct(first.compile_share) << " of its wall time (" << ms(first.wall_us[0])
       << " ms)\n";
  }
  size_t helpers = 0;
  for (const ProcessSteps& p : r.without_steps) helpers += p.source == "helper";
  if (helpers)
    os << helpers << " process" << (helpers > 1 ? "es" : "")
       << " without model work beside one with it (data-loader workers): no steps\n";
  os << "columns compile..untraced: the step's wall time split by what any thread of the process was doing "
        "(priority compile > gc > checkpoint > optimizer > backward > forward > comm > data > other; untraced: no event open); "
        "thread_ms: the self time of all its threads' events inside it (threads add up)\n";
  os << "outlier: " << kStepOutlierRule << "\n";
  os << "outside every step: " << ms(r.outside_traced_us) << " ms of thread time\n";
}

namespace {
std::string json_categories(const double* us, const char* suffix) {
  std::string o;
  for (size_t c = 0; c < kNumStepCategories; ++c)
    o += std::string(",\"") + kStepCategories[c] + suffix + "\":" + json_num(us[c]);
  return o;
}
}  // namespace

void write_steps_json(std::ostream& os, const StepReport& r) {
  std::string o = "{\"outlier_rule\":";
  append_json_string(o, kStepOutlierRule);
  o += ",\"processes\":[";
  size_t n = 0;
  for (const auto* group : {&r.processes, &r.without_steps})
    for (const ProcessSteps& p : *group) {
      o += n++ ? ",{\"pid\":" : "{\"pid\":";
      append_json_string(o, p.pid);
      o += ",\"file_index\":" + std::to_string(p.file) + ",\"source\":";
      append_json_string(o, p.source);
      o += ",\"region\":";
      append_json_string(o, p.region);
      o += ",\"steps\":" + std::to_string(p.steps.size()) +
           ",\"model_work\":" + (p.model_work ? "true" : "false") + "}";
    }
  o += "],\"runs\":[";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const ProcessRun& x = r.runs[i];
    o += i ? ",{\"pid\":" : "{\"pid\":";
    append_json_string(o, x.pid);
    o += ",\"source\":";
    append_json_string(o, x.source);
    o += ",\"span_us\":" + json_num(x.span_us) + json_categories(x.wall_us, "_us") +
         ",\"untraced_us\":" + json_num(x.untraced_us) + ",\"gc_collections\":" + std::to_string(x.gc_collections) +
         ",\"gc_longest_us\":" + json_num(x.gc_longest_us) + "}";
  }
  o += "],\"first_step_compile_share\":" +
       (r.rows.empty() ? std::string("null") : json_num(r.rows[0].compile_share));
  o += ",\"outside\":{\"traced_us\":" + json_num(r.outside_traced_us) + json_categories(r.outside_us, "_us") + "}";
  o += ",\"nesting\":{\"approximated\":" + std::to_string(r.nesting.approximated) +
       ",\"folded\":" + std::to_string(r.nesting.folded) + "}";
  o += ",\"capped_regions\":" + std::to_string(r.capped_regions);
  o += ",\"events\":" + std::to_string(r.stats.events) + ",\"steps\":[";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const StepRow& x = r.rows[i];
    o += i ? ",\n{\"pid\":" : "\n{\"pid\":";
    append_json_string(o, x.pid);
    o += ",\"step\":" + std::to_string(x.step) + ",\"label\":";
    append_json_string(o, x.label);
    o += ",\"start_us\":" + json_num(x.start_us) + ",\"duration_us\":" + json_num(x.duration_us) +
         json_categories(x.wall_us, "_us") + ",\"untraced_us\":" + json_num(x.untraced_us) +
         ",\"traced_us\":" + json_num(x.traced_us) + json_categories(x.by_category_us, "_thread_us") +
         ",\"compile_share\":" + json_num(x.compile_share) +
         ",\"outlier\":" + (x.outlier ? "true" : "false") +
         ",\"outlier_kind\":" + (x.outlier ? (x.slow ? "\"slow\"" : "\"fast\"") : "null") +
         ",\"end_estimated\":" + (x.end_estimated ? "true" : "false") + "}";
  }
  o += "]}\n";
  os << o;
}

void write_steps_csv(std::ostream& os, const StepReport& r) {
  std::string o = "pid,step,label,start_us,duration_us";
  for (const char* c : kStepCategories) o += std::string(",") + c + "_us";
  o += ",untraced_us,traced_us";
  for (const char* c : kStepCategories) o += std::string(",") + c + "_thread_us";
  o += ",compile_share,outlier,outlier_kind\n";
  for (const StepRow& x : r.rows) {
    o += csv_field(x.pid) + "," + std::to_string(x.step) + "," + csv_field(x.label) + "," +
         json_num(x.start_us) + "," + json_num(x.duration_us);
    for (double v : x.wall_us) o += "," + json_num(v);
    o += "," + json_num(x.untraced_us) + "," + json_num(x.traced_us);
    for (double v : x.by_category_us) o += "," + json_num(v);
    o += "," + json_num(x.compile_share) + (x.outlier ? (x.slow ? ",true,slow\n" : ",true,fast\n") : ",false,\n");
  }
  os << o;
}

}  // namespace dftracer::analyze
