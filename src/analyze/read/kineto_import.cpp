#include "kineto_import.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "device_track.hpp"
#include "reader_threads.hpp"

namespace dftracer::analyze {

bool timeline_role(std::string_view cat, TimelineRole* role) {
  static const std::pair<std::string_view, TimelineRole> kRoles[] = {
      {"cpu_op", TimelineRole::cpu_op},     {"user_annotation", TimelineRole::annotation},
      {"python_function", TimelineRole::python}, {"cuda_runtime", TimelineRole::launch},
      {"cuda_driver", TimelineRole::launch}, {"kernel", TimelineRole::kernel},
      {"gpu_memcpy", TimelineRole::memcpy}, {"gpu_memset", TimelineRole::memset},
      // dftracer's own op events (LibTorch observer, capture backend, Inductor
      // kernel calls): they carry the "External id" their launches pushed.
      {"aten", TimelineRole::cpu_op},       {"autograd", TimelineRole::cpu_op},
      {"torch", TimelineRole::cpu_op},      {"inductor", TimelineRole::cpu_op},
      {"dynamo", TimelineRole::cpu_op},
  };
  for (const auto& [c, r] : kRoles) {
    if (c == cat) {
      *role = r;
      return true;
    }
  }
  return false;
}

std::string module_of(TimelineRole role, std::string_view name) {
  if (role == TimelineRole::python) {
    constexpr std::string_view kPrefix = "nn.Module: ";
    if (name.substr(0, kPrefix.size()) == kPrefix && name.size() > kPrefix.size())
      return std::string(name.substr(kPrefix.size()));
  } else if (role == TimelineRole::annotation) {
    if (name.size() > 6 && name.substr(0, 3) == "## " && name.substr(name.size() - 3) == " ##")
      return std::string(name.substr(3, name.size() - 6));
  }
  return {};
}

int64_t profiler_step_of(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  std::string_view digits = name.substr(kPrefix.size());
  int64_t n = -1;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty()) return -1;
  return n;
}

uint8_t phase_code(std::string_view phase) {
  for (uint8_t i = 1; i < std::size(kPhaseNames); ++i)
    if (phase == kPhaseNames[i]) return i;
  return kNoPhase;
}

namespace {

bool is_cpu_role(TimelineRole r) { return !is_device_role(r); }

// The phase a CPU event names by itself: its phase arg, else its name (the
// optimizer's step, autograd's engine functions), else its module range's
// name (HTA's `## forward ##`).
uint8_t own_phase(const TimelineEvent& e, const std::string& own_module) {
  if (e.phase != kNoPhase) return e.phase;
  if (e.name.rfind("Optimizer.", 0) == 0) return kOptimizer;
  if (e.name.rfind("autograd::engine::evaluate_function", 0) == 0) return kBackward;
  return own_module.empty() ? kNoPhase : phase_code(own_module);
}

// Parent of each event on its own thread (proper nesting; a partial overlap is
// no nesting). `idx`: the thread's events sorted by (ts, longer first).
void nest(const std::vector<TimelineEvent>& ev, const std::vector<size_t>& idx, std::vector<size_t>& parent) {
  std::vector<size_t> stack;
  for (size_t i : idx) {
    while (!stack.empty() && (ev[stack.back()].end() < ev[i].end() || ev[stack.back()].end() <= ev[i].ts))
      stack.pop_back();
    parent[i] = stack.empty() ? kNoEvent : stack.back();
    stack.push_back(i);
  }
}

// By file and start, the longer first; two ranges of the same start and
// length: the smaller External id first, which is the enclosing op (an op is
// numbered when it starts, before the ops it calls).
bool before(const TimelineEvent& a, const TimelineEvent& b) {
  return std::make_tuple(a.file, a.ts, -a.dur, a.external_id) < std::make_tuple(b.file, b.ts, -b.dur, b.external_id);
}

// Module ranges of one process, all threads, nested among themselves: the
// innermost one around a time on any thread (the autograd thread's ops run
// inside the main thread's `## backward ##`).
struct ProcessModules {
  std::vector<size_t> ranges;  // sorted by (ts, longer first)
  // `parent`: each range's enclosing range among `ranges` (nest()).
  size_t around(const std::vector<TimelineEvent>& ev, const std::vector<size_t>& parent, int64_t t) const {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), t,
                               [&](int64_t v, size_t i) { return v < ev[i].ts; });
    if (it == ranges.begin()) return kNoEvent;
    size_t i = *(it - 1);
    while (i != kNoEvent && ev[i].end() < t) i = parent[i];
    return i;
  }
};

// Steps sorted by start, for the first (in that order) around a time.
struct StepLookup {
  std::vector<int64_t> ts, max_end;  // max_end: the latest end of the steps up to each
  std::vector<size_t> index;         // into DeviceTimeline::steps
  void add(const StepRange& s, size_t i) {
    ts.push_back(s.ts);
    max_end.push_back(std::max(max_end.empty() ? INT64_MIN : max_end.back(), s.end));
    index.push_back(i);
  }
  // The first step with ts <= t < end, else kNoEvent: among the steps starting
  // by t, the first whose end passes t is where max_end first passes t.
  size_t at(int64_t t) const {
    const size_t started = std::upper_bound(ts.begin(), ts.end(), t) - ts.begin();
    const size_t i = std::upper_bound(max_end.begin(), max_end.end(), t) - max_end.begin();
    return i < started ? index[i] : kNoEvent;
  }
};

// The found steps of the files without a ProfilerStep#N range join t.steps,
// which stays sorted by (file, ts).
void add_found_steps(DeviceTimeline& t) {
  std::vector<uint32_t> profiled;
  for (const StepRange& s : t.steps) profiled.push_back(s.file);
  std::sort(profiled.begin(), profiled.end());
  bool added = false;
  for (StepRange& s : t.found_steps) {
    if (std::binary_search(profiled.begin(), profiled.end(), s.file)) continue;
    t.steps.push_back(std::move(s));
    added = true;
  }
  t.found_steps.clear();
  if (added)
    std::stable_sort(t.steps.begin(), t.steps.end(), [](const StepRange& a, const StepRange& b) {
      return std::make_tuple(a.file, a.ts, a.pid) < std::make_tuple(b.file, b.ts, b.pid);
    });
}

}  // namespace

void link_timeline(DeviceTimeline& t) {
  auto& ev = t.events;
  std::stable_sort(ev.begin(), ev.end(), before);
  const size_t n = ev.size();
  t.cpu_self.assign(n, 0);
  t.cpu_module.assign(n, std::string());
  t.links.clear();
  t.steps.clear();

  // Threads and processes of the CPU side.
  using ThreadKey = std::tuple<uint32_t, std::string, std::string>;
  std::map<ThreadKey, std::vector<size_t>> threads;
  std::map<std::pair<uint32_t, std::string>, ProcessModules> modules;
  std::unordered_map<uint64_t, size_t> by_correlation, by_external;  // key: file << 40 | id
  auto key = [](uint32_t file, int64_t id) { return (uint64_t(file) << 40) ^ uint64_t(id); };
  std::vector<std::string> own_module(n);
  for (size_t i = 0; i < n; ++i) {
    const TimelineEvent& e = ev[i];
    if (!is_cpu_role(e.role)) continue;
    threads[{e.file, e.pid, e.tid}].push_back(i);
    own_module[i] = module_of(e.role, e.name);
    if (own_module[i].empty()) own_module[i] = e.module;  // dftracer's op events name theirs
    if (!own_module[i].empty()) modules[{e.file, e.pid}].ranges.push_back(i);
    if (e.role == TimelineRole::launch && e.correlation >= 0) by_correlation.emplace(key(e.file, e.correlation), i);
    if ((e.role == TimelineRole::cpu_op || e.role == TimelineRole::annotation) && e.external_id >= 0)
      by_external.emplace(key(e.file, e.external_id), i);
    const int64_t step = profiler_step_of(e.name);
    if (step >= 0 && (e.role == TimelineRole::annotation || e.role == TimelineRole::cpu_op))
      t.steps.push_back({e.file, e.pid, step, e.ts, e.end(), e.name});
  }
  add_found_steps(t);
  std::vector<size_t> parent(n, kNoEvent);
  for (auto& [k, idx] : threads) nest(ev, idx, parent);
  std::vector<uint8_t> cpu_phase(n, kNoPhase);
  std::vector<size_t> module_parent(n, kNoEvent);
  for (auto& [k, pm] : modules) nest(ev, pm.ranges, module_parent);

  // CPU self time (duration minus direct children) and module, in sorted
  // order: a parent comes before its children.
  for (size_t i = 0; i < n; ++i) {
    if (!is_cpu_role(ev[i].role)) continue;
    t.cpu_self[i] = saturating_add(t.cpu_self[i], ev[i].dur);
    if (parent[i] != kNoEvent) t.cpu_self[parent[i]] = saturating_sub(t.cpu_self[parent[i]], ev[i].dur);
    if (!own_module[i].empty()) t.cpu_module[i] = own_module[i];
    else if (parent[i] != kNoEvent) t.cpu_module[i] = t.cpu_module[parent[i]];
    cpu_phase[i] = own_phase(ev[i], own_module[i]);
    if (cpu_phase[i] == kNoPhase && parent[i] != kNoEvent) cpu_phase[i] = cpu_phase[parent[i]];
  }
  // Events with no module on their own thread: the process's module around them.
  for (size_t i = 0; i < n; ++i) {
    if (!is_cpu_role(ev[i].role) || !t.cpu_module[i].empty()) continue;
    auto it = modules.find({ev[i].file, ev[i].pid});
    if (it == modules.end()) continue;
    size_t m = it->second.around(ev, module_parent, ev[i].ts);
    if (m != kNoEvent) t.cpu_module[i] = own_module[m];
  }
  // Phases from the process's module ranges (the autograd thread's ops inside
  // the main thread's `## backward ##`): the innermost one naming a phase.
  for (size_t i = 0; i < n; ++i) {
    if (!is_cpu_role(ev[i].role) || cpu_phase[i] != kNoPhase) continue;
    auto it = modules.find({ev[i].file, ev[i].pid});
    if (it == modules.end()) continue;
    for (size_t m = it->second.around(ev, module_parent, ev[i].ts); m != kNoEvent && cpu_phase[i] == kNoPhase;
         m = module_parent[m])
      cpu_phase[i] = phase_code(own_module[m]);
  }
  t.cpu_phase = cpu_phase;

  // The steps of each file and of each (file, pid), in t.steps's order. A
  // file's ProfilerStep#N ranges also hold the launches of its other pids
  // (some exports write the ranges under another pid); a found step is its
  // own process's only.
  std::map<uint32_t, StepLookup> file_steps;
  std::map<std::pair<uint32_t, std::string>, StepLookup> pid_steps;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    const StepRange& s = t.steps[i];
    if (s.source == "ProfilerStep") file_steps[s.file].add(s, i);
    pid_steps[{s.file, s.pid}].add(s, i);
  }
  auto step_at = [&](uint32_t file, const std::string* pid, int64_t ts) -> size_t {
    if (pid) {
      auto it = pid_steps.find({file, *pid});
      return it == pid_steps.end() ? kNoEvent : it->second.at(ts);
    }
    auto it = file_steps.find(file);
    return it == file_steps.end() ? kNoEvent : it->second.at(ts);
  };

  for (size_t i = 0; i < n; ++i) {
    const TimelineEvent& e = ev[i];
    if (!is_device_role(e.role)) continue;
    DeviceLink l;
    l.event = i;
    if (e.correlation >= 0) {
      auto it = by_correlation.find(key(e.file, e.correlation));
      if (it != by_correlation.end()) l.launch = it->second;
    }
    // The External id of the device event, else that of its launch call
    // (a kernel whose external correlation record came late carries none).
    for (int64_t ext : {e.external_id, l.launch != kNoEvent ? ev[l.launch].external_id : int64_t(-1)}) {
      if (ext < 0 || l.op != kNoEvent) continue;
      auto it = by_external.find(key(e.file, ext));
      if (it != by_external.end()) {
        l.op = it->second;
        l.op_by_external_id = true;
      }
    }
    if (l.op == kNoEvent && l.launch != kNoEvent) {  // the innermost cpu_op around the launch
      for (size_t p = parent[l.launch]; p != kNoEvent; p = parent[p]) {
        if (ev[p].role == TimelineRole::cpu_op) {
          l.op = p;
          break;
        }
      }
    }
    // The module: that of the launch call (it runs inside the op), else the op's.
    const size_t where = l.launch != kNoEvent ? l.launch : l.op;
    if (where != kNoEvent) {
      l.module = t.cpu_module[where];
      if (l.module.empty() && l.op != kNoEvent) l.module = t.cpu_module[l.op];
      l.phase = l.op != kNoEvent && cpu_phase[l.op] != kNoPhase ? cpu_phase[l.op] : cpu_phase[where];
      l.step_index = step_at(e.file, &ev[where].pid, ev[where].ts);
      // Some exports write the step range under another pid than the ops.
      if (l.step_index == kNoEvent) l.step_index = step_at(e.file, nullptr, ev[where].ts);
    } else {
      if (!e.owner.empty()) l.step_index = step_at(e.file, &e.owner, e.ts);
      if (l.step_index == kNoEvent) l.step_index = step_at(e.file, nullptr, e.ts);
    }
    if (l.step_index != kNoEvent) l.step = t.steps[l.step_index].step;
    t.links.push_back(std::move(l));
  }
}

namespace {

int64_t arg_int(std::string_view v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  int64_t x = -1;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size()) return -1;
  return x;
}

class TimelineCollector : public LineConsumer {
 public:
  // `kept`: the events all collectors kept, shared; at most `max` of them.
  // `sink` (may be null): also gets every decoded event; `shared` its args,
  // captured in the first slots.
  TimelineCollector(std::atomic<size_t>& kept, size_t max, const SharedRead* shared, EventSink* sink)
      : kept_(kept), max_(max), sink_(sink) {
    ArgCapture c;
    if (shared) c = shared->args;
    arg_ = c.size;
    for (const char* k : {"correlation", "External id", "device", "stream"}) c.keys[c.size++] = k;
    decoder_.capture_args(c);
  }
  void begin_piece(size_t file_index) override { file_ = static_cast<uint32_t>(file_index); }
  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st == DecodeStatus::Ok && sink_) sink_->add_event(file_, ev_);
    if (st != DecodeStatus::Ok || !ev_.is_complete() || !ev_.has_ts || !ev_.has_dur) return st;
    TimelineRole role;
    if (!timeline_role(ev_.cat, &role)) return st;
    TimelineEvent e;
    e.file = file_;
    e.role = role;
    e.name = std::string(ev_.name);
    e.pid = std::string(ev_.pid_text);
    e.tid = std::string(ev_.tid_text);
    e.ts = ev_.ts_ns;
    e.dur = std::max<int64_t>(ev_.dur_ns, 0);
    e.correlation = arg_int(ev_.extra_args[arg_]);
    e.external_id = arg_int(ev_.extra_args[arg_ + 1]);
    e.device = arg_int(ev_.extra_args[arg_ + 2]);
    e.stream = arg_int(ev_.extra_args[arg_ + 3]);
    if (role == TimelineRole::cpu_op) {
      e.module = std::string(ev_.module);
      e.phase = phase_code(ev_.phase);
    }
    // GPU work carries its device or correlation id; a cat "kernel" region
    // without either (other tools' CPU-side kernel scopes) is not device time.
    if (is_device_role(role) && e.device < 0 && e.correlation < 0) return st;
    int64_t owner = 0;
    if (is_device_role(role) && format::parse_device_track_pid(e.pid, &owner, nullptr)) e.owner = std::to_string(owner);
    if (kept_.fetch_add(1, std::memory_order_relaxed) >= max_) {
      ++not_kept;
      return st;
    }
    events.push_back(std::move(e));
    return st;
  }
  std::vector<TimelineEvent> events;
  uint64_t not_kept = 0;

 private:
  std::atomic<size_t>& kept_;
  const size_t max_;
  EventSink* sink_;
  size_t arg_ = 0;  // the slot of "correlation"; the other three follow
  EventDecoder decoder_;
  Event ev_;
  uint32_t file_ = 0;
};

}  // namespace

DeviceTimeline read_timeline_events(const std::vector<std::string>& files, unsigned threads,
                                    const ReadOptions& options, size_t max_events, const SharedRead* shared) {
  threads = useful_threads(files, threads, options);
  std::atomic<size_t> kept{0};
  std::vector<std::unique_ptr<TimelineCollector>> cs;
  std::vector<LineConsumer*> consumers;
  for (unsigned i = 0; i < threads; ++i) {
    cs.push_back(std::make_unique<TimelineCollector>(kept, max_events, shared, shared ? shared->sink(i) : nullptr));
    consumers.push_back(cs.back().get());
  }
  DeviceTimeline t;
  t.stats = read_traces(files, consumers, options);
  for (auto& c : cs) {
    for (auto& e : c->events) t.events.push_back(std::move(e));
    c->events.clear();
    t.not_kept += c->not_kept;
  }
  return t;
}

DeviceTimeline read_device_timeline(const std::vector<std::string>& files, unsigned threads,
                                    const ReadOptions& options, size_t max_events) {
  DeviceTimeline t = read_timeline_events(files, threads, options, max_events);
  link_timeline(t);
  return t;
}

}  // namespace dftracer::analyze
