#include "steps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string_view>

#include "event_category.hpp"
#include "summary.hpp"
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {
// Past this many top-level events on one main thread, later ones are not kept
// (memory bound; a training loop has a few per step).
constexpr size_t kMaxTopLevel = size_t{1} << 20;
// The same for each other thread of a process without a tid == pid thread:
// the first event of such a thread is its top-level event with the least
// start, which the antichain always keeps, so the cap only trims the tail.
constexpr size_t kMaxTopLevelOther = size_t{1} << 16;

size_t category_index(std::string_view cat) {
  for (size_t i = 0; i < kNumStepCategories; ++i)
    if (cat == kStepCategories[i]) return i;
  return kNumStepCategories - 1;  // "other"
}

std::string process_key(size_t file, std::string_view pid) { return std::to_string(file) + '\x1f' + std::string(pid); }
}  // namespace

// ---------------------------------------------------------------- pass 1

StepFinder::StepFinder() = default;

DecodeStatus StepFinder::consume(std::string_view line, size_t cap) {
  DecodeStatus st = decoder_.decode(line, cap, ev_);
  if (st == DecodeStatus::Ok) add_event(file_, ev_);
  return st;
}

void StepFinder::add_event(size_t file, const Event& e) {
  if (!e.is_complete() || !e.has_dur || !e.has_ts) return;
  // An I/O call is never a step, nor bounds one: a DataLoader worker that only
  // reads, or a loop saving files outside any region, would otherwise have its
  // most-timed repeated call (fread, write) taken for the step region. I/O
  // events are still attributed to the steps they fall in (pass 2).
  if (is_io_event(e)) return;
  const int64_t end = saturating_add(e.ts_ns, e.dur_ns);
  const bool has_step = !e.step.empty();
  const bool main_thread = e.tid_text == e.pid_text;
  // Most events belong to the process of the event before: found without a key.
  if (!last_ || file != last_file_ || e.pid_text != last_pid_) {
    last_ = &processes_[{file, std::string(e.pid_text)}];
    last_file_ = file;
    last_pid_.assign(e.pid_text);
  }
  Process& p = *last_;
  if (!has_step && !main_thread && !p.main.empty()) return;
  if (has_step) {
    auto [it, fresh] = p.by_arg.try_emplace(std::string(e.step));
    StepInterval& s = it->second;
    if (fresh) {
      s = {e.ts_ns, end, std::string(e.step)};
    } else {
      s.ts = std::min(s.ts, e.ts_ns);
      s.end = std::max(s.end, end);
    }
  }
  if (main_thread) {
    add_top(p.main, e.ts_ns, end, e.name, kMaxTopLevel);
    p.others.clear();  // not needed once the tid == pid thread is known
  } else if (p.main.empty()) {
    add_top(p.others[std::string(e.tid_text)], e.ts_ns, end, e.name, kMaxTopLevelOther);
  }
}

const StepFinder::TopLevel& StepFinder::main_thread(const Process& p) {
  static const TopLevel kNone;
  if (!p.main.empty()) return p.main;
  const TopLevel* best = &kNone;
  for (const auto& [tid, top] : p.others)  // by tid: ties go to the smallest
    if (!top.empty() && (best->empty() || top.begin()->first < best->begin()->first)) best = &top;
  return *best;
}

// Keeps the main thread's events that no other of its events contains: the
// set stays an antichain under containment, so on a well-nested thread the
// only possible container of a new event is the last one starting at or
// before it. Equal intervals are both kept (their order is not known across
// pieces); the step region is then still found by its name.
void StepFinder::add_top(TopLevel& top, int64_t ts, int64_t end, std::string_view name, size_t cap) {
  auto first = top.lower_bound(ts);
  for (auto it = first; it != top.end() && it->first == ts; ++it)
    if (it->second.end > end) return;  // inside a top-level event starting with it
  if (first != top.begin() && std::prev(first)->second.end >= end) return;  // inside the last earlier one
  for (auto it = top.lower_bound(ts); it != top.end() && it->first <= end;) {
    const bool equal = it->first == ts && it->second.end == end;
    if (!equal && it->second.end <= end) it = top.erase(it);  // now known not to be top-level
    else ++it;
  }
  if (top.size() < cap) top.emplace(ts, Top{end, std::string(name)});
}

void StepFinder::merge(StepFinder& o) {
  o.last_ = nullptr;
  for (auto& [key, q] : o.processes_) {
    Process& p = processes_[key];
    for (auto& [v, s] : q.by_arg) {
      auto [it, fresh] = p.by_arg.try_emplace(v, s);
      if (!fresh) {
        it->second.ts = std::min(it->second.ts, s.ts);
        it->second.end = std::max(it->second.end, s.end);
      }
    }
    for (auto& [ts, t] : q.main) add_top(p.main, ts, t.end, t.name, kMaxTopLevel);
    if (!p.main.empty()) {
      p.others.clear();
    } else {
      for (auto& [tid, top] : q.others)
        for (auto& [ts, t] : top) add_top(p.others[tid], ts, t.end, t.name, kMaxTopLevelOther);
    }
  }
  o.processes_.clear();
}

std::vector<ProcessSteps> StepFinder::plan() const {
  std::vector<ProcessSteps> out;
  for (const auto& [key, p] : processes_) {
    ProcessSteps ps;
    ps.file = key.first;
    ps.pid = key.second;
    // The repeated top-level region: the name seen at least twice with the
    // most time (so a data-loader call per step does not win over the step).
    std::map<std::string_view, std::pair<size_t, int64_t>> names;
    const TopLevel& top = main_thread(p);
    for (const auto& [ts, t] : top) {
      auto& n = names[t.name];
      ++n.first;
      n.second = saturating_add(n.second, t.end - ts);
    }
    std::string_view best;
    int64_t best_time = -1;
    for (const auto& [name, n] : names)
      if (n.first >= 2 && n.second > best_time) {
        best = name;
        best_time = n.second;
      }
    if (best_time >= 0) {
      // The region bounds the steps exactly; a step arg only names them (the
      // arg is sticky: Dynamo's tags stay on events after the loop, so its
      // intervals can run past the step).
      ps.source = "region";
      ps.region = std::string(best);
      for (const auto& [ts, t] : top) {
        if (t.name != best) continue;
        StepInterval s{ts, t.end, t.name};
        int64_t first = INT64_MAX;
        for (const auto& [v, a] : p.by_arg)
          if (a.ts >= ts && a.ts <= t.end && a.ts < first) {
            first = a.ts;
            s.label = v;
          }
        ps.steps.push_back(std::move(s));
      }
    } else if (!p.by_arg.empty()) {
      ps.source = "args.step";
      for (const auto& [v, s] : p.by_arg) ps.steps.push_back(s);
    } else {
      continue;
    }
    std::sort(ps.steps.begin(), ps.steps.end(), [](const StepInterval& a, const StepInterval& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.label < b.label;
    });
    out.push_back(std::move(ps));
  }
  return out;
}

// ---------------------------------------------------------------- pass 2

namespace {

// Self time per (process, step, category): one accumulator each, made up
// front so events only index into them.
class StepAttributor : public LineConsumer {
 public:
  explicit StepAttributor(const std::vector<ProcessSteps>& plan) : plan_(plan) {
    for (size_t p = 0; p < plan.size(); ++p) {
      process_index_.emplace(process_key(plan[p].file, plan[p].pid), p);
      first_acc_.push_back(accs_.size());
      for (size_t s = 0; s < plan[p].steps.size(); ++s) {
        if (plan[p].source == "args.step") label_index_[p].emplace(plan[p].steps[s].label, s);
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
    const size_t cat = category_index(event_category(e));
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

  // The step an event lies inside: its own `step` arg's where steps come from
  // args, else the latest-starting step that contains it; SIZE_MAX if none.
  size_t step_of(const ProcessSteps& p, const Event& e, int64_t end) {
    if (!e.step.empty()) {
      auto& labels = label_index_[proc_];
      auto it = labels.find(std::string(e.step));
      if (it != labels.end()) return it->second;
    }
    auto it = std::upper_bound(p.steps.begin(), p.steps.end(), e.ts_ns,
                               [](int64_t ts, const StepInterval& s) { return ts < s.ts; });
    for (int tries = 0; it != p.steps.begin() && tries < 4; ++tries) {
      --it;
      if (end <= it->end) return static_cast<size_t>(it - p.steps.begin());
    }
    return SIZE_MAX;
  }

  const std::vector<ProcessSteps>& plan_;
  std::unordered_map<std::string, size_t> process_index_;
  std::unordered_map<size_t, std::unordered_map<std::string, size_t>> label_index_;
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

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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
    std::vector<std::unique_ptr<StepFinder>> finders;
    std::vector<LineConsumer*> consumers;
    for (unsigned t = 0; t < threads; ++t) {
      finders.push_back(std::make_unique<StepFinder>());
      consumers.push_back(finders.back().get());
    }
    read_traces(files, consumers, options);  // its stats are pass 2's: the same input
    for (unsigned t = 1; t < threads; ++t) finders[0]->merge(*finders[t]);
    r.processes = finders[0]->plan();
  }
  std::vector<std::unique_ptr<StepAttributor>> attrs;
  std::vector<LineConsumer*> consumers;
  for (unsigned t = 0; t < threads; ++t) {
    attrs.push_back(std::make_unique<StepAttributor>(r.processes));
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
      row.start_us = ns_to_us(ps.steps[s].ts);
      row.duration_us = ns_to_us(saturating_sub(ps.steps[s].end, ps.steps[s].ts));
      int64_t traced = 0;
      for (size_t c = 0; c < kNumStepCategories; ++c) {
        const int64_t v = a.value(a.first_acc(p) + s * kNumStepCategories + c);
        row.by_category_us[c] = ns_to_us(v);
        traced = saturating_add(traced, v);
      }
      row.traced_us = ns_to_us(traced);
      row.compile_share = traced > 0 ? row.by_category_us[0] / row.traced_us : 0;
      durations.push_back(row.duration_us);
      r.rows.push_back(std::move(row));
    }
    std::vector<StepOutlier> out = step_outlier_kinds(durations);
    for (size_t s = 0; s < out.size(); ++s) {
      r.rows[first_row + s].outlier = out[s] != StepOutlier::none;
      r.rows[first_row + s].slow = out[s] == StepOutlier::slow;
    }
  }
  return r;
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
  return p.source == "region" ? "the repeated top-level region '" + p.region + "' of the main thread"
                              : std::string("the step arg on its events");
}
}  // namespace

void write_steps_table(std::ostream& os, const StepReport& r) {
  if (r.processes.empty()) {
    os << "no steps found: no event has a step arg, and no top-level region of a main thread "
          "repeats\n";
  }
  size_t row = 0;
  for (const ProcessSteps& p : r.processes) {
    os << "pid " << p.pid << ": " << p.steps.size() << " steps, from " << source_text(p) << "\n";
    std::vector<std::vector<std::string>> cells;
    cells.push_back({"step", "label", "duration_ms", "traced_ms"});
    for (const char* c : kStepCategories) cells.back().push_back(c);
    cells.back().push_back("compile%");
    cells.back().push_back("outlier");
    for (size_t s = 0; s < p.steps.size(); ++s, ++row) {
      const StepRow& x = r.rows[row];
      std::vector<std::string> c = {std::to_string(x.step), x.label, ms(x.duration_us), ms(x.traced_us)};
      for (double v : x.by_category_us) c.push_back(ms(v));
      c.push_back(pct(x.compile_share));
      c.push_back(x.outlier ? (x.slow ? "slow" : "fast") : "");
      cells.push_back(std::move(c));
    }
    std::vector<size_t> width(cells[0].size(), 0);
    for (auto& c : cells)
      for (size_t i = 0; i < c.size(); ++i) width[i] = std::max(width[i], c[i].size());
    for (auto& c : cells) {
      std::string line;
      for (size_t i = 0; i < c.size(); ++i) {
        if (i) line += "  ";
        const std::string pad(width[i] - c[i].size(), ' ');
        line += i < 2 ? c[i] + pad : pad + c[i];
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      os << line << '\n';
    }
    const StepRow& first = r.rows[row - p.steps.size()];
    os << "first step: compile " << pct(first.compile_share) << " of its traced time (" << ms(first.by_category_us[0])
       << " ms)\n";
  }
  os << "time split by self time (event categories); outlier: " << kStepOutlierRule << "\n";
  os << "outside every step: " << ms(r.outside_traced_us) << " ms traced\n";
}

namespace {
std::string json_categories(const double* us) {
  std::string o;
  for (size_t c = 0; c < kNumStepCategories; ++c)
    o += std::string(",\"") + kStepCategories[c] + "_us\":" + json_num(us[c]);
  return o;
}
}  // namespace

void write_steps_json(std::ostream& os, const StepReport& r) {
  std::string o = "{\"outlier_rule\":";
  append_json_string(o, kStepOutlierRule);
  o += ",\"processes\":[";
  for (size_t i = 0; i < r.processes.size(); ++i) {
    const ProcessSteps& p = r.processes[i];
    o += i ? ",{\"pid\":" : "{\"pid\":";
    append_json_string(o, p.pid);
    o += ",\"file_index\":" + std::to_string(p.file) + ",\"source\":";
    append_json_string(o, p.source);
    o += ",\"region\":";
    append_json_string(o, p.region);
    o += ",\"steps\":" + std::to_string(p.steps.size()) + "}";
  }
  o += "],\"first_step_compile_share\":" +
       (r.rows.empty() ? std::string("null") : json_num(r.rows[0].compile_share));
  o += ",\"outside\":{\"traced_us\":" + json_num(r.outside_traced_us) + json_categories(r.outside_us) + "}";
  o += ",\"nesting\":{\"approximated\":" + std::to_string(r.nesting.approximated) +
       ",\"folded\":" + std::to_string(r.nesting.folded) + "}";
  o += ",\"events\":" + std::to_string(r.stats.events) + ",\"steps\":[";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const StepRow& x = r.rows[i];
    o += i ? ",\n{\"pid\":" : "\n{\"pid\":";
    append_json_string(o, x.pid);
    o += ",\"step\":" + std::to_string(x.step) + ",\"label\":";
    append_json_string(o, x.label);
    o += ",\"start_us\":" + json_num(x.start_us) + ",\"duration_us\":" + json_num(x.duration_us) +
         ",\"traced_us\":" + json_num(x.traced_us) + json_categories(x.by_category_us) +
         ",\"compile_share\":" + json_num(x.compile_share) +
         ",\"outlier\":" + (x.outlier ? "true" : "false") +
         ",\"outlier_kind\":" + (x.outlier ? (x.slow ? "\"slow\"" : "\"fast\"") : "null") +
         "}";
  }
  o += "]}\n";
  os << o;
}

void write_steps_csv(std::ostream& os, const StepReport& r) {
  std::string o = "pid,step,label,start_us,duration_us,traced_us";
  for (const char* c : kStepCategories) o += std::string(",") + c + "_us";
  o += ",compile_share,outlier,outlier_kind\n";
  for (const StepRow& x : r.rows) {
    o += csv_field(x.pid) + "," + std::to_string(x.step) + "," + csv_field(x.label) + "," +
         json_num(x.start_us) + "," + json_num(x.duration_us) + "," +
         json_num(x.traced_us);
    for (double v : x.by_category_us) o += "," + json_num(v);
    o += "," + json_num(x.compile_share) + (x.outlier ? (x.slow ? ",true,slow\n" : ",true,fast\n") : ",false,\n");
  }
  os << o;
}

}  // namespace dftracer::analyze
