#include "index_summary.hpp"

#include <algorithm>
#include <string_view>

#include "event_category.hpp"
#include "mapped_file.hpp"
#include "trace_index.hpp"

namespace dftracer::analyze {

namespace {

bool indexable(const GroupKey& k) {
  return !k.category && (k.field == Field::name || k.field == Field::cat || k.field == Field::pid ||
                         k.field == Field::tid);
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool keys_indexable(const std::vector<GroupKey>& keys, std::string* why_not) {
  for (const GroupKey& k : keys) {
    if (!indexable(k)) {
      *why_not = "the index holds name, cat, pid and tid only, not " + k.label;
      return false;
    }
  }
  return true;
}

namespace {

// Loads `path`'s index; true when it can answer exactly, else *why_not.
bool load_answering_index(const std::string& path, const MappedFile& map, TraceIndex* out, std::string* why_not) {
  if (!ends_with(path, ".gz")) {
    *why_not = path + ": no write-time index (not a .pfw.gz)";
    return false;
  }
  TraceIndex& index = *out;
  std::string why;
  IndexStatus st = load_trace_index(path, map.data(), map.size(), &index, &why);
  if (st != IndexStatus::Usable || index.version < 2 || !index.finalized || !index.exact) {
    *why_not = path + (st == IndexStatus::Invalid ? ": index ignored (" + why + ")"
                       : st != IndexStatus::Usable || index.version < 2 ? ": no write-time index"
                       : !index.finalized ? ": index not finalized (the run did not finish)"
                                          : ": the index cannot reproduce a full read (args.flops/bytes it could "
                                            "not read exactly, a time past int64 ns, too many threads, or events on "
                                            "a device's track)");
    return false;
  }
  // Its numbers describe the members the writer wrote: only when every
  // member's bytes are still those (a damaged one is read, and counted).
  if (first_unvouched_member(index, map.data(), &why) != index.members.size()) {
    *why_not = path + ": " + why;
    return false;
  }
  // GPU work: a full read leaves it out of the groups and of the span
  // (summary.cpp is_device_event), and the index's span includes it; a
  // device track's events of other categories the writer marks inexact.
  for (const IndexedCell& c : index.cells) {
    if (is_device_cat(index.names[c.cat])) {
      *why_not = path + ": the index cannot leave its device events out of the span";
      return false;
    }
  }
  return true;
}

}  // namespace

bool index_answers(const std::string& path) {
  if (!ends_with(path, ".gz")) return false;
  MappedFile map(path);
  TraceIndex index;
  std::string why_not;
  return load_answering_index(path, map, &index, &why_not);
}

bool add_file_from_index(const std::string& path, SummaryAggregator& agg, ReadStats* stats, std::string* why_not) {
  MappedFile map(path);
  TraceIndex index;
  if (!load_answering_index(path, map, &index, why_not)) return false;
  const std::vector<GroupKey>& keys = agg.keys();
  std::vector<std::string_view> values(keys.size());
  for (const IndexedCell& c : index.cells) {
    GroupStats g;
    g.count = c.count;
    g.total_ns = c.total;
    g.self_ns = c.self;
    g.min_ns = c.min;
    g.max_ns = c.max;
    g.hist.add_zeros(c.zeros);
    for (const auto& [bucket, n] : c.buckets) g.hist.add_bucket(bucket, n);
    g.flops = c.flops;
    g.flops_ns = c.flops_ns;
    g.with_flops = c.with_flops;
    g.bytes = c.bytes;
    g.bytes_ns = c.bytes_ns;
    g.with_bytes = c.with_bytes;
    for (size_t i = 0; i < keys.size(); ++i) {
      switch (keys[i].field) {
        case Field::name: values[i] = index.names[c.name]; break;
        case Field::cat: values[i] = index.names[c.cat]; break;
        case Field::pid: values[i] = index.pid; break;
        default: values[i] = c.tid; break;
      }
    }
    agg.add_indexed_group(values, g);
  }
  agg.add_indexed_totals(index.complete, index.metadata, index.other, index.first_ts, index.last_end,
                         NestingStats{index.approximated, index.folded}, 0);
  ++stats->files;
  ++stats->indexed_files;
  stats->input_bytes += map.size();
  for (const IndexedMember& m : index.members) stats->json_bytes += m.entry.uncompressed;
  stats->events += index.complete + index.metadata + index.other;
  return true;
}

std::optional<Summary> summary_from_indexes(const std::vector<std::string>& files, const std::vector<GroupKey>& keys,
                                            size_t top_n, SummarySort sort, std::string* why_not) {
  if (!keys_indexable(keys, why_not)) return std::nullopt;
  SummaryAggregator agg(keys);
  ReadStats stats;
  for (const std::string& path : files)
    if (!add_file_from_index(path, agg, &stats, why_not)) return std::nullopt;
  Summary s = build_summary(agg, top_n, sort);
  s.stats = stats;
  s.from_index = true;
  return s;
}

}  // namespace dftracer::analyze
