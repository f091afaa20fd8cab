#include "memory_peak.hpp"

#include <algorithm>
#include <charconv>

#include "memory_args.hpp"
#include "step_finder.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

constexpr std::string_view kAddrKey = "\"addr\":";  // format::kBlockArgAddr as a key

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
    series_[key(k.first, k.second)].peak = p;
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

void BlockReplay::enclose(const Event& e) {
  const bool backward = e.cat == "autograd";
  if (e.module.empty() && e.phase.empty() && !backward) return;
  auto t = by_thread_.find(key(e.pid_text, e.tid_text));
  if (t == by_thread_.end()) return;
  const int64_t end = saturating_add(e.ts_ns, e.dur_ns);
  for (auto i = t->second.lower_bound(e.ts_ns); i != t->second.end() && i->first <= end; ++i) {
    auto b = i->second.first->at_peak.find(i->second.second);
    if (b == i->second.first->at_peak.end()) continue;
    Block& x = b->second;
    if (!e.module.empty() && (x.module_dur < 0 || e.dur_ns < x.module_dur)) {
      x.module = pooled(e.module);
      x.module_dur = e.dur_ns;
    }
    if ((!e.phase.empty() || backward) && (x.phase_dur < 0 || e.dur_ns < x.phase_dur)) {
      x.phase = pooled(e.phase.empty() ? std::string_view("backward") : e.phase);
      x.phase_dur = e.dur_ns;
    }
  }
}

void BlockReplay::consume(std::string_view line, size_t cap) {
  BlockEvent b;
  DecodeStatus st;
  const int r = blocks_.decode(line, cap, b, st);
  if (r < 0) return;  // counted in pass 1
  if (r > 0) {
    auto s = series_.find(key(b.pid, b.device));
    if (s == series_.end()) return;  // not in pass 1 (the file changed between the passes)
    replay(s->second.all, b, true);
    const BlockPeakFinder::Peak& peak = s->second.peak;
    if (peak.tid == b.tid ? b.seq <= peak.seq : b.ts <= peak.ts) replay(s->second.at_peak, b, false);
    return;
  }
  if (by_thread_.empty()) return;
  // The complete events that can name a live block's module or phase.
  if (line.find("\"module\"") == std::string_view::npos && line.find("\"phase\"") == std::string_view::npos &&
      line.find("\"autograd\"") == std::string_view::npos)
    return;
  if (decoder_.decode(line, cap, ev_) != DecodeStatus::Ok || !ev_.is_complete() || !ev_.has_ts || !ev_.has_dur) return;
  enclose(ev_);
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

std::vector<PeakComposition> BlockReplay::finish(const StepPlan& plan, BlockProblems& problems) {
  std::vector<PeakComposition> out;
  for (auto& [k, s] : series_) {
    const size_t cut = k.find('\0');
    const std::string pid = k.substr(0, cut), device = k.substr(cut + 1);
    for (const auto& [addr, x] : s.all) {
      if (x.freed) ++problems_.free_without_alloc;
      else ++problems_.never_freed;
    }
    if (s.peak.total < 0) continue;  // frees alone, without totals: no peak event to compose
    const ProcessSteps* steps = nullptr;
    for (const ProcessSteps& p : plan.processes)
      if (p.pid == pid) steps = &p;
    PeakComposition c;
    c.pid = pid;
    c.device = device;
    c.peak_ts_ns = s.peak.ts;
    c.peak = s.peak.total;
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
