#include "rank_collector.hpp"

#include <charconv>

#include "device_track.hpp"
#include "event_category.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

// The args keys outside the schema the contract uses, captured in this order.
enum Extra : size_t { kGroup, kSeq, kPeer, kValue, kGroupSize, kNumExtra };
const char* const kExtraKeys[kNumExtra] = {"group", "seq", "peer", "value", "group_size"};

bool to_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string process_key(size_t file, std::string_view pid) { return std::to_string(file) + '\x1f' + std::string(pid); }

}  // namespace

RankCollector::RankCollector(bool self_time) : self_time_(self_time) {
  ArgCapture c;
  c.size = kNumExtra;
  for (size_t i = 0; i < kNumExtra; ++i) c.keys[i] = kExtraKeys[i];
  decoder_.capture_args(c);
}

void RankCollector::begin_piece(size_t file_index) {
  file_ = file_index;
  if (self_time_) nesting_.begin_piece(file_index);
}

DecodeStatus RankCollector::consume(std::string_view line, size_t cap) {
  DecodeStatus st = decoder_.decode(line, cap, ev_);
  if (st == DecodeStatus::Ok) add_event(ev_);
  return st;
}

RankProcess& RankCollector::process(const Event& e) {
  if (cached_ && cached_key_.first == file_ && cached_key_.second == e.pid_text) return *cached_;
  cached_key_ = {file_, std::string(e.pid_text)};
  RankProcess& p = procs_[cached_key_];
  p.file = file_;
  p.pid = cached_key_.second;
  cached_ = &p;
  return p;
}

void RankCollector::add_event(const Event& e) {
  const std::string_view value = e.extra_args[kValue];
  if (e.is_metadata()) {
    // Only the contract's keys; any other metadata says nothing about ranks.
    int64_t v = 0;
    const bool num = to_int(value, v);
    if (e.name == "rank" && num) process(e).rank = v;
    else if (e.name == "local_rank" && num) process(e).local_rank = v;
    else if (e.name == "world_size" && num) process(e).world_size = v;
    else if (e.name == "group_rank" && num) process(e).group_rank = v;
    else if (e.name == "hostname" && !value.empty()) process(e).hostname = std::string(value);
    else if (e.name == "clock_offset_ns" && num) {
      RankProcess& p = process(e);
      p.has_offset = true;
      p.clock_offset_ns = v;
    } else if (e.name == "clock_offset_uncertainty_ns" && num && v >= 0) {
      RankProcess& p = process(e);
      p.has_uncertainty = true;
      p.uncertainty_ns = v;
    }
    return;
  }
  if (!e.is_complete() || !e.has_dur) return;
  RankProcess& p = process(e);
  if (is_device_event(e)) {  // a GPU track: its own row, no thread time, no collectives
    int64_t owner = -1, device = -1;
    if (format::parse_device_track_pid(e.pid_text, &owner, &device)) {
      p.device = device;
      p.owner = std::to_string(owner);
    } else if (p.device < 0 && !to_int(e.pid_text, p.device)) {
      p.device = 0;
    }
    ++p.complete;
    p.total_ns = saturating_add(p.total_ns, std::max<int64_t>(e.dur_ns, 0));
    return;
  }
  if (e.name == "end" && e.cat == "dftracer") p.ended = true;
  ++p.complete;
  p.total_ns = saturating_add(p.total_ns, std::max<int64_t>(e.dur_ns, 0));
  if (self_time_ && e.has_ts) {
    auto& g = *self_.try_emplace(process_key(file_, e.pid_text), 0).first;
    nesting_.add(e.pid_text, e.tid_text, e.ts_ns, e.dur_ns, &g.second, &g.first);
  }
  if (e.cat != "comm" || !e.has_ts) return;
  CommEvent c;
  c.file = file_;
  c.pid = std::string(e.pid_text);
  c.name = std::string(e.name);
  c.group = std::string(e.extra_args[kGroup]);
  c.step = std::string(e.step);
  c.has_seq = to_int(e.extra_args[kSeq], c.seq);
  if (!to_int(e.extra_args[kPeer], c.peer)) c.peer = -1;
  if (!to_int(e.extra_args[kGroupSize], c.group_size)) c.group_size = 0;
  c.ts_ns = e.ts_ns;
  c.dur_ns = std::max<int64_t>(e.dur_ns, 0);
  c.bytes = e.has_bytes ? e.bytes : 0;
  comms_.push_back(std::move(c));
}

void RankCollector::merge(RankCollector& o) {
  for (auto& [key, q] : o.procs_) {
    RankProcess& p = procs_[key];
    p.file = q.file;
    p.pid = q.pid;
    // Metadata is written once per file: whichever reader thread saw it wins.
    if (q.rank >= 0) p.rank = q.rank;
    if (q.local_rank >= 0) p.local_rank = q.local_rank;
    if (q.world_size >= 0) p.world_size = q.world_size;
    if (q.group_rank >= 0) p.group_rank = q.group_rank;
    if (!q.hostname.empty()) p.hostname = q.hostname;
    if (q.has_offset) {
      p.has_offset = true;
      p.clock_offset_ns = q.clock_offset_ns;
    }
    if (q.has_uncertainty) {
      p.has_uncertainty = true;
      p.uncertainty_ns = q.uncertainty_ns;
    }
    p.ended = p.ended || q.ended;
    if (q.device >= 0) {
      p.device = q.device;
      p.owner = q.owner;
    }
    p.complete += q.complete;
    p.total_ns = saturating_add(p.total_ns, q.total_ns);
  }
  comms_.insert(comms_.end(), std::make_move_iterator(o.comms_.begin()), std::make_move_iterator(o.comms_.end()));
  if (self_time_) {
    nesting_.finish();
    o.nesting_.finish();
    nesting_.merge(o.nesting_);
    for (auto& [k, v] : o.self_) {
      int64_t& mine = self_.try_emplace(k, 0).first->second;
      mine = saturating_add(mine, v);
    }
  }
  o.procs_.clear();
  o.comms_.clear();
  o.cached_ = nullptr;
  cached_ = nullptr;
}

void RankCollector::resolve() {
  if (!self_time_) return;
  nesting_.finish();
  nesting_.resolve([this](const std::string& key) -> int64_t* {
    auto it = self_.find(key);
    return it == self_.end() ? nullptr : &it->second;
  });
}

std::vector<RankProcess> RankCollector::processes() const {
  std::vector<RankProcess> out;
  for (const auto& [key, p] : procs_) {
    out.push_back(p);
    auto it = self_.find(process_key(key.first, key.second));
    if (it != self_.end()) out.back().self_ns = it->second;
    if (p.device >= 0) {  // a GPU track: the rank of its process, where the file says
      auto owner = procs_.find({key.first, p.owner});
      if (!p.owner.empty() && owner != procs_.end()) out.back().owner_rank = owner->second.rank;
    }
  }
  return out;
}

}  // namespace dftracer::analyze
