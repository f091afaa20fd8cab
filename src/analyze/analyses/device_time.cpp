#include "device_time.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "summary.hpp"  // append_json_string
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

const char* device_category(const TimelineEvent& e) {
  if (e.role == TimelineRole::memcpy) return "memcpy";
  if (e.role == TimelineRole::memset) return "memset";
  return e.name.find("nccl") != std::string::npos ? "collective" : "kernel";
}

const std::vector<DeviceGroup>* DeviceReport::table(const std::string& by) const {
  if (by == "op") return &op;
  if (by == "kernel") return &kernel;
  if (by == "module") return &module;
  if (by == "phase") return &phase;
  if (by == "category") return &category;
  if (by == "stream") return &stream;
  return nullptr;
}

namespace {

using Groups = std::unordered_map<std::string, DeviceGroup>;

DeviceGroup& group(Groups& g, const std::string& key) {
  DeviceGroup& r = g[key];
  r.key = key;
  return r;
}

// Device start minus launch start, held at the int64 limits (hostile times).
int64_t launch_delay(const TimelineEvent& d, const TimelineEvent& launch) { return saturating_sub(d.ts, launch.ts); }

void add_device(DeviceGroup& g, const TimelineEvent& d, const TimelineEvent* launch) {
  ++g.events;
  g.device_ns = saturating_add(g.device_ns, d.dur);
  g.max_ns = std::max(g.max_ns, d.dur);
  if (launch) {
    g.delay_sum_ns = saturating_add(g.delay_sum_ns, launch_delay(d, *launch));
    ++g.delay_n;
  }
}

void add_cpu(DeviceGroup& g, int64_t ns) { g.cpu_ns = saturating_add(g.cpu_ns, ns); }

std::vector<DeviceGroup> sorted(Groups& g) {
  std::vector<DeviceGroup> v;
  v.reserve(g.size());
  for (auto& [k, r] : g) v.push_back(std::move(r));
  std::sort(v.begin(), v.end(), [](const DeviceGroup& a, const DeviceGroup& b) {
    if (a.device_ns != b.device_ns) return a.device_ns > b.device_ns;
    if (a.cpu_ns != b.cpu_ns) return a.cpu_ns > b.cpu_ns;
    return a.key < b.key;
  });
  return v;
}

// Busy intervals of one process's devices (or, where the trace does not say
// whose a device is, of the file's unowned devices), merged and sorted.
struct Busy {
  std::vector<std::pair<int64_t, int64_t>> iv;
  int64_t overlap(int64_t from, int64_t to) const {
    int64_t s = 0;
    auto it = std::lower_bound(iv.begin(), iv.end(), std::make_pair(from, INT64_MIN),
                               [](const auto& a, const auto& b) { return a.second < b.first; });
    for (; it != iv.end() && it->first < to; ++it) s = saturating_add(s, std::max<int64_t>(0, saturating_sub(std::min(to, it->second), std::max(from, it->first))));
    return s;
  }
};

}  // namespace

DeviceReport device_report(const DeviceTimeline& t) {
  DeviceReport r;
  r.stats = t.stats;
  r.events_not_kept = t.not_kept;
  const auto& ev = t.events;
  Groups op, kernel, module, phase, category, stream;
  std::map<std::pair<uint32_t, std::string>, Busy> busy;  // by (file, owner)
  r.steps.reserve(t.steps.size());  // r.steps[i] is t.steps[i]'s
  for (const StepRange& s : t.steps) {
    DeviceStep d;
    d.file = s.file;
    d.pid = s.pid;
    d.step = s.step;
    d.label = s.label;
    d.source = s.source;
    d.ts_ns = s.ts;
    d.span_ns = saturating_sub(s.end, s.ts);
    r.steps.push_back(std::move(d));
  }

  for (const DeviceLink& l : t.links) {
    const TimelineEvent& d = ev[l.event];
    const TimelineEvent* launch = l.launch != kNoEvent ? &ev[l.launch] : nullptr;
    ++r.device_events;
    r.device_ns = saturating_add(r.device_ns, d.dur);
    if (launch) {
      ++r.with_launch;
      r.delay_sum_ns = saturating_add(r.delay_sum_ns, launch_delay(d, *launch));
      ++r.delay_n;
    }
    if (l.op != kNoEvent) ++r.with_op;
    if (l.op_by_external_id) ++r.op_by_external_id;
    if (!l.module.empty()) ++r.with_module;
    busy[{d.file, d.owner}].iv.emplace_back(d.ts, d.end());
    const int64_t launch_ns = launch ? launch->dur : 0;
    add_device(group(op, l.op != kNoEvent ? ev[l.op].name : "(none)"), d, launch);
    DeviceGroup& k = group(kernel, d.name);
    add_device(k, d, launch);
    add_cpu(k, launch_ns);
    add_device(group(module, l.module.empty() ? "(none)" : l.module), d, launch);
    add_device(group(phase, kPhaseNames[l.phase]), d, launch);
    DeviceGroup& c = group(category, device_category(d));
    add_device(c, d, launch);
    add_cpu(c, launch_ns);
    DeviceGroup& s = group(stream, "GPU " + std::to_string(d.device) + " stream " + std::to_string(d.stream) +
                                       (d.owner.empty() ? "" : " (pid " + d.owner + ")"));
    add_device(s, d, launch);
    add_cpu(s, launch_ns);
    if (l.step_index != kNoEvent) {  // the step link_timeline placed its launch in
      ++r.in_step;
      DeviceStep& st = r.steps[l.step_index];
      ++st.events;
      st.device_ns = saturating_add(st.device_ns, d.dur);
      if (launch) {
        st.delay_sum_ns = saturating_add(st.delay_sum_ns, launch_delay(d, *launch));
        ++st.delay_n;
      }
    }
  }
  // CPU time of ops and modules: the self time of the CPU events named so / inside it.
  for (size_t i = 0; i < ev.size(); ++i) {
    if (is_device_role(ev[i].role)) continue;
    if (ev[i].role == TimelineRole::cpu_op || ev[i].role == TimelineRole::annotation)
      add_cpu(group(op, ev[i].name), t.cpu_self[i]);
    add_cpu(group(module, t.cpu_module[i].empty() ? "(none)" : t.cpu_module[i]), t.cpu_self[i]);
    if (i < t.cpu_phase.size()) add_cpu(group(phase, kPhaseNames[t.cpu_phase[i]]), t.cpu_self[i]);
  }
  for (auto& [owner, b] : busy) {
    std::sort(b.iv.begin(), b.iv.end());
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (const auto& p : b.iv) {
      if (!merged.empty() && p.first <= merged.back().second) merged.back().second = std::max(merged.back().second, p.second);
      else merged.push_back(p);
    }
    b.iv = std::move(merged);
    for (const auto& p : b.iv) r.busy_ns = saturating_add(r.busy_ns, saturating_sub(p.second, p.first));
  }
  for (size_t i = 0; i < r.steps.size(); ++i) {
    DeviceStep& st = r.steps[i];
    const StepRange& s = t.steps[i];
    // The step's process's own devices where the trace names them, else the file's.
    auto it = busy.find({st.file, st.pid});
    if (it == busy.end()) it = busy.find({st.file, std::string()});
    st.busy_ns = it == busy.end() ? 0 : it->second.overlap(s.ts, s.end);
    if (st.busy_ns == 0) st.bound = "no-gpu";
    else st.bound = st.busy_ns >= kGpuBoundBusyShare * st.span_ns ? "gpu-bound" : "cpu-bound";
  }
  r.op = sorted(op);
  r.kernel = sorted(kernel);
  r.module = sorted(module);
  r.phase = sorted(phase);
  r.category = sorted(category);
  r.stream = sorted(stream);
  return r;
}

// ------------------------------------------------------------------ output

std::string device_cap_line(const DeviceReport& r) {
  return std::to_string(r.events_not_kept) +
         " timeline events past the memory cap were not analyzed (the figures cover the events read before them)";
}

namespace {

double mean_us(int64_t sum_ns, uint64_t n) { return n ? ns_to_us(sum_ns) / double(n) : std::nan(""); }
double idle_share(const DeviceStep& s) { return s.span_ns ? double(s.span_ns - s.busy_ns) / double(s.span_ns) : 0; }

const char* kGroupHeader[] = {"events", "device_us", "share", "mean_us", "max_us", "cpu_us", "launch_delay_us"};
const char* kStepHeader[] = {"step", "label", "pid", "span_us", "gpu_busy_us", "gpu_idle_us", "idle", "device_us",
                             "events", "launch_delay_us", "bound"};

std::vector<std::string> group_cells(const DeviceGroup& g, int64_t total) {
  return {g.key,
          std::to_string(g.events),
          fmt_num(ns_to_us(g.device_ns)),
          total ? fmt_num(100.0 * double(g.device_ns) / double(total), 2) + "%" : "",
          fmt_num(mean_us(g.device_ns, g.events)),
          fmt_num(ns_to_us(g.max_ns)),
          fmt_num(ns_to_us(g.cpu_ns)),
          fmt_num(mean_us(g.delay_sum_ns, g.delay_n))};
}

std::vector<std::string> step_cells(const DeviceStep& s) {
  return {std::to_string(s.step),
          s.label,
          s.pid,
          fmt_num(ns_to_us(s.span_ns)),
          fmt_num(ns_to_us(s.busy_ns)),
          fmt_num(ns_to_us(s.span_ns - s.busy_ns)),
          fmt_num(100 * idle_share(s), 2) + "%",
          fmt_num(ns_to_us(s.device_ns)),
          std::to_string(s.events),
          fmt_num(mean_us(s.delay_sum_ns, s.delay_n)),
          s.bound};
}

std::string pct(uint64_t a, uint64_t b) { return b ? fmt_num(100.0 * double(a) / double(b), 1) + "%" : "-"; }

}  // namespace

void write_device_table(std::ostream& os, const DeviceReport& r, const std::string& by, size_t top) {
  os << "device events: " << r.device_events << "  device time: " << human_time(ns_to_us(r.device_ns))
     << "  GPU busy: " << human_time(ns_to_us(r.busy_ns)) << "  launch delay (mean): "
     << human_time(mean_us(r.delay_sum_ns, r.delay_n)) << '\n';
  os << "linked: launch " << pct(r.with_launch, r.device_events) << ", op " << pct(r.with_op, r.device_events)
     << " (External id " << pct(r.op_by_external_id, r.device_events) << "), module "
     << pct(r.with_module, r.device_events) << ", step " << pct(r.in_step, r.device_events) << "\n\n";
  std::vector<std::vector<std::string>> rows;
  if (by == "step") {
    rows.emplace_back(std::begin(kStepHeader), std::end(kStepHeader));
    for (const DeviceStep& s : r.steps) rows.push_back(step_cells(s));
    if (r.steps.empty()) {
      os << "no steps: no ProfilerStep#N range, and none that summary --by step finds\n";
      return;
    }
    write_aligned(os, rows, 2);
    return;
  }
  const std::vector<DeviceGroup>& g = *r.table(by);
  rows.push_back({by});
  rows.back().insert(rows.back().end(), std::begin(kGroupHeader), std::end(kGroupHeader));
  const size_t n = top ? std::min(top, g.size()) : g.size();
  for (size_t i = 0; i < n; ++i) rows.push_back(group_cells(g[i], r.device_ns));
  write_aligned(os, rows, 1);
  if (n < g.size()) os << "(" << g.size() - n << " more rows; --top 0 shows all)\n";
}

void write_device_csv(std::ostream& os, const DeviceReport& r, const std::string& by, size_t top) {
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) os << (i ? "," : "") << csv_field(cells[i]);
    os << '\n';
  };
  if (by == "step") {
    line({std::begin(kStepHeader), std::end(kStepHeader)});
    for (const DeviceStep& s : r.steps) {
      auto c = step_cells(s);
      c[6] = fmt_num(idle_share(s), 6);
      line(c);
    }
    return;
  }
  std::vector<std::string> h = {by};
  h.insert(h.end(), std::begin(kGroupHeader), std::end(kGroupHeader));
  line(h);
  const std::vector<DeviceGroup>& groups = *r.table(by);
  for (size_t i = 0; i < groups.size() && (!top || i < top); ++i) {
    const DeviceGroup& g = groups[i];
    auto c = group_cells(g, r.device_ns);
    c[3] = r.device_ns ? fmt_num(double(g.device_ns) / double(r.device_ns), 6) : "";
    line(c);
  }
}

void write_device_json(std::ostream& os, const DeviceReport& r) {
  std::string o = "{\"device_events\":" + std::to_string(r.device_events) +
                  ",\"device_us\":" + json_num(ns_to_us(r.device_ns)) + ",\"busy_us\":" + json_num(ns_to_us(r.busy_ns)) +
                  ",\"launch_delay_mean_us\":" + json_num(mean_us(r.delay_sum_ns, r.delay_n)) +
                  ",\"linked\":{\"launch\":" + std::to_string(r.with_launch) + ",\"op\":" + std::to_string(r.with_op) +
                  ",\"op_by_external_id\":" + std::to_string(r.op_by_external_id) +
                  ",\"module\":" + std::to_string(r.with_module) + ",\"step\":" + std::to_string(r.in_step) + "}" +
                  ",\"gpu_bound_busy_share\":" + json_num(kGpuBoundBusyShare) +
                  ",\"events_not_kept\":" + std::to_string(r.events_not_kept);
  for (const char* by : kDeviceTables) {
    o += ",\"";
    o += by;
    o += "\":[";
    if (std::string_view(by) == "step") {
      bool first = true;
      for (const DeviceStep& s : r.steps) {
        if (!first) o += ',';
        first = false;
        o += "{\"step\":" + std::to_string(s.step) + ",\"label\":";
        append_json_string(o, s.label);
        o += ",\"source\":";
        append_json_string(o, s.source);
        o += ",\"file\":" + std::to_string(s.file) + ",\"pid\":";
        append_json_string(o, s.pid);
        o += ",\"start_us\":" + json_num(ns_to_us(s.ts_ns)) + ",\"span_us\":" + json_num(ns_to_us(s.span_ns)) + ",\"gpu_busy_us\":" + json_num(ns_to_us(s.busy_ns)) +
             ",\"gpu_idle_us\":" + json_num(ns_to_us(s.span_ns - s.busy_ns)) +
             ",\"idle_share\":" + json_num(idle_share(s)) + ",\"device_us\":" + json_num(ns_to_us(s.device_ns)) +
             ",\"events\":" + std::to_string(s.events) +
             ",\"launch_delay_mean_us\":" + json_num(mean_us(s.delay_sum_ns, s.delay_n)) + ",\"bound\":\"" +
             s.bound + "\"}";
      }
    } else {
      bool first = true;
      for (const DeviceGroup& g : *r.table(by)) {
        if (!first) o += ',';
        first = false;
        o += "{\"key\":";
        append_json_string(o, g.key);
        o += ",\"events\":" + std::to_string(g.events) + ",\"device_us\":" + json_num(ns_to_us(g.device_ns)) +
             ",\"max_us\":" + json_num(ns_to_us(g.max_ns)) + ",\"cpu_us\":" + json_num(ns_to_us(g.cpu_ns)) +
             ",\"launch_delay_mean_us\":" + json_num(mean_us(g.delay_sum_ns, g.delay_n)) + "}";
      }
    }
    o += ']';
  }
  o += ",\"skipped\":" + skipped_json(r.stats) + "}\n";
  os << o;
}

}  // namespace dftracer::analyze
