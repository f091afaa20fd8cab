#include "summary.hpp"

#include "event_category.hpp"
#include "json_escape.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "index_summary.hpp"
#include "memory.hpp"
#include "text_format.hpp"

namespace dftracer::analyze {

namespace {
constexpr char kKeySep = '\x1f';  // joins composite keys; never in a JSON-decoded name we group by
constexpr std::string_view kNone = "(none)";

// `fhash`: the event's args.fhash, where a key is the category.
std::string_view key_value(const GroupKey& k, const Event& e, size_t extra_index, std::string_view fhash,
                           const RuntimeFiles* runtime) {
  if (k.category) return event_category(e, fhash, runtime);
  if (k.field == Field::phase) return phase_key(e);
  return k.field == Field::arg ? e.extra_args[extra_index] : field_text(e, k.field);
}

// A quick 8-bytes-at-a-time mix for the group cache (not for the map itself).
inline uint64_t hash_key(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  uint64_t w = 0;
  std::memcpy(&w, s.data() + i, s.size() - i);
  h = (h ^ w) * 0x94d049bb133111ebull;
  return h ^ (h >> 29);
}

// The schema fields a summary can group by: those with text (not numbers or times).
constexpr bool groupable(std::string_view kind) { return kind == "Text" || kind == "Json" || kind == "Id"; }

struct KnownKey {
  const char* spelling;
  Field field;
};

// "name", "pid", ... for the top-level fields; "module" and "args.module" for args.
const std::vector<KnownKey>& known_keys() {
  static const std::vector<KnownKey> keys = [] {
    std::vector<KnownKey> v;
#define DFT_X(member, key, kind, column) \
  if (groupable(#kind)) v.push_back({key, Field::member});
    DFT_EVENT_FIELDS(DFT_X)
#undef DFT_X
#define DFT_X(member, key, kind, column)                      \
  if (groupable(#kind) && std::string_view(#column) == "Col") \
    v.push_back({key, Field::member});
    DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
    return v;
  }();
  return keys;
}

std::string trim_spaces(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b);
}

}  // namespace

std::string group_key_choices() {
  std::string out;
  for (const KnownKey& k : known_keys()) out += std::string(k.spelling) + ", ";
  return out + "category, args.<key>";
}

std::vector<GroupKey> parse_group_keys(const std::string& spec) {
  std::vector<GroupKey> keys;
  size_t extra = 0;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string k = trim_spaces(spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    GroupKey g;
    g.label = k;
    bool found = false;
    if (k == "category") {
      g.category = found = true;
      g.field = Field::cat;  // the fields it reads are always decoded
    }
    for (const KnownKey& known : known_keys()) {
      if (k == known.spelling) {
        g.field = known.field;
        found = true;
      }
    }
    if (!found && k.size() > 5 && k.compare(0, 5, "args.") == 0) {
      std::string arg = k.substr(5);
      g.field = Field::arg;
      g.arg = arg;
      found = true;
#define DFT_X(member, key, kind, column)                                                              \
  if (arg == key && !groupable(#kind))                                                                \
    throw std::invalid_argument("cannot group by '" + k + "': the analyzer reads it as a number (use " + \
                                group_key_choices() + ")");                                         \
  if (arg == key) g.field = Field::member;
      DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
      if (g.field == Field::arg && ++extra > kMaxExtraArgs)
        throw std::invalid_argument("too many args.<key> group keys in '" + spec + "' (at most " +
                                    std::to_string(kMaxExtraArgs) + ")");
    }
    if (!found)
      throw std::invalid_argument("unknown group key '" + k + "' (use " + group_key_choices() + ")");
    keys.push_back(std::move(g));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  // A category key reads args.fhash (I/O on the runtime's files is other) in one more slot.
  bool category = false, fhash = false;
  for (const GroupKey& g : keys) {
    category = category || g.category;
    fhash = fhash || (g.field == Field::arg && g.arg == "fhash");
  }
  if (category && !fhash && extra == kMaxExtraArgs)
    throw std::invalid_argument("too many args.<key> group keys in '" + spec + "' (at most " +
                                std::to_string(kMaxExtraArgs - 1) + " beside category)");
  return keys;
}

const char* group_key_name(const GroupKey& k) { return k.label.c_str(); }

bool has_category_key(const std::vector<GroupKey>& keys) {
  for (const GroupKey& k : keys)
    if (k.category) return true;
  return false;
}

SummarySort parse_summary_sort(const std::string& s) {
  if (s == "self") return SummarySort::self;
  if (s == "total") return SummarySort::total;
  throw std::invalid_argument("cannot sort by '" + s + "' (use self or total)");
}

SummaryAggregator::SummaryAggregator(std::vector<GroupKey> keys, std::shared_ptr<const RuntimeFiles> runtime)
    : keys_(std::move(keys)), runtime_(std::move(runtime)) {
  ArgCapture capture;
  bool category = false;
  for (const GroupKey& k : keys_) {
    category = category || k.category;
    if (k.field != Field::arg) continue;
    capture.keys[capture.size++] = k.arg;
  }
  // Event::extra_args[i] is the i-th args.<key> group key (consume() counts
  // them), then args.fhash when a key is the category.
  if (category) {  // parse_group_keys leaves a slot for it
    fhash_slot_ = capture.size;
    for (size_t i = 0; i < capture.size; ++i)
      if (capture.keys[i] == "fhash") fhash_slot_ = i;  // --by args.fhash,category: captured once
    if (fhash_slot_ == capture.size && capture.size < kMaxExtraArgs) capture.keys[capture.size++] = "fhash";
  }
  decoder_.capture_args(capture);
}

void GroupStats::add(const Event& e) {
  ++count;
  total_ns = saturating_add(total_ns, e.dur_ns);
  min_ns = std::min(min_ns, e.dur_ns);
  max_ns = std::max(max_ns, e.dur_ns);
  hist.add(static_cast<double>(e.dur_ns) * 1e-3);
  if (e.has_flops) {
    flops += e.flops;
    flops_ns = saturating_add(flops_ns, e.dur_ns);
    ++with_flops;
  }
  if (e.has_bytes) {
    bytes += e.bytes;
    bytes_ns = saturating_add(bytes_ns, e.dur_ns);
    ++with_bytes;
  }
  if (e.has_alloc_bytes || e.has_free_bytes) {
    alloc_bytes += e.alloc_bytes;
    free_bytes += e.free_bytes;
    ++with_memory;
  }
}

void GroupStats::add_aggregated(uint64_t n, int64_t total, int64_t lo, int64_t hi) {
  count += n;
  total_ns = saturating_add(total_ns, total);
  min_ns = std::min(min_ns, lo);
  max_ns = std::max(max_ns, hi);
  // The quantiles see the smallest, the largest, and the mean for the rest.
  if (n == 1) {
    hist.add(static_cast<double>(total) * 1e-3);
    return;
  }
  hist.add(static_cast<double>(lo) * 1e-3);
  hist.add(static_cast<double>(hi) * 1e-3);
  if (n > 2) hist.add(static_cast<double>(std::max<int64_t>(total - lo - hi, 0)) * 1e-3 / static_cast<double>(n - 2), n - 2);
}

void GroupStats::merge(const GroupStats& o) {
  count += o.count;
  total_ns = saturating_add(total_ns, o.total_ns);
  self_ns = saturating_add(self_ns, o.self_ns);
  min_ns = std::min(min_ns, o.min_ns);
  max_ns = std::max(max_ns, o.max_ns);
  hist.merge(o.hist);
  flops += o.flops;
  flops_ns = saturating_add(flops_ns, o.flops_ns);
  bytes += o.bytes;
  bytes_ns = saturating_add(bytes_ns, o.bytes_ns);
  with_flops += o.with_flops;
  with_bytes += o.with_bytes;
  alloc_bytes += o.alloc_bytes;
  free_bytes += o.free_bytes;
  with_memory += o.with_memory;
}

DecodeStatus SummaryAggregator::consume(std::string_view line, size_t cap) {
  DecodeStatus st = decoder_.decode(line, cap, ev_);
  if (st == DecodeStatus::Ok) add_event(ev_);
  return st;
}

void SummaryAggregator::add_event(const Event& e) {
  if (e.is_metadata()) {
    ++metadata_;
    return;
  }
  if (!e.is_complete() || !e.has_dur) {
    if (!add_aggregated(e)) ++other_;
    return;
  }
  if (is_device_event(e)) {  // GPU time is no thread's: `device` reads it
    ++device_;
    return;
  }
  ++complete_;
  Group& group = group_of(e);
  GroupStats& g = group.second;
  g.add(e);
  if (e.has_ts) {
    first_ts_ns_ = std::min(first_ts_ns_, e.ts_ns);
    last_end_ns_ = std::max(last_end_ns_, saturating_add(e.ts_ns, e.dur_ns));
    nesting_.add(e.pid_text, e.tid_text, e.ts_ns, e.dur_ns, &g.self_ns, &group.first);
  } else {
    g.self_ns = saturating_add(g.self_ns, std::max<int64_t>(e.dur_ns, 0));  // no start: cannot nest
  }
}

bool SummaryAggregator::add_aggregated(const Event& e) {
  // A DFTracer aggregated row (numeric ph 3): dft_cnt events of the interval
  // starting at ts, with their durations in args. They count as that many
  // complete events; their self time is their duration (no start or end to
  // nest them by), and the span reaches their interval's start.
  // `merge` writes one as an instant ("i") with its args: read back the same.
  if ((e.ph != "A" && e.ph != "i") || !e.has_agg_count || !(e.agg_count >= 1 && e.agg_count < 1e15)) return false;
  const auto n = static_cast<uint64_t>(e.agg_count);
  auto ns = [](double us) { return static_cast<int64_t>(std::llround(std::clamp(us, 0.0, 9e15) * 1000)); };
  int64_t total, lo, hi;
  if (e.has_agg_sum) {
    total = ns(e.agg_sum);
    lo = e.has_agg_min ? ns(e.agg_min) : total / static_cast<int64_t>(n);
    hi = e.has_agg_max ? ns(e.agg_max) : total / static_cast<int64_t>(n);
  } else if (e.has_agg_dur) {
    total = ns(e.agg_dur * e.agg_count);
    lo = hi = ns(e.agg_dur);
  } else {
    return false;
  }
  complete_ += n;
  GroupStats& g = group_of(e).second;
  g.add_aggregated(n, total, lo, hi);
  g.self_ns = saturating_add(g.self_ns, total);
  if (e.has_ts) {
    first_ts_ns_ = std::min(first_ts_ns_, e.ts_ns);
    last_end_ns_ = std::max(last_end_ns_, e.ts_ns);
  }
  return true;
}

SummaryAggregator::Group& SummaryAggregator::group_of(const Event& e) {
  std::string_view key;
  const std::string_view fhash = fhash_slot_ < kMaxExtraArgs ? e.extra_args[fhash_slot_] : std::string_view();
  if (keys_.size() == 1) {  // the common case: no composite key to build
    std::string_view v = key_value(keys_[0], e, 0, fhash, runtime_.get());
    key = v.empty() ? kNone : v;
  } else {
    key_.clear();
    for (size_t i = 0, extra = 0; i < keys_.size(); ++i) {
      if (i) key_ += kKeySep;
      std::string_view v = key_value(keys_[i], e, extra, fhash, runtime_.get());
      extra += keys_[i].field == Field::arg;
      key_.append(v.empty() ? kNone : v);
    }
    key = key_;
  }
  return group_for(key);
}

SummaryAggregator::Group& SummaryAggregator::group_for(std::string_view key) {
  uint64_t h = hash_key(key);
  CacheSlot& slot = cache_[h & (cache_.size() - 1)];
  if (slot.group && slot.hash == h && slot.key == key) return *slot.group;
  auto it = groups_.find(std::string(key));
  if (it == groups_.end()) it = groups_.emplace(std::string(key), GroupStats{}).first;
  slot.hash = h;
  slot.key.assign(key.data(), key.size());
  slot.group = &*it;
  return *it;
}

void SummaryAggregator::merge(SummaryAggregator& o) {
  // Every self time reaches its group before the groups move.
  nesting_.finish();
  o.nesting_.finish();
  nesting_.merge(o.nesting_);
  for (auto& [k, g] : o.groups_) {
    auto it = groups_.find(k);
    if (it == groups_.end()) groups_.emplace(k, std::move(g));
    else it->second.merge(g);
  }
  o.groups_.clear();
  for (auto& slot : o.cache_) slot.group = nullptr;
  complete_ += o.complete_;
  metadata_ += o.metadata_;
  other_ += o.other_;
  device_ += o.device_;
  first_ts_ns_ = std::min(first_ts_ns_, o.first_ts_ns_);
  last_end_ns_ = std::max(last_end_ns_, o.last_end_ns_);
}

void SummaryAggregator::add_indexed_group(const std::vector<std::string_view>& values, const GroupStats& g) {
  key_.clear();
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) key_ += kKeySep;
    key_.append(values[i].empty() ? kNone : values[i]);
  }
  group_for(key_).second.merge(g);
}

void SummaryAggregator::add_indexed_totals(uint64_t complete, uint64_t metadata, uint64_t other, int64_t first_ts,
                                           int64_t last_end, const NestingStats& nesting, uint64_t device) {
  complete_ += complete;
  metadata_ += metadata;
  other_ += other;
  device_ += device;
  if (complete) {
    first_ts_ns_ = std::min(first_ts_ns_, first_ts);
    last_end_ns_ = std::max(last_end_ns_, last_end);
  }
  indexed_nesting_.approximated += nesting.approximated;
  indexed_nesting_.folded += nesting.folded;
}

void SummaryAggregator::resolve_nesting() {
  nesting_.resolve([this](const std::string& key) -> int64_t* {
    auto it = groups_.find(key);
    return it == groups_.end() ? nullptr : &it->second.self_ns;
  });
}

std::vector<std::string> split_group_key(const std::string& k) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t sep = k.find(kKeySep, pos);
    out.push_back(k.substr(pos, sep == std::string::npos ? std::string::npos : sep - pos));
    if (sep == std::string::npos) return out;
    pos = sep + 1;
  }
}

Summary build_summary(SummaryAggregator& agg, size_t top_n, SummarySort sort) {
  agg.resolve_nesting();
  Summary s;
  s.sort = sort;
  s.nesting = agg.nesting();
  s.keys = agg.keys();
  s.complete_events = agg.complete_events();
  s.metadata_events = agg.metadata_events();
  s.other_events = agg.other_events();
  s.device_events = agg.device_events();
  s.groups = agg.groups().size();
  if (agg.last_end_ns() >= agg.first_ts_ns())
    s.span_us = ns_to_us(saturating_sub(agg.last_end_ns(), agg.first_ts_ns()));
  int64_t total_ns = 0, self_ns = 0;
  for (auto& [k, g] : agg.groups()) {
    total_ns = saturating_add(total_ns, g.total_ns);
    self_ns = saturating_add(self_ns, g.self_ns);
  }
  s.total_us = ns_to_us(total_ns);
  s.traced_us = ns_to_us(self_ns);
  for (auto& [k, g] : agg.groups()) {
    SummaryRow r;
    r.key = split_group_key(k);
    r.count = g.count;
    r.self_us = ns_to_us(g.self_ns);
    r.total_us = ns_to_us(g.total_ns);
    r.mean_us = static_cast<double>(g.total_ns) / static_cast<double>(g.count) * 1e-3;
    r.min_us = ns_to_us(g.min_ns);
    r.max_us = ns_to_us(g.max_ns);
    r.p50_us = g.hist.quantile(0.50, r.min_us, r.max_us);
    r.p95_us = g.hist.quantile(0.95, r.min_us, r.max_us);
    r.share = self_ns > 0 ? static_cast<double>(g.self_ns) / static_cast<double>(self_ns) : 0;
    // FLOP/s over the time of the events that declared flops: 1 flop/ns = 1 GFLOP/s.
    if (g.with_flops && g.flops_ns > 0) r.gflops = g.flops / static_cast<double>(g.flops_ns);
    if (g.with_bytes && g.bytes_ns > 0) r.gbps = g.bytes / static_cast<double>(g.bytes_ns);
    r.alloc_bytes = g.alloc_bytes;
    r.free_bytes = g.free_bytes;
    s.has_memory |= g.with_memory > 0;
    s.rows.push_back(std::move(r));
  }
  std::sort(s.rows.begin(), s.rows.end(), [sort](const SummaryRow& a, const SummaryRow& b) {
    const double x = sort == SummarySort::self ? a.self_us : a.total_us;
    const double y = sort == SummarySort::self ? b.self_us : b.total_us;
    if (x != y) return x > y;
    if (a.total_us != b.total_us) return a.total_us > b.total_us;
    return a.key < b.key;  // deterministic order for ties
  });
  if (top_n && s.rows.size() > top_n) s.rows.resize(top_n);
  return s;
}

std::unique_ptr<SummaryAggregator> aggregate_traces(const std::vector<std::string>& files,
                                                    const std::vector<GroupKey>& keys, unsigned threads,
                                                    const ReadOptions& options, ReadStats* stats) {
  threads = useful_threads(files, threads, options);
  std::vector<std::unique_ptr<SummaryAggregator>> aggs;
  std::vector<LineConsumer*> consumers;
  ReadOptions ro = options;
  if (has_category_key(keys)) ensure_runtime_files(files, threads, &ro);
  for (unsigned t = 0; t < threads; ++t) {
    aggs.push_back(std::make_unique<SummaryAggregator>(keys, ro.runtime_files));
    consumers.push_back(aggs.back().get());
  }
  *stats = read_traces(files, consumers, ro);
  for (unsigned t = 1; t < threads; ++t) aggs[0]->merge(*aggs[t]);
  return std::move(aggs[0]);
}

Summary summarize(const std::vector<std::string>& files, const std::vector<GroupKey>& keys, size_t top_n,
                  unsigned threads, const ReadOptions& options, SummarySort sort) {
  if (options.use_index && !options.windowed()) {
    std::string why_not;  // index_summary.hpp: answered there only when exact
    if (std::optional<Summary> s = summary_from_indexes(files, keys, top_n, sort, &why_not)) return *s;
  }
  ReadStats stats;
  std::unique_ptr<SummaryAggregator> agg = aggregate_traces(files, keys, threads, options, &stats);
  Summary s = build_summary(*agg, top_n, sort);
  s.stats = stats;
  return s;
}

// ---------------------------------------------------------------------------
// Output

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  dftracer::json_escape_append(s.data(), s.size(), &out);
  out += '"';
}

std::string skipped_json(const ReadStats& st) {
  return "{\"malformed\":" + std::to_string(st.malformed) + ",\"bad_fields\":" + std::to_string(st.bad_fields) +
         ",\"truncated_members\":" + std::to_string(st.truncated_members) +
         ",\"corrupt_members\":" + std::to_string(st.corrupt_members) +
         ",\"empty_files\":" + std::to_string(st.empty_files) + ",\"oversized\":" + std::to_string(st.oversized) +
         "}";
}

void append_key_members(std::string& out, const std::vector<GroupKey>& keys, const std::vector<std::string>& values) {
  for (size_t k = 0; k < keys.size(); ++k) {
    append_json_string(out, group_key_name(keys[k]));
    out += ':';
    append_json_string(out, values[k]);
    out += ',';
  }
}

void write_summary_table(std::ostream& os, const Summary& s) {
  std::vector<std::string> header;
  for (const GroupKey& k : s.keys) header.push_back(group_key_name(k));
  for (const char* h : {"count", "self", "total", "mean", "min", "p50", "p95", "max", "share", "GFLOP/s", "GB/s"})
    header.push_back(h);
  if (s.has_memory)
    for (const char* h : kMemoryColumnHeads) header.push_back(h);
  std::vector<std::vector<std::string>> cells;
  bool any_flops = false, any_bytes = false;
  for (auto& r : s.rows) {
    any_flops |= !std::isnan(r.gflops);
    any_bytes |= !std::isnan(r.gbps);
  }
  for (auto& r : s.rows) {
    std::vector<std::string> c;
    for (const std::string& k : r.key) c.push_back(clip_key(k));
    c.push_back(std::to_string(r.count));
    for (double v : {r.self_us, r.total_us, r.mean_us, r.min_us, r.p50_us, r.p95_us, r.max_us}) c.push_back(human_time(v));
    c.push_back(fmt_num(100 * r.share, 2) + "%");
    c.push_back(fmt_num(r.gflops, 2));
    c.push_back(fmt_num(r.gbps, 2));
    if (s.has_memory) append_memory_cells(c, r);
    cells.push_back(std::move(c));
  }
  // Drop the throughput columns when no event carried flops/bytes.
  size_t ncols = header.size();
  std::vector<bool> keep(ncols, true);
  const size_t mem_cols = s.has_memory ? std::size(kMemoryColumnHeads) : 0;
  keep[ncols - mem_cols - 2] = any_flops;
  keep[ncols - mem_cols - 1] = any_bytes;
  std::vector<size_t> width(ncols, 0);
  for (size_t i = 0; i < ncols; ++i) width[i] = header[i].size();
  for (auto& row : cells)
    for (size_t i = 0; i < ncols; ++i) width[i] = std::max(width[i], row[i].size());
  size_t nkeys = s.keys.size();
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < ncols; ++i) {
      if (!keep[i]) continue;
      if (!line.empty()) line += "  ";
      size_t pad = width[i] - row[i].size();
      if (i < nkeys) line += row[i] + std::string(pad, ' ');  // keys left-aligned
      else line += std::string(pad, ' ') + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << '\n';
  };
  emit(header);
  for (auto& row : cells) emit(row);
  os << s.complete_events << " complete events in " << s.groups << " groups, " << human_time(s.traced_us)
     << " traced (share = self time over it), " << human_time(s.total_us) << " summed duration over a "
     << human_time(s.span_us) << " span";
  if (s.nesting.approximated)
    os << "; " << s.nesting.approximated << " parents nested approximately (over "
       << SelfTimeTracker::kMaxOpenEvents << " events waiting on one thread)";
  if (s.rows.size() < s.groups) os << " (top " << s.rows.size() << " shown)";
  os << "; " << s.metadata_events << " metadata events";
  if (s.device_events) os << "; " << s.device_events << " device events left out (GPU time: dftracer-analyze device)";
  os << "\n";
}

void write_summary_json(std::ostream& os, const Summary& s) {
  std::string o = "{\"group_by\":[";
  for (size_t i = 0; i < s.keys.size(); ++i) {
    if (i) o += ',';
    append_json_string(o, group_key_name(s.keys[i]));
  }
  o += "],\"complete_events\":" + std::to_string(s.complete_events);
  o += ",\"metadata_events\":" + std::to_string(s.metadata_events);
  o += ",\"other_events\":" + std::to_string(s.other_events);
  o += ",\"device_events\":" + std::to_string(s.device_events);
  o += ",\"groups\":" + std::to_string(s.groups);
  o += ",\"total_us\":" + json_num(s.total_us) + ",\"traced_us\":" + json_num(s.traced_us) +
       ",\"span_us\":" + json_num(s.span_us);
  o += std::string(",\"sort\":\"") + (s.sort == SummarySort::self ? "self" : "total") + "\"";
  o += ",\"nesting\":{\"approximated\":" + std::to_string(s.nesting.approximated) +
       ",\"folded\":" + std::to_string(s.nesting.folded) + "}";
  o += ",\"skipped\":" + skipped_json(s.stats);
  o += std::string(",\"index\":") + (s.from_index ? "true" : "false");
  o += std::string(",\"memory\":") + (s.has_memory ? "true" : "false");
  o += ",\"rows\":[";
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const SummaryRow& r = s.rows[i];
    o += i ? ",\n{" : "\n{";
    append_key_members(o, s.keys, r.key);
    o += "\"count\":" + std::to_string(r.count) + ",\"self_us\":" + json_num(r.self_us) +
         ",\"total_us\":" + json_num(r.total_us) +
         ",\"mean_us\":" + json_num(r.mean_us) + ",\"min_us\":" + json_num(r.min_us) +
         ",\"p50_us\":" + json_num(r.p50_us) + ",\"p95_us\":" + json_num(r.p95_us) +
         ",\"max_us\":" + json_num(r.max_us) + ",\"share\":" + json_num(r.share) +
         ",\"gflops\":" + json_num(r.gflops) + ",\"gbps\":" + json_num(r.gbps);
    if (s.has_memory) append_memory_members(o, r);
    o += "}";
  }
  o += "]}\n";
  os << o;
}

void write_summary_csv(std::ostream& os, const Summary& s) {
  std::string o;
  for (size_t i = 0; i < s.keys.size(); ++i) o += (i ? "," : "") + csv_field(group_key_name(s.keys[i]));
  for (const char* c : kSummaryColumns) o += std::string(",") + c;
  if (s.has_memory)
    for (const char* c : kMemoryColumns) o += std::string(",") + c;
  o += "\n";
  for (auto& r : s.rows) {
    for (auto& k : r.key) o += csv_field(k) + ",";
    o += std::to_string(r.count) + "," + json_num(r.self_us) + "," + json_num(r.total_us) + "," + json_num(r.mean_us) + "," +
         json_num(r.min_us) + "," + json_num(r.p50_us) + "," + json_num(r.p95_us) + "," + json_num(r.max_us) +
         "," + json_num(r.share) + "," + (std::isnan(r.gflops) ? "" : json_num(r.gflops)) + "," +
         (std::isnan(r.gbps) ? "" : json_num(r.gbps));
    if (s.has_memory) append_memory_csv(o, r);
    o += "\n";
  }
  os << o;
}

}  // namespace dftracer::analyze
