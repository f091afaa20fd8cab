#include "memory.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>

#include "step_finder.hpp"
#include "summary.hpp"
#include "text_format.hpp"

namespace dftracer::analyze {

namespace {

// The series the analyzer reads: the capture writes cpu and cuda:0..7; the
// decoder captures at most kMaxExtraArgs keys.
constexpr const char* kDevices[kMaxExtraArgs] = {"cpu",    "cuda:0", "cuda:1", "cuda:2",
                                                 "cuda:3", "cuda:4", "cuda:5", "cuda:6"};

class MemoryTrackReader : public LineConsumer {
 public:
  MemoryTrackReader() {
    ArgCapture c;
    c.size = std::size(kDevices);
    for (size_t i = 0; i < c.size; ++i) c.keys[i] = kDevices[i];
    decoder_.capture_args(c);
  }

  void begin_piece(size_t file_index) override {
    file_ = file_index;
    finder.begin_piece(file_index);
  }

  DecodeStatus consume(std::string_view line, size_t cap) override {
    // Counter lines are few (the capture bounds their rate): the others go to the step finder only.
    static constexpr std::string_view kCounter = "\"ph\":\"C\"";
    if (line.find(kCounter) == std::string_view::npos) return finder.consume(line, cap);
    const DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st != DecodeStatus::Ok) return st;
    if (ev_.ph != "C" || ev_.name != "memory" || ev_.cat != "memory") return st;
    bool any = false;
    for (size_t i = 0; i < std::size(kDevices); ++i) {
      const std::string_view v = ev_.extra_args[i];
      if (v.empty()) continue;
      double bytes = 0;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), bytes);
      if (r.ec != std::errc() || r.ptr != v.data() + v.size() || !ev_.has_ts) {
        ++out.bad_samples;
        continue;
      }
      any = true;
      add(std::string(ev_.pid_text), kDevices[i], ev_.ts_ns, bytes);
    }
    if (!any && std::all_of(ev_.extra_args.begin(), ev_.extra_args.end(), [](std::string_view s) { return s.empty(); }))
      ++out.bad_samples;  // a memory counter with no series the analyzer knows
    return st;
  }

  void add(const std::string& pid, const char* device, int64_t ts, double bytes) {
    MemorySeries& s = series_[{pid, device}];
    auto& last = last_ts_[{file_, pid + '\0' + device}];
    if (s.samples && ts < last) ++out.out_of_order;
    last = std::max(last, ts);
    if (s.samples == 0) {
      s.pid = pid;
      s.device = device;
      s.peak = s.first = s.last = bytes;
      s.peak_ts_ns = s.first_ts_ns = s.last_ts_ns = ts;
    } else {
      if (bytes > s.peak || (bytes == s.peak && ts < s.peak_ts_ns)) s.peak = bytes, s.peak_ts_ns = ts;
      if (ts < s.first_ts_ns) s.first = bytes, s.first_ts_ns = ts;
      if (ts >= s.last_ts_ns) s.last = bytes, s.last_ts_ns = ts;
    }
    ++s.samples;
    samples_[{pid, device}].emplace_back(ts, bytes);
  }

  // Each series' chart points (out.series in samples_'s order).
  void chart_points() {
    size_t i = 0;
    for (auto& [key, v] : samples_) {
      std::sort(v.begin(), v.end());
      auto& pts = out.series[i++].points;
      if (v.size() <= kMemoryChartPoints) {
        pts = v;
        continue;
      }
      const double span = static_cast<double>(v.back().first - v.front().first) + 1;
      size_t last_bucket = SIZE_MAX;
      for (const auto& s : v) {
        const auto b = static_cast<size_t>(static_cast<double>(s.first - v.front().first) / span * kMemoryChartPoints);
        if (b != last_bucket) pts.push_back(s), last_bucket = b;
        else if (s.second > pts.back().second) pts.back() = s;
      }
    }
  }

  // Each step's peak, from the samples of its process (sorted by chart_points).
  void step_peaks(const StepPlan& plan) {
    for (const ProcessSteps& p : plan.processes) {
      for (auto it = samples_.lower_bound({p.pid, ""}); it != samples_.end() && it->first.first == p.pid; ++it) {
        const auto& v = it->second;
        for (size_t i = 0; i < p.steps.size(); ++i) {
          const StepInterval& st = p.steps[i];
          MemoryStepPeak r{p.pid, it->first.second, i, st.label, 0, 0, st.ts};
          auto b = std::lower_bound(v.begin(), v.end(), std::make_pair(st.ts, -HUGE_VAL));
          bool any = b != v.begin();
          if (any) r.start_bytes = r.peak = std::prev(b)->second;
          for (auto s = b; s != v.end() && s->first <= st.end; ++s) {
            if (!any || s->second > r.peak) r.peak = s->second, r.peak_ts_ns = s->first;
            any = true;
          }
          if (any) out.steps.push_back(std::move(r));
        }
      }
    }
  }

  MemoryPeaks out;
  StepFinder finder;
  std::map<std::pair<std::string, std::string>, MemorySeries> series_;

 private:
  EventDecoder decoder_;
  Event ev_;
  size_t file_ = 0;
  std::map<std::pair<size_t, std::string>, int64_t> last_ts_;
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<int64_t, double>>> samples_;
};

// Pass 2: the ops inside each process's window up to its CPU peak.
class HolderReader : public LineConsumer {
 public:
  explicit HolderReader(std::vector<MemoryPeakBreakdown>& b) : out_(b) {
    for (size_t i = 0; i < out_.size(); ++i) by_pid_[out_[i].pid] = i;
  }
  DecodeStatus consume(std::string_view line, size_t cap) override {
    if (line.find("_bytes\"") == std::string_view::npos) return DecodeStatus::Ok;  // no memory args
    const DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st != DecodeStatus::Ok || !ev_.is_complete() || !(ev_.has_alloc_bytes || ev_.has_free_bytes)) return st;
    auto it = by_pid_.find(ev_.pid_text);
    if (it == by_pid_.end()) return st;
    const MemoryPeakBreakdown& b = out_[it->second];
    if (ev_.ts_ns < b.from_ns || ev_.ts_ns + ev_.dur_ns > b.peak_ts_ns) return st;
    const double net = ev_.alloc_bytes - ev_.free_bytes;
    out_[it->second].ops_net += net;
    auto& n = names_[it->second][std::string(ev_.name)];
    n.first += net;
    ++n.second;
    auto& m = modules_[it->second][std::string(ev_.module)];
    m.first += net;
    ++m.second;
    return st;
  }
  void finish() {
    auto top = [](const std::map<std::string, std::pair<double, uint64_t>>& in) {
      std::vector<MemoryHolder> v;
      for (const auto& [k, x] : in) v.push_back({k, x.first, x.second});
      std::sort(v.begin(), v.end(), [](const MemoryHolder& a, const MemoryHolder& b) {
        return a.net != b.net ? a.net > b.net : a.key < b.key;
      });
      if (v.size() > 10) v.resize(10);
      return v;
    };
    for (auto& [i, m] : names_) out_[i].by_name = top(m);
    for (auto& [i, m] : modules_) out_[i].by_module = top(m);
  }

 private:
  std::vector<MemoryPeakBreakdown>& out_;
  std::map<std::string, size_t, std::less<>> by_pid_;
  std::map<size_t, std::map<std::string, std::pair<double, uint64_t>>> names_, modules_;
  EventDecoder decoder_;
  Event ev_;
};

std::string us_text(int64_t ns) { return fmt_num(static_cast<double>(ns) * 1e-3, 3); }

}  // namespace

MemoryPeaks memory_peaks(const std::vector<std::string>& files, const ReadOptions& options) {
  MemoryTrackReader reader;  // one consumer: the files are read in order, so "out of order" means within a file
  ReadOptions o = options;
  o.use_index = false;
  reader.out.stats = read_traces(files, {&reader}, o);
  for (auto& [k, s] : reader.series_) reader.out.series.push_back(s);
  reader.chart_points();
  const StepPlan plan = reader.finder.plan();
  reader.step_peaks(plan);
  // The window of each process's CPU peak: its step's start (else the first sample) to the peak.
  for (const MemorySeries& s : reader.out.series) {
    if (s.device != "cpu") continue;
    MemoryPeakBreakdown b{s.pid, s.first_ts_ns, s.peak_ts_ns, s.first, s.peak, {}, {}};
    for (const MemoryStepPeak& st : reader.out.steps)
      if (st.pid == s.pid && st.device == "cpu" && st.peak_ts_ns == s.peak_ts_ns) {
        for (const ProcessSteps& p : plan.processes)
          if (p.pid == s.pid && st.step < p.steps.size()) b.from_ns = p.steps[st.step].ts;
        b.from_bytes = st.start_bytes;
        break;
      }
    reader.out.holders.push_back(std::move(b));
  }
  if (!reader.out.holders.empty()) {
    HolderReader holders(reader.out.holders);
    read_traces(files, {&holders}, o);  // the same input again: its problems are counted once, above
    holders.finish();
  }
  return std::move(reader.out);
}

std::string memory_problems_line(const MemoryPeaks& m) {
  if (m.bad_samples == 0) return {};
  return "skipped " + std::to_string(m.bad_samples) + " memory counter sample" + (m.bad_samples == 1 ? "" : "s") +
         " without a numeric value";
}

void write_memory_table(std::ostream& os, const MemoryPeaks& m) {
  if (m.series.empty()) {
    os << "no memory counter track in the input (trace with DFTRACER_MEMORY=1 or trace_eager(memory=True))\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {{"pid", "device", "samples", "peak", "peak at (us)", "first", "last"}};
  for (const MemorySeries& s : m.series)
    rows.push_back({s.pid, s.device, std::to_string(s.samples), human_bytes(s.peak), us_text(s.peak_ts_ns),
                    human_bytes(s.first), human_bytes(s.last)});
  write_aligned(os, rows, 2);
  if (!m.steps.empty()) {
    os << "\nper step (steps as summary --by step finds them):\n";
    rows = {{"pid", "device", "step", "label", "at start", "peak", "peak at (us)"}};
    for (const MemoryStepPeak& s : m.steps)
      rows.push_back({s.pid, s.device, std::to_string(s.step), s.label, human_bytes(s.start_bytes), human_bytes(s.peak),
                      us_text(s.peak_ts_ns)});
    write_aligned(os, rows, 4);
  }
  for (const MemoryPeakBreakdown& b : m.holders) {
    os << "\npid " << b.pid << ": the CPU peak " << human_bytes(b.peak) << " at " << us_text(b.peak_ts_ns) << " us, "
       << human_bytes(b.peak - b.from_bytes) << " above " << human_bytes(b.from_bytes) << " at " << us_text(b.from_ns)
       << " us (its step's start); what the ops in between added (self bytes allocated - freed):\n";
    for (const auto* list : {&b.by_name, &b.by_module}) {
      rows = {{list == &b.by_name ? "op" : "module", "ops", "net"}};
      for (const MemoryHolder& h : *list)
        rows.push_back({h.key.empty() ? "(none)" : h.key, std::to_string(h.ops), human_bytes(h.net)});
      if (rows.size() > 1) write_aligned(os, rows, 1);
    }
    os << "ops in the window: " << human_bytes(b.ops_net) << " net; outside them: "
       << human_bytes(b.peak - b.from_bytes - b.ops_net) << '\n';
  }
  if (m.out_of_order)
    os << m.out_of_order << " samples earlier than one before them in their file (several threads' samples; used by time)\n";
}

void write_memory_json(std::ostream& os, const MemoryPeaks& m) {
  std::string o = "{\"series\":[";
  for (size_t i = 0; i < m.series.size(); ++i) {
    const MemorySeries& s = m.series[i];
    o += i ? ",{" : "{";
    o += "\"pid\":";
    append_json_string(o, s.pid);
    o += ",\"device\":";
    append_json_string(o, s.device);
    o += ",\"samples\":" + std::to_string(s.samples) + ",\"peak_bytes\":" + json_num(s.peak) +
         ",\"peak_ts_us\":" + us_text(s.peak_ts_ns) + ",\"first_bytes\":" + json_num(s.first) +
         ",\"last_bytes\":" + json_num(s.last) + "}";
  }
  o += "],\"steps\":[";
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const MemoryStepPeak& s = m.steps[i];
    o += i ? ",{" : "{";
    o += "\"pid\":";
    append_json_string(o, s.pid);
    o += ",\"device\":";
    append_json_string(o, s.device);
    o += ",\"step\":" + std::to_string(s.step) + ",\"label\":";
    append_json_string(o, s.label);
    o += ",\"start_bytes\":" + json_num(s.start_bytes) + ",\"peak_bytes\":" + json_num(s.peak) +
         ",\"peak_ts_us\":" + us_text(s.peak_ts_ns) + "}";
  }
  o += "],\"peaks\":[";
  for (size_t i = 0; i < m.holders.size(); ++i) {
    const MemoryPeakBreakdown& b = m.holders[i];
    o += i ? ",{" : "{";
    o += "\"pid\":";
    append_json_string(o, b.pid);
    o += ",\"from_ts_us\":" + us_text(b.from_ns) + ",\"from_bytes\":" + json_num(b.from_bytes) +
         ",\"peak_ts_us\":" + us_text(b.peak_ts_ns) + ",\"peak_bytes\":" + json_num(b.peak) +
         ",\"ops_net_bytes\":" + json_num(b.ops_net);
    for (const auto* list : {&b.by_name, &b.by_module}) {
      o += list == &b.by_name ? ",\"by_name\":[" : ",\"by_module\":[";
      for (size_t j = 0; j < list->size(); ++j) {
        o += j ? ",{\"key\":" : "{\"key\":";
        append_json_string(o, (*list)[j].key);
        o += ",\"ops\":" + std::to_string((*list)[j].ops) + ",\"net_bytes\":" + json_num((*list)[j].net) + "}";
      }
      o += "]";
    }
    o += "}";
  }
  o += "],\"out_of_order\":" + std::to_string(m.out_of_order) + ",\"bad_samples\":" + std::to_string(m.bad_samples) +
       ",\"skipped\":" + skipped_json(m.stats) + "}\n";
  os << o;
}

}  // namespace dftracer::analyze
