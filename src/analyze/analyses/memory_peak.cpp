#include "memory_peak.hpp"

#include <algorithm>
#include <charconv>

#include "event_category.hpp"
#include "memory_args.hpp"
#include "step_finder.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

// format::kBlockArgAddr as a key, without its colon: JSON allows whitespace
// before it (Python's json writes `"addr": 1`); the decode then tells.
constexpr std::string_view kAddrKey = "\"addr\"";

template <class T>
bool parse(std::string_view v, T& out) {
  if (v.empty()) return false;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  return r.ec == std::errc() && r.ptr == v.data() + v.size();
}

}  // namespace

BlockDecoder::BlockDecoder() {
  ArgCapture c;
  c.size = 5;
  c.keys[0] = format::kBlockArgAddr;
  c.keys[1] = format::kBlockArgSize;
  c.keys[2] = format::kBlockArgTotal;
  c.keys[3] = format::kBlockArgOp;
  c.keys[4] = format::kBlockArgDev;
  decoder_.capture_args(c);
}

int BlockDecoder::decode(std::string_view line, size_t cap, BlockEvent& b, DecodeStatus& st) {
  st = DecodeStatus::Ok;
  if (line.find(kAddrKey) == std::string_view::npos) return 0;
  st = decoder_.decode(line, cap, ev_);
  if (st != DecodeStatus::Ok) return 0;
  if (ev_.ph != "i" || ev_.cat != format::kMemoryCat ||
      (ev_.name != format::kBlockAllocName && ev_.name != format::kBlockFreeName))
    return 0;
  b.alloc = ev_.name == format::kBlockAllocName;
  if (!ev_.has_ts || !parse(ev_.extra_args[0], b.addr)) return -1;
  // An allocation has its size, and its total when that is a new high for
  // its thread (older traces wrote it on every allocation); a free has its
  // address alone (older traces also wrote a free's size and total: read,
  // never needed). Without a total an event is never the peak.
  b.size = 0;
  b.total = -1;
  const bool has_total = !ev_.extra_args[2].empty();
  const bool sized = !ev_.extra_args[1].empty() || has_total;
  if ((b.alloc || sized) && (!parse(ev_.extra_args[1], b.size) || !(b.size >= 0))) return -1;
  if ((has_total || (sized && !b.alloc)) && (!parse(ev_.extra_args[2], b.total) || !(b.total >= 0))) return -1;
  b.op = ev_.extra_args[3];
  b.device = ev_.extra_args[4].empty() ? std::string_view(format::kMemoryDeviceCpu) : ev_.extra_args[4];
  b.pid = ev_.pid_text;
  b.tid = ev_.tid_text;
  b.ts = ev_.ts_ns;
  key_.assign(b.pid);
  key_ += '\0';
  key_ += b.tid;
  auto it = seq_.find(key_);
  if (it == seq_.end()) it = seq_.emplace(key_, 0).first;
  b.seq = ++it->second;
  return 1;
}

void BlockPeakFinder::consume(std::string_view line, size_t cap) {
  BlockEvent b;
  DecodeStatus st;
  const int r = decoder_.decode(line, cap, b, st);
  if (r < 0) ++bad;
  if (r <= 0) return;
  auto [it, fresh] = peaks.try_emplace({std::string(b.pid), std::string(b.device)});
  Peak& p = it->second;
  if (fresh) p.total = -1;  // none yet: a series of frees without totals has no peak event
  if (b.total < 0) return;
  if (p.total < 0 || b.total > p.total || (b.total == p.total && b.ts < p.ts)) p = {b.total, b.ts, std::string(b.tid), b.seq};
}

BlockReplay::BlockReplay(const std::map<std::pair<std::string, std::string>, BlockPeakFinder::Peak>& peaks) {
  for (const auto& [k, p] : peaks) {
    Series& s = series_[key(k.first, k.second)];
    s.peak = p;
    s.pending = p.by_sample;
    pending_ += s.pending;
  }
  ArgCapture none;
  decoder_.capture_args(none);
}

const std::string& BlockReplay::key(std::string_view a, std::string_view b) {
  key_.assign(a);
  key_ += '\0';
  key_ += b;
  return key_;
}

const std::string* BlockReplay::pooled(std::string_view s) {
  auto it = pool_.find(s);
  if (it == pool_.end()) it = pool_.emplace(s).first;
  return &*it;
}

// One event into one map of live blocks. An address is live at most once at
// a time, so an event earlier than its address's entry belongs to an earlier
// life of the address: it is resolved by time (and counted as late).
void BlockReplay::replay(std::unordered_map<uint64_t, Block>& live, const BlockEvent& b, bool count) {
  auto it = live.find(b.addr);
  auto unindex = [&](uint64_t addr, const Block& x) {
    if (count || x.freed) return;  // only the at-peak map is indexed
    auto t = by_thread_.find(key(b.pid, *x.tid));
    if (t == by_thread_.end()) return;
    auto& idx = t->second;
    auto [lo, hi] = idx.equal_range(x.ts);
    for (auto i = lo; i != hi; ++i)
      if (i->second.second == addr && &live == &i->second.first->at_peak) {
        idx.erase(i);
        break;
      }
  };
  auto place = [&](Block& x) {
    x = Block{};
    x.ts = b.ts;
    x.seq = b.seq;
    x.size = b.size;
    x.tid = pooled(b.tid);
    if (count) return;
    x.op = pooled(b.op);
    Series& s = series_.find(key(b.pid, b.device))->second;
    auto t = by_thread_.find(key(b.pid, *x.tid));
    if (t == by_thread_.end()) t = by_thread_.emplace(key_, decltype(t->second){}).first;
    t->second.emplace(b.ts, std::make_pair(&s, b.addr));
  };
  auto& p = problems_;
  if (b.alloc) {
    if (it == live.end()) {
      place(live[b.addr]);
      return;
    }
    Block& x = it->second;
    if (x.freed) {  // a free read before: this allocation's, when it came after it
      if (!after(b, x)) {
        if (count) ++p.late;
        live.erase(it);
        return;
      }
      if (count) ++p.free_without_alloc;  // that free's allocation came before the trace
      place(x);
      return;
    }
    if (!after(b, x)) {  // an earlier life of the address, read late: freed before x
      if (count) ++p.late;
      return;
    }
    if (count) ++p.alloc_over_live;
    unindex(b.addr, x);
    const int64_t replaced = x.ts;
    place(x);
    x.replaced_ts = replaced;
    return;
  }
  if (it == live.end()) {  // its allocation may come later in the file (another thread's chunk)
    Block& x = live[b.addr];
    x.ts = b.ts;
    x.seq = b.seq;
    x.tid = pooled(b.tid);
    x.freed = true;
    return;
  }
  Block& x = it->second;
  if (x.freed) {  // two frees and no allocation between them
    if (count) ++p.free_without_alloc;
    if (after(b, x)) x.ts = b.ts, x.seq = b.seq, x.tid = pooled(b.tid);
    return;
  }
  if (after(b, x)) {
    unindex(b.addr, x);
    live.erase(it);
    return;
  }
  // Earlier than the live block's allocation: the free of the life before
  // it. When that one was replaced (its free not read yet), it was no
  // allocation over a live block after all.
  if (count) {
    ++p.late;
    if (x.replaced_ts >= 0 && x.replaced_ts <= b.ts && p.alloc_over_live) --p.alloc_over_live;
  }
  x.replaced_ts = -1;
}

void BlockReplay::enclose(std::string_view pid, std::string_view tid, int64_t ts, int64_t dur,
                          std::string_view module, std::string_view phase, bool backward) {
  if (module.empty() && phase.empty() && !backward) return;
  auto t = by_thread_.find(key(pid, tid));
  if (t == by_thread_.end()) return;
  const int64_t end = saturating_add(ts, dur);
  for (auto i = t->second.lower_bound(ts); i != t->second.end() && i->first <= end; ++i) {
    auto b = i->second.first->at_peak.find(i->second.second);
    if (b == i->second.first->at_peak.end()) continue;
    Block& x = b->second;
    if (!module.empty() && (x.module_dur < 0 || dur < x.module_dur)) {
      x.module = pooled(module);
      x.module_dur = dur;
    }
    if ((!phase.empty() || backward) && (x.phase_dur < 0 || dur < x.phase_dur)) {
      x.phase = pooled(phase.empty() ? std::string_view("backward") : phase);
      x.phase_dur = dur;
    }
  }
}

bool BlockReplay::up_to_peak(const Series& s, const BlockEvent& b) {
  const BlockPeakFinder::Peak& p = s.peak;
  if (p.tid != b.tid) return b.ts <= p.ts;
  if (s.pending) return b.ts < p.ts;  // those at its time are held until all are read
  return b.seq <= p.seq;              // 0: a peak by the track whose allocation is not in the input
}

// A peak by the track: of its thread's block events at its time, the alloc
// after which their own bytes stand highest (the earliest of equal ones) is
// the one that reached it -- the track's sample has that alloc's thread and
// time. Its events up to it join the replay; none an alloc: not found.
void BlockReplay::resolve(Series& s) {
  s.pending = false;
  --pending_;
  double sum = 0, best = 0;
  size_t cut = s.held.size();
  std::unordered_map<uint64_t, double> held_live;
  for (size_t i = 0; i < s.held.size(); ++i) {
    const HeldEvent& h = s.held[i];
    if (h.alloc) {
      sum += h.size;
      held_live[h.addr] = h.size;
      if (cut == s.held.size() || sum > best) best = sum, cut = i;
      continue;
    }
    if (auto f = held_live.find(h.addr); f != held_live.end()) {
      sum -= f->second;
      held_live.erase(f);
    } else if (auto a = s.at_peak.find(h.addr); a != s.at_peak.end() && !a->second.freed) {
      sum -= a->second.size;
    }
  }
  if (cut < s.held.size()) {
    for (size_t i = 0; i <= cut; ++i) {
      const HeldEvent& h = s.held[i];
      replay(s.at_peak, BlockEvent{h.alloc, h.addr, h.size, -1, h.op, h.device, h.pid, h.tid, h.ts, h.seq}, false);
    }
    s.peak.seq = s.held[cut].seq;
    s.found = true;
    for (const Enclosing& e : s.enclosing) enclose(e.pid, e.tid, e.ts, e.dur, e.module, e.phase, e.backward);
  }
  s.held.clear();
  s.enclosing.clear();
}

void BlockReplay::consume(std::string_view line, size_t cap) {
  BlockEvent b;
  DecodeStatus st;
  const int r = blocks_.decode(line, cap, b, st);
  if (r < 0) return;  // counted in pass 1
  if (r > 0) {
    auto s = series_.find(key(b.pid, b.device));
    if (s == series_.end()) return;  // not in pass 1 (the file changed between the passes)
    Series& x = s->second;
    replay(x.all, b, true);
    if (x.pending && b.tid == x.peak.tid) {
      if (b.ts == x.peak.ts) {
        x.held.push_back({b.alloc, b.addr, b.seq, b.size, b.ts, std::string(b.op), std::string(b.device),
                          std::string(b.pid), std::string(b.tid)});
        return;
      }
      if (b.ts > x.peak.ts) resolve(x);
    }
    if (up_to_peak(x, b)) replay(x.at_peak, b, false);
    return;
  }
  if (by_thread_.empty() && pending_ == 0) return;
  // The complete events that can name a live block's module or phase.
  if (line.find("\"module\"") == std::string_view::npos && line.find("\"phase\"") == std::string_view::npos &&
      line.find("\"autograd\"") == std::string_view::npos && line.find("\"compile\"") == std::string_view::npos)
    return;
  if (decoder_.decode(line, cap, ev_) != DecodeStatus::Ok || !ev_.is_complete() || !ev_.has_ts || !ev_.has_dur) return;
  const bool backward = ev_.cat == "autograd";
  if (pending_ != 0) {  // around a peak by the track not found yet: its blocks come when it is
    const int64_t end = saturating_add(ev_.ts_ns, ev_.dur_ns);
    for (auto& [k, x] : series_)
      if (x.pending && x.peak.tid == ev_.tid_text && ev_.ts_ns <= x.peak.ts && x.peak.ts <= end &&
          k.compare(0, k.find('\0'), ev_.pid_text) == 0)
        x.enclosing.push_back({std::string(ev_.pid_text), std::string(ev_.tid_text), std::string(ev_.module),
                               std::string(phase_key(ev_)), backward, ev_.ts_ns, ev_.dur_ns});
  }
  enclose(ev_.pid_text, ev_.tid_text, ev_.ts_ns, ev_.dur_ns, ev_.module, phase_key(ev_), backward);
}

namespace {

using Tally = std::map<std::string, std::pair<double, uint64_t>, std::less<>>;

std::vector<PeakHolder> top_rows(const Tally& in) {
  std::vector<PeakHolder> v;
  for (const auto& [k, x] : in) v.push_back({k, x.first, x.second, false});
  std::sort(v.begin(), v.end(), [](const PeakHolder& a, const PeakHolder& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.key < b.key;
  });
  if (v.size() > kPeakHolderRows) {
    PeakHolder rest{"(rest)", 0, 0, true};
    for (size_t i = kPeakHolderRows; i < v.size(); ++i) rest.bytes += v[i].bytes, rest.blocks += v[i].blocks;
    v.resize(kPeakHolderRows);
    v.push_back(rest);
  }
  return v;
}

// The step around `ts` in `p`: "step <i> (<label>)" (0-based, as the
// steps table), "" in none.
std::string step_key(const ProcessSteps* p, int64_t ts) {
  if (p == nullptr) return {};
  const auto& st = p->steps;
  for (size_t i = std::upper_bound(st.begin(), st.end(), ts,
                                   [](int64_t t, const StepInterval& s) { return t < s.ts; }) -
                  st.begin();
       i-- > 0;)
    if (st[i].end >= ts) return "step " + std::to_string(i) + (st[i].label.empty() ? "" : " (" + st[i].label + ")");
  return {};
}

}  // namespace

std::vector<PeakComposition> BlockReplay::finish(const StepPlan& plan, BlockProblems& problems,
                                                 std::vector<PeakComposition>& unheld) {
  std::vector<PeakComposition> out;
  for (auto& [k, s] : series_) {
    if (s.pending) resolve(s);
  }
  for (auto& [k, s] : series_) {
    const size_t cut = k.find('\0');
    const std::string pid = k.substr(0, cut), device = k.substr(cut + 1);
    for (const auto& [addr, x] : s.all) {
      if (x.freed) ++problems_.free_without_alloc;
      else ++problems_.never_freed;
    }
    if (s.peak.total < 0) continue;  // frees alone, without totals: no peak event to compose
    PeakComposition c;
    c.pid = pid;
    c.device = device;
    c.peak_ts_ns = s.peak.ts;
    c.peak = s.peak.total;
    if (s.peak.by_sample && !s.found) {
      unheld.push_back(std::move(c));
      continue;
    }
    const ProcessSteps* steps = nullptr;
    for (const ProcessSteps& p : plan.processes)
      if (p.pid == pid) steps = &p;
    Tally op, module, phase, step;
    for (const auto& [addr, x] : s.at_peak) {
      if (x.freed) continue;
      c.traced += x.size;
      ++c.blocks;
      for (auto [t, k] : {std::pair<Tally*, std::string>{&op, x.op ? *x.op : std::string()},
                          {&module, x.module ? *x.module : std::string()},
                          {&phase, x.phase ? *x.phase : std::string()},
                          {&step, step_key(steps, x.ts)}}) {
        auto& r = (*t)[k];
        r.first += x.size;
        ++r.second;
      }
    }
    c.before_trace = c.peak - c.traced;
    c.by_op = top_rows(op);
    c.by_module = top_rows(module);
    c.by_phase = top_rows(phase);
    c.by_step = top_rows(step);
    out.push_back(std::move(c));
  }
  const uint64_t bad = problems.bad;
  problems = problems_;
  problems.bad = bad;
  return out;
}

std::string block_problems_line(const BlockProblems& p) {
  std::string o;
  auto add = [&](uint64_t n, const char* one, const char* many) {
    if (n == 0) return;
    o += o.empty() ? "" : "; ";
    o += std::to_string(n) + ' ' + (n == 1 ? one : many);
  };
  add(p.bad, "memory block event without a numeric addr, size or total (skipped)",
      "memory block events without a numeric addr, size or total (skipped)");
  add(p.free_without_alloc, "free without an allocation in the trace (skipped)",
      "frees without an allocation in the trace (skipped)");
  add(p.alloc_over_live, "allocation at a live block's address (its free missing: taken as freed)",
      "allocations at a live block's address (their frees missing: taken as freed)");
  add(p.late, "block event earlier than one before it at its address (used by time)",
      "block events earlier than one before them at their address (used by time)");
  return o;
}

}  // namespace dftracer::analyze
