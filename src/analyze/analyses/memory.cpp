#include "memory.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>

#include "json_member.hpp"
#include "memory_args.hpp"
#include "step_finder.hpp"
#include "summary.hpp"
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

// The series the analyzer reads: the capture writes cpu and cuda:0..7; the
// decoder captures at most kMaxExtraArgs keys.
constexpr const char* kDevices[kMaxExtraArgs] = {format::kMemoryDeviceCpu, "cuda:0", "cuda:1", "cuda:2",
                                                 "cuda:3", "cuda:4", "cuda:5", "cuda:6"};

// The memory counter's samples in a decoded line: calls `sample(device,
// bytes)` for each numeric series value, `bad()` for each one that is not
// (or when the line has no series the analyzer knows). False: not a memory counter.
template <class Sample, class Bad>
bool memory_samples(const Event& ev, Sample&& sample, Bad&& bad) {
  if (ev.ph != "C" || ev.name != format::kMemoryTrack || ev.cat != format::kMemoryCat) return false;
  bool any = false, all_empty = true;
  for (size_t i = 0; i < std::size(kDevices); ++i) {
    const std::string_view v = ev.extra_args[i];
    if (v.empty()) continue;
    all_empty = false;
    double bytes = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), bytes);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size() || !ev.has_ts) {
      bad();
      continue;
    }
    any = true;
    sample(kDevices[i], bytes);
  }
  if (!any && all_empty) bad();  // a memory counter with no series the analyzer knows
  return true;
}

void capture_devices(EventDecoder& d) {
  ArgCapture c;
  c.size = std::size(kDevices);
  for (size_t i = 0; i < c.size; ++i) c.keys[i] = kDevices[i];
  d.capture_args(c);
}

// A counter line: `"ph"`, a colon and `"C"`, with the whitespace JSON allows
// around the colon (writers other than ours, Python's json among them, put a
// space there). Every occurrence of the key is tried: an arg may be named
// "ph" too. A line taken wrongly costs a decode, which then tells.
bool is_counter_line(std::string_view line) {
  for (size_t v = member_value_at(line, "\"ph\""); v != std::string_view::npos;
       v = member_value_at(line, "\"ph\"", v))
    if (line.compare(v, 3, "\"C\"") == 0) return true;
  return false;
}

// Pass 1: each series' count, first, last and exact peak (no samples kept),
// and the steps (step_finder.hpp).
class MemoryTrackReader : public LineConsumer {
 public:
  MemoryTrackReader() { capture_devices(decoder_); }

  void begin_piece(size_t file_index) override {
    file_ = file_index;
    finder.begin_piece(file_index);
  }

  DecodeStatus consume(std::string_view line, size_t cap) override {
    // Counter lines are few (the capture bounds their rate): the others go to the step finder only.
    if (!is_counter_line(line)) {
      planned.consume(line, cap);  // a compiled graph's call with its planned peak (memory_planned.hpp)
      blocks.consume(line, cap);
      return finder.consume(line, cap);
    }
    const DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st != DecodeStatus::Ok) return st;
    memory_samples(
        ev_, [&](const char* device, double bytes) { add(std::string(ev_.pid_text), device, ev_.ts_ns, bytes, ev_.tid_text); },
        [&] { ++out.bad_samples; });
    return st;
  }

  void add(const std::string& pid, const char* device, int64_t ts, double bytes, std::string_view tid) {
    MemorySeries& s = series_[{pid, device}];
    auto& last = last_ts_[{file_, pid + '\0' + device}];
    if (s.samples && ts < last) ++out.out_of_order;
    last = std::max(last, ts);
    if (s.samples == 0) {
      s.pid = pid;
      s.device = device;
      s.peak = s.first = s.last = bytes;
      s.peak_ts_ns = s.first_ts_ns = s.last_ts_ns = ts;
      s.peak_tid = tid;
    } else {
      if (bytes > s.peak || (bytes == s.peak && ts < s.peak_ts_ns)) s.peak = bytes, s.peak_ts_ns = ts, s.peak_tid = tid;
      if (ts < s.first_ts_ns) s.first = bytes, s.first_ts_ns = ts;
      if (ts >= s.last_ts_ns) s.last = bytes, s.last_ts_ns = ts;
    }
    ++s.samples;
  }

  MemoryPeaks out;
  StepFinder finder;
  PlannedGraphReader planned;
  BlockPeakFinder blocks;
  std::map<std::pair<std::string, std::string>, MemorySeries> series_;

 private:
  EventDecoder decoder_;
  Event ev_;
  size_t file_ = 0;
  std::map<std::pair<size_t, std::string>, int64_t> last_ts_;
};

using Sample = std::pair<int64_t, double>;  // (ts, bytes), ordered by time, then bytes

// The higher sample, the earlier of equal ones (a peak and its time).
void keep_peak(Sample& best, bool& any, const Sample& s) {
  if (!any || s.second > best.second || (s.second == best.second && s.first < best.first)) best = s;
  any = true;
}

// One series' chart, built sample by sample in a fixed room: all samples
// while the series has at most kMemoryChartPoints, else the highest sample of
// each of kMemoryChartPoints equal slices of its time span (pass 1's).
struct ChartBuilder {
  const MemorySeries* series = nullptr;
  std::vector<Sample> points;
  std::vector<bool> used;
  void init(const MemorySeries& s) {
    series = &s;
    if (s.samples > kMemoryChartPoints) points.assign(kMemoryChartPoints, {}), used.assign(kMemoryChartPoints, false);
  }
  void add(const Sample& x) {
    if (used.empty()) {
      if (points.size() < kMemoryChartPoints) points.push_back(x);
      return;
    }
    const double span = static_cast<double>(saturating_sub(series->last_ts_ns, series->first_ts_ns)) + 1;
    const double at = static_cast<double>(saturating_sub(x.first, series->first_ts_ns)) / span * kMemoryChartPoints;
    const size_t b = std::min<size_t>(at > 0 ? static_cast<size_t>(at) : 0, kMemoryChartPoints - 1);
    bool any = used[b];
    keep_peak(points[b], any, x);
    used[b] = true;
  }
  std::vector<Sample> finish() {
    if (used.empty()) {
      std::sort(points.begin(), points.end());
      return std::move(points);
    }
    std::vector<Sample> v;
    for (size_t b = 0; b < points.size(); ++b)
      if (used[b]) v.push_back(points[b]);
    return v;
  }
};

// The step peaks of one series in one process's steps, built sample by
// sample: per step, the highest sample inside it, and per gap before a step
// the latest sample (a step's level at its start is the latest of all the
// gaps before it).
struct StepPeakBuilder {
  const ProcessSteps* process = nullptr;
  std::vector<int64_t> max_end;  // per step: the latest end of the steps up to it
  std::vector<Sample> before, inside;
  std::vector<bool> has_before, has_inside;
  void init(const ProcessSteps& p) {
    process = &p;
    const size_t n = p.steps.size();
    max_end.resize(n);
    for (size_t i = 0; i < n; ++i) max_end[i] = std::max(i ? max_end[i - 1] : INT64_MIN, p.steps[i].end);
    before.assign(n + 1, {});
    has_before.assign(n + 1, false);
    inside.assign(n, {});
    has_inside.assign(n, false);
  }
  void add(const Sample& x) {
    const auto& st = process->steps;
    const size_t k = std::upper_bound(st.begin(), st.end(), x.first,
                                      [](int64_t t, const StepInterval& s) { return t < s.ts; }) - st.begin();
    if (!has_before[k] || x > before[k]) before[k] = x;
    has_before[k] = true;
    for (size_t i = k; i-- > 0 && max_end[i] >= x.first;) {
      if (st[i].end < x.first) continue;
      bool any = has_inside[i];
      keep_peak(inside[i], any, x);
      has_inside[i] = true;
    }
  }
  // The level at step `i`'s start: the latest sample before it (0: none).
  double start_bytes(size_t i) const {
    bool any = false;
    Sample last{};
    for (size_t k = 0; k <= i; ++k)
      if (has_before[k] && (!any || before[k] > last)) last = before[k], any = true;
    return last.second;
  }
  void finish(const std::string& device, std::vector<MemoryStepPeak>& out) const {
    bool any_before = false;
    Sample last{};
    for (size_t i = 0; i < process->steps.size(); ++i) {
      if (has_before[i] && (!any_before || before[i] > last)) last = before[i], any_before = true;
      const StepInterval& st = process->steps[i];
      MemoryStepPeak r{process->pid, device, i, st.label, 0, 0, st.ts};
      if (any_before) r.start_bytes = r.peak = last.second;
      if (has_inside[i] && (!any_before || inside[i].second > r.peak)) r.peak = inside[i].second, r.peak_ts_ns = inside[i].first;
      if (any_before || has_inside[i]) out.push_back(std::move(r));
    }
  }
};

// Pass 2, with the series, steps and block peaks of pass 1 known: the chart
// points and step peaks from the samples again (bounded: nothing per sample
// is kept), and the blocks replayed up to each peak.
class SecondPass : public LineConsumer {
 public:
  SecondPass(MemoryPeaks& m, const StepPlan& plan, const BlockPeakFinder& blocks) : out_(m), replay(blocks.peaks) {
    capture_devices(decoder_);
    charts_.resize(m.series.size());
    series_steps_.resize(m.series.size());
    for (size_t i = 0; i < m.series.size(); ++i) {
      const MemorySeries& s = m.series[i];
      charts_[i].init(s);
      series_at_[{s.pid, s.device}] = i;
      for (size_t k = 0; k < plan.processes.size(); ++k) {
        if (plan.processes[k].pid != s.pid) continue;
        series_steps_[i].push_back(steps_.size());
        steps_.emplace_back();
        steps_.back().first = i;
        steps_.back().second.init(plan.processes[k]);
      }
    }
  }

  DecodeStatus consume(std::string_view line, size_t cap) override {
    if (!is_counter_line(line)) {
      replay.consume(line, cap);
      return DecodeStatus::Ok;
    }
    const DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st != DecodeStatus::Ok) return st;
    memory_samples(ev_, [&](const char* device, double bytes) { add(device, {ev_.ts_ns, bytes}); }, [] {});
    return st;
  }

  void finish() {
    for (size_t i = 0; i < charts_.size(); ++i) out_.series[i].points = charts_[i].finish();
    series_steps_.clear();  // indexes into steps_, which the sort below reorders
    // By process (the plan's order), then device, then step.
    std::stable_sort(steps_.begin(), steps_.end(), [&](const auto& a, const auto& b) {
      if (a.second.process != b.second.process) return a.second.process < b.second.process;
      return a.first < b.first;
    });
    for (const auto& [i, b] : steps_) b.finish(out_.series[i].device, out_.steps);
  }

 private:
  void add(const char* device, const Sample& x) {
    auto it = series_at_.find({std::string(ev_.pid_text), device});
    if (it == series_at_.end()) return;  // not in pass 1 (the file changed between the passes)
    charts_[it->second].add(x);
    for (size_t k : series_steps_[it->second]) steps_[k].second.add(x);
  }

  MemoryPeaks& out_;

 public:
  BlockReplay replay;

 private:
  std::vector<ChartBuilder> charts_;
  std::map<std::pair<std::string, std::string>, size_t> series_at_;
  std::vector<std::pair<size_t, StepPeakBuilder>> steps_;  // (series, its steps in one process)
  std::vector<std::vector<size_t>> series_steps_;          // per series: its entries in steps_
  EventDecoder decoder_;
  Event ev_;
};

// An alloc carries its total only when it is a new high for its thread in
// the file, so in a time window (or after a dropped record-high alloc) the
// alloc that reached a series' peak can carry none, and the highest total
// kept is a lower event. The track has the exact peak, and its highest
// sample (the earliest of equal ones) the thread and time of the alloc that
// reached it: that alloc is the peak when no total reaches the track's.
void use_track_peaks(const std::vector<MemorySeries>& series, BlockPeakFinder& blocks) {
  for (const MemorySeries& s : series) {
    auto it = blocks.peaks.find({s.pid, s.device});
    if (it == blocks.peaks.end()) continue;  // no block events: nothing to compose
    BlockPeakFinder::Peak& p = it->second;
    if (p.total >= s.peak) continue;
    p = {s.peak, s.peak_ts_ns, s.peak_tid, 0, true};
  }
}

std::string us_text(int64_t ns) { return fmt_num(static_cast<double>(ns) * 1e-3, 3); }

}  // namespace

MemoryPeaks memory_peaks(const std::vector<std::string>& files, const ReadOptions& options) {
  MemoryTrackReader reader;  // one consumer: the files are read in order, so "out of order" means within a file
  ReadOptions o = options;
  o.use_index = false;
  reader.out.stats = read_traces(files, {&reader}, o);
  MemoryPeaks& m = reader.out;
  for (auto& [k, s] : reader.series_) m.series.push_back(s);
  m.planned = reader.planned.rows();
  m.bad_planned = reader.planned.bad;
  if (m.series.empty()) return std::move(m);
  m.blocks.bad = reader.blocks.bad;
  const StepPlan plan = reader.finder.plan();
  use_track_peaks(m.series, reader.blocks);
  SecondPass second(m, plan, reader.blocks);
  read_traces(files, {&second}, o);  // the same input again: its problems are counted once, above
  second.finish();
  m.peaks = second.replay.finish(plan, m.blocks, m.unheld);
  return std::move(m);
}

std::string unheld_line(const PeakComposition& c) {
  return "pid " + c.pid + ", " + c.device + ": the peak " + human_bytes(c.peak) + " at " + us_text(c.peak_ts_ns) +
         " us: what holds it cannot be given (the allocation that reached it is not in the input's block events)";
}

std::string memory_problems_line(const MemoryPeaks& m) {
  std::string o;
  if (m.bad_samples)
    o = "skipped " + std::to_string(m.bad_samples) + " memory counter sample" + (m.bad_samples == 1 ? "" : "s") +
        " without a numeric value";
  if (m.bad_planned)
    o += (o.empty() ? "skipped " : "; ") + std::to_string(m.bad_planned) + " graph event" +
         (m.bad_planned == 1 ? "" : "s") + " whose planned_peak_bytes is not a number";
  const std::string blocks = block_problems_line(m.blocks);
  if (!blocks.empty()) o += (o.empty() ? "" : "; ") + blocks;
  return o;
}

namespace {

std::string percent(double part, double whole) { return whole > 0 ? fmt_num(100.0 * part / whole, 1) + "%" : "-"; }

void write_peak_compositions(std::ostream& os, const MemoryPeaks& m) {
  for (const PeakComposition& c : m.peaks) {
    os << "\npid " << c.pid << ", " << c.device << ": the peak " << human_bytes(c.peak) << " at "
       << us_text(c.peak_ts_ns) << " us is held by " << c.blocks << " block" << (c.blocks == 1 ? "" : "s")
       << " allocated in the trace (" << human_bytes(c.traced) << ") and " << human_bytes(c.before_trace)
       << " before trace (live before the trace began); the blocks by who allocated them:\n";
    for (const PeakHolderList& l : kPeakHolderLists) {
      std::vector<std::vector<std::string>> rows = {{l.title, "blocks", "bytes", "of peak"}};
      for (const PeakHolder& h : c.*l.rows)
        rows.push_back({holder_label(h, l), std::to_string(h.blocks), human_bytes(h.bytes), percent(h.bytes, c.peak)});
      if (c.before_trace != 0 && l.rows == &PeakComposition::by_op)
        rows.push_back({"(before trace)", "", human_bytes(c.before_trace), percent(c.before_trace, c.peak)});
      if (rows.size() > 1) write_aligned(os, rows, 1);
    }
  }
  for (const PeakComposition& c : m.unheld) os << "\n" << unheld_line(c) << "\n";
  if (m.blocks.never_freed)
    os << "\n" << m.blocks.never_freed << " block" << (m.blocks.never_freed == 1 ? "" : "s")
       << " allocated in the trace still live at its end\n";
}

}  // namespace

void write_memory_table(std::ostream& os, const MemoryPeaks& m) {
  if (m.series.empty()) {
    os << "no memory counter track in the input (trace with DFTRACER_MEMORY=1 or trace_eager(memory=True))\n";
    write_planned_table(os, m.planned);
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
  write_peak_compositions(os, m);
  write_planned_table(os, m.planned);
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
  for (size_t i = 0; i < m.peaks.size(); ++i) {
    const PeakComposition& c = m.peaks[i];
    o += i ? ",{" : "{";
    o += "\"pid\":";
    append_json_string(o, c.pid);
    o += ",\"device\":";
    append_json_string(o, c.device);
    o += ",\"peak_ts_us\":" + us_text(c.peak_ts_ns) + ",\"peak_bytes\":" + json_num(c.peak) +
         ",\"traced_bytes\":" + json_num(c.traced) + ",\"before_trace_bytes\":" + json_num(c.before_trace) +
         ",\"blocks\":" + std::to_string(c.blocks);
    for (const PeakHolderList& l : kPeakHolderLists) {
      o += ",\"" + std::string(l.member) + "\":[";
      const auto& rows = c.*l.rows;
      for (size_t j = 0; j < rows.size(); ++j) {
        o += j ? ",{\"key\":" : "{\"key\":";
        append_json_string(o, rows[j].key);
        o += ",\"blocks\":" + std::to_string(rows[j].blocks) + ",\"bytes\":" + json_num(rows[j].bytes) +
             (rows[j].rest ? ",\"rest\":true}" : "}");
      }
      o += "]";
    }
    o += "}";
  }
  o += "],\"peaks_without_composition\":[";
  for (size_t i = 0; i < m.unheld.size(); ++i) {
    const PeakComposition& c = m.unheld[i];
    o += i ? ",{\"pid\":" : "{\"pid\":";
    append_json_string(o, c.pid);
    o += ",\"device\":";
    append_json_string(o, c.device);
    o += ",\"peak_ts_us\":" + us_text(c.peak_ts_ns) + ",\"peak_bytes\":" + json_num(c.peak) + "}";
  }
  const BlockProblems& p = m.blocks;
  o += "],\"block_events\":{\"bad\":" + std::to_string(p.bad) + ",\"free_without_alloc\":" +
       std::to_string(p.free_without_alloc) + ",\"alloc_over_live\":" + std::to_string(p.alloc_over_live) +
       ",\"late\":" + std::to_string(p.late) + ",\"never_freed\":" + std::to_string(p.never_freed) + "}";
  append_planned_json(o, m.planned);
  o += ",\"out_of_order\":" + std::to_string(m.out_of_order) + ",\"bad_samples\":" + std::to_string(m.bad_samples) +
       ",\"skipped\":" + skipped_json(m.stats) + "}\n";
  os << o;
}

}  // namespace dftracer::analyze
