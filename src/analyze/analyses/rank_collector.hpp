// The reading half of the cross-rank analysis (ranks.hpp): one pass that
// keeps, per process (file, pid), the #16 rank metadata, whether the file
// ended, its self/total time (self_time.hpp), and every comm event. Comm
// events are few (one per collective call), so they are kept whole; the rest
// of the trace is streamed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event_decoder.hpp"
#include "ranks.hpp"
#include "self_time.hpp"

namespace dftracer::analyze {

// One comm event as read (times on its own file's clock).
struct CommEvent {
  size_t file = 0;
  std::string pid, name, group, step;
  bool has_seq = false;
  int64_t seq = 0, peer = -1, group_size = 0;
  int64_t ts_ns = 0, dur_ns = 0;
  double bytes = 0;
};

class RankCollector : public LineConsumer {
 public:
  // self_time: also each process's self time (summary --by rank); merge only
  // needs the metadata.
  explicit RankCollector(bool self_time);
  void begin_piece(size_t file_index) override;
  DecodeStatus consume(std::string_view line, size_t padded_capacity) override;
  void add_event(const Event& e);
  void merge(RankCollector& other);
  // Call once on the merged collector: self times are then final.
  void resolve();

  // The processes with their metadata and times (comm fields still 0).
  std::vector<RankProcess> processes() const;
  const std::vector<CommEvent>& comms() const { return comms_; }
  const NestingStats& nesting() const { return nesting_.stats(); }

 private:
  using Key = std::pair<size_t, std::string>;
  RankProcess& process(const Event& e);

  bool self_time_;
  EventDecoder decoder_;
  Event ev_;
  size_t file_ = 0;
  std::map<Key, RankProcess> procs_;  // nodes never move: the cache points into them
  RankProcess* cached_ = nullptr;
  Key cached_key_{SIZE_MAX, {}};
  std::vector<CommEvent> comms_;
  SelfTimeTracker nesting_;
  std::unordered_map<std::string, int64_t> self_;  // process key -> self ns (nodes stable)
};

}  // namespace dftracer::analyze
