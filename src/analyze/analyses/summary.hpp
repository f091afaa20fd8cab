// `summary`: complete ("X") events grouped by one or more keys, with count,
// self time (duration minus nested events' on the same thread, self_time.hpp),
// total, mean, min, p50, p95, max, share of the traced time (self time over
// the summed self time of all events: shares add up to 100 %), and achieved
// GFLOP/s and GB/s where events carry args.flops / args.bytes.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "event_decoder.hpp"
#include "event_schema.hpp"
#include "runtime_files.hpp"
#include "log_histogram.hpp"
#include "self_time.hpp"
#include "trace_time.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

// What a summary groups by: a text field of the schema (event_schema.hpp) or
// any other args key, which the decoder then captures.
struct GroupKey {
  Field field = Field::name;
  bool category = false;  // the derived key "category" (event_category.hpp), not a field
  std::string arg;    // Field::arg: the args key
  std::string label;  // the column heading: the spelling asked for ("module", "args.step")
};

// Parses "name", "module,phase", "args.step", ...: the schema's Text/Json/Id
// fields by name, its args also as "args.<key>", and any other "args.<key>".
// Throws std::invalid_argument with a one-line message naming the bad key.
std::vector<GroupKey> parse_group_keys(const std::string& spec);
const char* group_key_name(const GroupKey& k);
// Whether one of `keys` is the category (event_category.hpp): the read then
// needs the runtime's files (runtime_files.hpp).
bool has_category_key(const std::vector<GroupKey>& keys);
// The keys a user can give, for messages and docs ("name, cat, ..., args.<key>").
std::string group_key_choices();

// Times in integer nanoseconds, summed exactly; the rows convert to us.
struct GroupStats {
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t self_ns = 0;  // filled by the SelfTimeTracker as events find their parents
  int64_t min_ns = std::numeric_limits<int64_t>::max();
  int64_t max_ns = std::numeric_limits<int64_t>::min();
  LogHistogram hist;  // of microseconds
  double flops = 0, bytes = 0;            // sums of args.flops / args.bytes
  int64_t flops_ns = 0, bytes_ns = 0;     // summed dur of the events that carried them
  uint64_t with_flops = 0, with_bytes = 0;
  double alloc_bytes = 0, free_bytes = 0;  // sums of args.alloc_bytes / args.free_bytes (memory capture)
  uint64_t with_memory = 0;                // events that carried either

  void add(const Event& e);
  // `n` events summed up by one aggregated row: their total, min and max.
  void add_aggregated(uint64_t n, int64_t total_ns, int64_t min_ns, int64_t max_ns);
  void merge(const GroupStats& o);
};

// Per-thread aggregation; merge the threads' aggregators into one at the end.
class SummaryAggregator : public LineConsumer {
 public:
  // `runtime`: the runtime's files, whose I/O is "other" in a category key
  // (runtime_files.hpp); null: all I/O is "data".
  explicit SummaryAggregator(std::vector<GroupKey> keys, std::shared_ptr<const RuntimeFiles> runtime = nullptr);
  // Where add_event() finds args.fhash when a key is the category: a consumer
  // with its own decoder must capture it in this slot of Event::extra_args
  // (kMaxExtraArgs: no category key, none read).
  size_t fhash_slot() const { return fhash_slot_; }
  void begin_piece(size_t file_index) override { nesting_.begin_piece(file_index); }
  DecodeStatus consume(std::string_view line, size_t padded_capacity) override;
  // One event decoded elsewhere (the report decodes once for several uses):
  // its string views need to live only for this call.
  void add_event(const Event& e);
  void merge(SummaryAggregator& other);
  // Joins the nesting of threads whose events were read as several pieces;
  // call once, on the merged aggregator, before reading self times.
  void resolve_nesting();
  NestingStats nesting() const {
    NestingStats n = nesting_.stats();
    n.approximated += indexed_nesting_.approximated;
    n.folded += indexed_nesting_.folded;
    return n;
  }
  // A file's summary taken from its write-time index (index_summary.hpp):
  // one group's stats by its key values, and the file's totals.
  void add_indexed_group(const std::vector<std::string_view>& values, const GroupStats& g);
  void add_indexed_totals(uint64_t complete, uint64_t metadata, uint64_t other, int64_t first_ts, int64_t last_end,
                          const NestingStats& nesting, uint64_t device = 0);

  // Keyed by the group's values joined (split_group_key() takes them apart).
  const std::unordered_map<std::string, GroupStats>& groups() const { return groups_; }
  const std::vector<GroupKey>& keys() const { return keys_; }
  uint64_t complete_events() const { return complete_; }
  uint64_t metadata_events() const { return metadata_; }
  uint64_t other_events() const { return other_; }
  uint64_t device_events() const { return device_; }
  int64_t first_ts_ns() const { return first_ts_ns_; }
  int64_t last_end_ns() const { return last_end_ns_; }

 private:
  friend class PartialCodec;  // partial_summary.cpp: the aggregate travels as bytes
  EventDecoder decoder_;
  Event ev_;
  std::vector<GroupKey> keys_;
  std::shared_ptr<const RuntimeFiles> runtime_;
  size_t fhash_slot_ = kMaxExtraArgs;
  SelfTimeTracker nesting_;
  using Group = std::unordered_map<std::string, GroupStats>::value_type;  // its key: stable, named by self times
  Group& group_for(std::string_view key);
  Group& group_of(const Event& e);     // by the group keys' values
  bool add_aggregated(const Event& e);  // false: not an aggregated row it can read

  std::unordered_map<std::string, GroupStats> groups_;
  std::string key_;
  // A direct-mapped cache in front of groups_ (whose nodes never move): most
  // lines find their group with one cheap hash and one compare, without
  // std::hash over the key and the map's bucket walk. Fixed size, so memory
  // stays bounded by the groups.
  struct CacheSlot {
    uint64_t hash = 0;
    std::string key;
    Group* group = nullptr;
  };
  std::vector<CacheSlot> cache_ = std::vector<CacheSlot>(1024);
  uint64_t complete_ = 0, metadata_ = 0, other_ = 0;
  uint64_t device_ = 0;  // device events (event_category.hpp is_device_event): not a thread's time, left out
  NestingStats indexed_nesting_;
  int64_t first_ts_ns_ = std::numeric_limits<int64_t>::max();
  int64_t last_end_ns_ = std::numeric_limits<int64_t>::min();
};

// One value per group key, from a key of SummaryAggregator::groups().
std::vector<std::string> split_group_key(const std::string& key);

// The columns after the group key(s), in the CSV header, the JSON rows and the
// Python DataFrame (exported by the _analyze module).
inline constexpr const char* kSummaryColumns[] = {"count",  "self_us", "total_us", "mean_us", "min_us", "p50_us",
                                                  "p95_us", "max_us",  "share",    "gflops",  "gbps"};

// Row order: by self time (where the time went) or by total (inclusive) time.
enum class SummarySort { self, total };
// "self" or "total"; throws std::invalid_argument naming the bad value.
SummarySort parse_summary_sort(const std::string& s);

struct SummaryRow {
  std::vector<std::string> key;  // one value per group key
  uint64_t count = 0;
  double self_us = 0;  // summed self time
  double total_us = 0, mean_us = 0, min_us = 0, p50_us = 0, p95_us = 0, max_us = 0;
  double share = 0;  // self_us over the summed self time of all complete events
  double gflops = std::numeric_limits<double>::quiet_NaN();  // NaN: no event carried flops
  double gbps = std::numeric_limits<double>::quiet_NaN();
  double alloc_bytes = 0, free_bytes = 0;  // the group's ops' self bytes (Summary::has_memory)
};

struct Summary {
  std::vector<GroupKey> keys;
  std::vector<SummaryRow> rows;  // by self (or total) time, descending
  SummarySort sort = SummarySort::self;
  uint64_t complete_events = 0, metadata_events = 0, other_events = 0, groups = 0;
  uint64_t device_events = 0;    // GPU work (kernels, copies, sets): left out of the rows (`device` reads them)
  double total_us = 0;           // summed durations of all complete events
  double traced_us = 0;          // summed self times: each thread's time inside any event
  NestingStats nesting;
  double span_us = 0;            // first start to last end
  ReadStats stats;
  bool from_index = false;       // answered from the files' write-time indexes, nothing inflated
  bool has_memory = false;       // some event carried alloc_bytes / free_bytes: the memory columns are written
};

// Reads `files` on `threads` threads and builds the summary (top_n 0 = all rows).
Summary summarize(const std::vector<std::string>& files, const std::vector<GroupKey>& keys, size_t top_n,
                  unsigned threads, const ReadOptions& options = {}, SummarySort sort = SummarySort::self);
// The reading part of summarize(): all of `files` in one merged aggregator
// (nesting not yet resolved), for outputs that need its exact ns groups.
std::unique_ptr<SummaryAggregator> aggregate_traces(const std::vector<std::string>& files,
                                                    const std::vector<GroupKey>& keys, unsigned threads,
                                                    const ReadOptions& options, ReadStats* stats);
Summary build_summary(SummaryAggregator& merged, size_t top_n, SummarySort sort = SummarySort::self);

void write_summary_table(std::ostream& os, const Summary& s);
void write_summary_json(std::ostream& os, const Summary& s);
void write_summary_csv(std::ostream& os, const Summary& s);

// JSON string escaping shared by the writers.
void append_json_string(std::string& out, std::string_view s);
// The "skipped" object of the JSON outputs: what bad input was left out.
std::string skipped_json(const ReadStats& st);
// `"key":"value",` for each group key of a JSON row.
void append_key_members(std::string& out, const std::vector<GroupKey>& keys, const std::vector<std::string>& values);

}  // namespace dftracer::analyze
