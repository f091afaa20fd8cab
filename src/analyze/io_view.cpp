#include "io_view.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "event_category.hpp"
#include "event_decoder.hpp"
#include "reader_threads.hpp"
#include "summary.hpp"  // append_json_string

namespace dftracer::analyze {

namespace {

constexpr size_t kFhash = 0, kRet = 1, kValue = 2;  // Event::extra_args slots

// Data calls, by the symbol names DFTracer and we record.
int direction(std::string_view name) {
  static const std::string_view kReads[] = {"read", "pread", "pread64", "readv", "preadv", "preadv2", "fread", "fgets"};
  static const std::string_view kWrites[] = {"write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2", "fwrite"};
  for (std::string_view r : kReads)
    if (name == r) return 1;
  for (std::string_view w : kWrites)
    if (name == w) return 2;
  return 0;
}

// The start of the `width`-wide bin holding t (t may be negative).
int64_t floor_to(int64_t t, int64_t width) {
  int64_t q = t / width;
  if (t % width < 0) --q;
  return q * width;
}

int64_t to_int(std::string_view s) {
  if (s.empty() || s.size() > 24) return 0;
  char buf[32];
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
  return std::strtoll(buf, nullptr, 10);
}

// io_view()'s own consumer: a decoder and an accumulator.
class IoAggregator : public LineConsumer {
 public:
  explicit IoAggregator(const IoOptions& o) : acc_(o) { decoder_.capture_args(IoAccumulator::capture()); }

  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st == DecodeStatus::Ok) acc_.add(ev_);
    return st;
  }

  IoAccumulator acc_;

 private:
  EventDecoder decoder_;
  Event ev_;
};

double mib(uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

// The `top` rows with the most time (0: all; ties in key order), then one
// line for the rest, so a run over a million sample files stays readable.
void table(std::ostream& os, const char* title, const char* key, const std::map<std::string, IoStats>& m, size_t top) {
  std::vector<std::pair<std::string, IoStats>> rows(m.begin(), m.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.time_ns > b.second.time_ns; });
  char line[512];
  os << title << "\n";
  std::snprintf(line, sizeof line, "  %-48s %9s %12s %12s %12s %8s\n", key, "ops", "read MiB", "write MiB", "time us",
                "small");
  os << line;
  auto row = [&](const std::string& k, const IoStats& s) {
    std::string name = k.size() > 48 ? "..." + k.substr(k.size() - 45) : k;
    for (char& c : name)  // a newline or tab in a file name would break the table's lines
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    std::snprintf(line, sizeof line, "  %-48s %9llu %12.3f %12.3f %12.1f %8llu\n", name.c_str(),
                  static_cast<unsigned long long>(s.ops), mib(s.read_bytes), mib(s.write_bytes), s.time_ns / 1e3,
                  static_cast<unsigned long long>(s.small_reads + s.small_writes));
    os << line;
  };
  const size_t shown = top && rows.size() > top ? top : rows.size();
  for (size_t i = 0; i < shown; ++i) row(rows[i].first, rows[i].second);
  if (shown < rows.size()) {
    IoStats rest;
    for (size_t i = shown; i < rows.size(); ++i) rest.add(rows[i].second);
    row("(" + std::to_string(rows.size() - shown) + " more " + key + "s)", rest);
  }
  os << "\n";
}

void json_stats(std::string& out, const IoStats& s) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "{\"ops\":%llu,\"reads\":%llu,\"writes\":%llu,\"read_bytes\":%llu,\"write_bytes\":%llu,"
                "\"small_reads\":%llu,\"small_writes\":%llu,\"time_us\":%.3f}",
                static_cast<unsigned long long>(s.ops), static_cast<unsigned long long>(s.reads),
                static_cast<unsigned long long>(s.writes), static_cast<unsigned long long>(s.read_bytes),
                static_cast<unsigned long long>(s.write_bytes), static_cast<unsigned long long>(s.small_reads),
                static_cast<unsigned long long>(s.small_writes), s.time_ns / 1e3);
  out += buf;
}

void json_map(std::string& out, const char* name, const std::map<std::string, IoStats>& m) {
  out += ",\"";
  out += name;
  out += "\":{";
  bool first = true;
  for (const auto& [k, s] : m) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, k);
    out += ':';
    json_stats(out, s);
  }
  out += '}';
}

}  // namespace

void IoStats::add(const IoStats& o) {
  ops += o.ops;
  reads += o.reads;
  writes += o.writes;
  read_bytes += o.read_bytes;
  write_bytes += o.write_bytes;
  small_reads += o.small_reads;
  small_writes += o.small_writes;
  time_ns += o.time_ns;
}

ArgCapture IoAccumulator::capture() {
  ArgCapture c;
  c.keys[kFhash] = "fhash";
  c.keys[kRet] = "ret";
  c.keys[kValue] = "value";
  c.size = 3;
  return c;
}

void IoAccumulator::add(const Event& ev) {
  if (ev.is_metadata()) {
    if (ev.name == "FH" && !ev.extra_args[kValue].empty())
      paths_.emplace(std::string(ev.extra_args[kValue]), std::string(ev.meta_name));
    return;
  }
  if (!ev.is_complete() || !is_io_cat(ev.cat)) return;
  IoStats s;
  s.ops = 1;
  s.time_ns = ev.has_dur ? ev.dur_ns : 0;
  int dir = direction(ev.name);
  int64_t ret = to_int(ev.extra_args[kRet]);
  uint64_t moved = ret > 0 ? static_cast<uint64_t>(ret) : 0;
  if (dir == 1) {
    s.reads = 1;
    s.read_bytes = moved;
    s.small_reads = moved < opt_.small_bytes;
  } else if (dir == 2) {
    s.writes = 1;
    s.write_bytes = moved;
    s.small_writes = moved < opt_.small_bytes;
  }
  view_.total.add(s);
  view_.by_file[std::string(ev.extra_args[kFhash])].add(s);
  view_.by_call[std::string(ev.name)].add(s);
  view_.by_process[std::string(ev.pid_text)].add(s);
  if (ev.has_ts && dir != 0) {
    view_.by_bin[floor_to(ev.ts_ns, opt_.bin_ns)].add(s);
    fit_bins();
  }
}

void IoAccumulator::fit_bins() {
  if (!opt_.max_bins) return;
  while (!view_.by_bin.empty() &&
         static_cast<uint64_t>((view_.by_bin.rbegin()->first - view_.by_bin.begin()->first) / opt_.bin_ns) + 1 >
             opt_.max_bins)
    widen_bins(opt_.bin_ns * 2);
}

void IoAccumulator::widen_bins(int64_t bin_ns) {
  std::map<int64_t, IoStats> wider;
  for (const auto& [k, s] : view_.by_bin) wider[floor_to(k, bin_ns)].add(s);
  view_.by_bin = std::move(wider);
  opt_.bin_ns = bin_ns;
}

void IoAccumulator::merge(const IoAccumulator& o) {
  view_.total.add(o.view_.total);
  for (auto& [k, s] : o.view_.by_file) view_.by_file[k].add(s);
  for (auto& [k, s] : o.view_.by_call) view_.by_call[k].add(s);
  for (auto& [k, s] : o.view_.by_process) view_.by_process[k].add(s);
  // Both widths are bin_ns x 2^k from the same start: the wider one holds
  // whole bins of the other.
  if (o.opt_.bin_ns > opt_.bin_ns) widen_bins(o.opt_.bin_ns);
  for (auto& [k, s] : o.view_.by_bin) view_.by_bin[floor_to(k, opt_.bin_ns)].add(s);
  fit_bins();
  paths_.insert(o.paths_.begin(), o.paths_.end());
}

IoView IoAccumulator::finish(const ReadStats& stats) const {
  IoView v = view_;
  v.options = opt_;
  v.stats = stats;
  // fhash -> the path its FH record names (the records may sit in any file).
  std::map<std::string, IoStats> named;
  for (auto& [hash, s] : v.by_file) {
    auto it = paths_.find(hash);
    named[it != paths_.end() ? it->second : (hash.empty() ? std::string("(no fhash)") : "fhash:" + hash)].add(s);
  }
  v.by_file = std::move(named);
  if (!v.by_bin.empty()) v.first_bin_ns = v.by_bin.begin()->first;
  return v;
}

IoView io_view(const std::vector<std::string>& files, const IoOptions& options, unsigned threads,
               const ReadOptions& read_options) {
  threads = useful_threads(files, threads, read_options);
  std::vector<std::unique_ptr<IoAggregator>> aggs;
  std::vector<LineConsumer*> consumers;
  for (unsigned t = 0; t < threads; ++t) {
    aggs.push_back(std::make_unique<IoAggregator>(options));
    consumers.push_back(aggs.back().get());
  }
  ReadStats stats = read_traces(files, consumers, read_options);
  for (unsigned t = 1; t < threads; ++t) aggs[0]->acc_.merge(aggs[t]->acc_);
  return aggs[0]->acc_.finish(stats);
}

namespace {

std::string summary_line(const IoView& v) {
  const IoStats& t = v.total;
  char line[512];
  std::snprintf(line, sizeof line,
                "I/O: %llu calls, %.1f us; %llu reads %.3f MiB, %llu writes %.3f MiB; small (< %llu B): %llu reads, "
                "%llu writes",
                static_cast<unsigned long long>(t.ops), t.time_ns / 1e3, static_cast<unsigned long long>(t.reads),
                mib(t.read_bytes), static_cast<unsigned long long>(t.writes), mib(t.write_bytes),
                static_cast<unsigned long long>(v.options.small_bytes), static_cast<unsigned long long>(t.small_reads),
                static_cast<unsigned long long>(t.small_writes));
  return line;
}

std::string rows_json(const std::map<std::string, IoStats>& m, size_t top) {
  std::vector<std::pair<std::string, IoStats>> rows(m.begin(), m.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.time_ns > b.second.time_ns; });
  if (top && rows.size() > top) rows.resize(top);
  std::string o = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    o += i ? ",[" : "[";
    append_json_string(o, rows[i].first);
    const IoStats& s = rows[i].second;
    char buf[128];
    std::snprintf(buf, sizeof buf, ",%llu,%.3f,%llu,%llu]", static_cast<unsigned long long>(s.ops), s.time_ns / 1e3,
                  static_cast<unsigned long long>(s.read_bytes), static_cast<unsigned long long>(s.write_bytes));
    o += buf;
  }
  return o + "]";
}

}  // namespace

std::string io_report_json(const IoView& v, size_t top) {
  std::string o = "{\"summary\":";
  append_json_string(o, summary_line(v));
  o += ",\"by_file\":" + rows_json(v.by_file, top) + ",\"by_call\":" + rows_json(v.by_call, top) +
       ",\"by_process\":" + rows_json(v.by_process, top);
  char buf[96];
  std::snprintf(buf, sizeof buf, ",\"bandwidth\":{\"bin_s\":%.9g,\"bins\":[", v.options.bin_ns / 1e9);
  o += buf;
  bool first = true;
  for (const auto& [bin, s] : v.by_bin) {
    std::snprintf(buf, sizeof buf, "%s[%.9g,%llu,%llu]", first ? "" : ",", (bin - v.first_bin_ns) / 1e9,
                  static_cast<unsigned long long>(s.read_bytes), static_cast<unsigned long long>(s.write_bytes));
    o += buf;
    first = false;
  }
  return o + "]}}";
}

IoOptions io_report_options() {
  IoOptions o;
  o.bin_ns = 1000000;
  o.max_bins = 120;
  return o;
}

void write_io_table(std::ostream& os, const IoView& v, size_t top) {
  char line[512];
  if (v.total.ops == 0) {
    os << "no POSIX or STDIO events in the input\n";
    return;
  }
  os << summary_line(v) << "\n\n";
  table(os, "by file", "file", v.by_file, top);
  table(os, "by call", "call", v.by_call, top);
  table(os, "by process", "pid", v.by_process, top);
  double bin_s = v.options.bin_ns / 1e9;
  std::snprintf(line, sizeof line, "bandwidth over time (%.3g s bins)\n  %10s %14s %14s\n", bin_s, "t s", "read MiB/s",
                "write MiB/s");
  os << line;
  for (const auto& [bin, s] : v.by_bin) {
    std::snprintf(line, sizeof line, "  %10.3f %14.3f %14.3f\n", (bin - v.first_bin_ns) / 1e9, mib(s.read_bytes) / bin_s,
                  mib(s.write_bytes) / bin_s);
    os << line;
  }
}

void write_io_json(std::ostream& os, const IoView& v) {
  std::string out = "{\"total\":";
  json_stats(out, v.total);
  out += ",\"small_bytes\":" + std::to_string(v.options.small_bytes);
  json_map(out, "by_file", v.by_file);
  json_map(out, "by_call", v.by_call);
  json_map(out, "by_process", v.by_process);
  out += ",\"bandwidth\":{\"bin_s\":" + std::to_string(v.options.bin_ns / 1e9) + ",\"bins\":[";
  bool first = true;
  for (const auto& [bin, s] : v.by_bin) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s{\"t_s\":%.6f,\"read_bytes\":%llu,\"write_bytes\":%llu}", first ? "" : ",",
                  (bin - v.first_bin_ns) / 1e9, static_cast<unsigned long long>(s.read_bytes),
                  static_cast<unsigned long long>(s.write_bytes));
    out += buf;
    first = false;
  }
  out += "]}}\n";
  os << out;
}

}  // namespace dftracer::analyze
