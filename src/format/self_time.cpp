#include "self_time.hpp"

#include <algorithm>
#include <map>

#include "trace_time.hpp"

namespace dftracer::format {

namespace {

constexpr char kSep = '\x1f';

// `outer` began no later and ended no earlier than [ts, end), and is clearly
// longer: a parent written before its child. A child a rounding error longer
// than its parent, written first as usual, is not mistaken for the parent.
bool contains_clearly(int64_t o_ts, int64_t o_end, int64_t ts, int64_t end) {
  return o_ts <= ts && o_end >= end && (o_end - o_ts) - (end - ts) > SelfTimeTracker::kRoundingSlackNs;
}

}  // namespace

std::vector<SelfTimeTracker::Run*> SelfTimeTracker::runs_that_meet(const std::vector<Run*>& runs) {
  // Each run's span over its unparented events and possible parents; a run
  // whose closed span touches no other run's holds no event another run's
  // could enclose or be enclosed by, so leaving it out changes no result.
  struct Span {
    int64_t lo, hi;
    size_t index;
  };
  std::vector<Span> spans;
  spans.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run* r = runs[i];
    Span s{INT64_MAX, INT64_MIN, i};
    for (const Open& o : r->leftover) s.lo = std::min(s.lo, o.ts), s.hi = std::max(s.hi, o.end);
    for (const Candidate& c : r->candidates) s.lo = std::min(s.lo, c.ts), s.hi = std::max(s.hi, c.end);
    if (s.lo <= s.hi) spans.push_back(s);
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  // Connected groups of touching spans; groups of one are left out. The
  // runs kept stay in their given order (it breaks ties in resolve()).
  std::vector<bool> keep(runs.size(), false);
  for (size_t i = 0; i < spans.size();) {
    size_t j = i + 1;
    int64_t hi = spans[i].hi;
    while (j < spans.size() && spans[j].lo <= hi) hi = std::max(hi, spans[j++].hi);
    if (j - i > 1)
      for (size_t k = i; k < j; ++k) keep[spans[k].index] = true;
    i = j;
  }
  std::vector<Run*> out;
  for (size_t i = 0; i < runs.size(); ++i)
    if (keep[i]) out.push_back(runs[i]);
  return out;
}

void SelfTimeTracker::begin_piece(size_t file_index) {
  finish();
  file_ = file_index;
}

int64_t SelfTimeTracker::overlap(const Open& o, int64_t ts, int64_t end) {
  if (o.block) {  // a folded run of events, with gaps between them
    if (o.ts >= ts || o.end <= o.ts) return o.dur;
    ++stats_.approximated;
    return static_cast<int64_t>(static_cast<double>(o.dur) * static_cast<double>(o.end - ts) /
                                static_cast<double>(o.end - o.ts));
  }
  return std::max<int64_t>(0, std::min(o.end, end) - std::max(o.ts, ts));
}

void SelfTimeTracker::finalize(Open& o, std::vector<Candidate>& candidates) {
  if (o.acc == nullptr) return;
  const int64_t self = std::max<int64_t>(0, o.self);
  *o.acc = saturating_add(*o.acc, self);
  if (o.candidate >= 0) candidates[o.candidate].self = self;
  o.acc = nullptr;  // counted once, even when it stays on as a leftover
  o.self = 0;
}

size_t SelfTimeTracker::fold_exact(ThreadState& t, size_t limit) {
  Folded& f = t.folded;
  size_t i = 0;
  for (; i < limit; ++i) {
    Open& o = t.stack[i];
    if (o.block) break;  // an estimated block stays on the stack
    finalize(o, t.candidates);
    if (o.claimed) continue;  // its parent, below it, already counted it
    if (!f.empty() && o.ts < f.last_end()) break;  // not a later sibling: keep it for the block fold
    f.end.push_back(o.end);
    f.cum.push_back(saturating_add(f.cum.empty() ? 0 : f.cum.back(), o.dur));
  }
  if (f.end.size() > kMaxFoldedEvents) {
    // The oldest half becomes one block (exact unless a parent splits it).
    const size_t half = f.end.size() / 2;
    const int64_t first_ts = f.far.block ? f.far.ts : f.end[0] - f.dur(0);
    const int64_t dropped = f.cum[half - 1];
    f.far = Open{first_ts, f.end[half - 1], saturating_add(f.far.block ? f.far.dur : 0, dropped), 0, nullptr, nullptr,
                 -1, false, true};
    f.end.erase(f.end.begin(), f.end.begin() + static_cast<std::ptrdiff_t>(half));
    f.cum.erase(f.cum.begin(), f.cum.begin() + static_cast<std::ptrdiff_t>(half));
    for (int64_t& c : f.cum) c -= dropped;
  }
  return i;
}

// Moves the older half of a long stack off it: to the exact folded siblings
// where it can, else (events that overlap, written in no clear order) into
// one block that keeps their summed time for a later parent.
void SelfTimeTracker::fold(ThreadState& t) {
  std::vector<Open>& stack = t.stack;
  const size_t half = stack.size() / 2;
  const size_t exact = fold_exact(t, half);
  if (exact < half) {
    Open block{stack[exact].ts, stack[exact].end, 0, 0, nullptr, nullptr, -1, false, true};
    for (size_t i = exact; i < half; ++i) {
      Open& o = stack[i];
      finalize(o, t.candidates);
      if (!o.claimed) block.dur = saturating_add(block.dur, o.dur);
      block.ts = std::min(block.ts, o.ts);
      block.end = std::max(block.end, o.end);
    }
    stack[exact] = block;
    stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(exact) + 1,
                stack.begin() + static_cast<std::ptrdiff_t>(half));
  }
  stack.erase(stack.begin(), stack.begin() + static_cast<std::ptrdiff_t>(exact));
  ++stats_.folded;
}

int64_t SelfTimeTracker::take_folded(Folded& f, int64_t ts, int64_t end) {
  const size_t n = f.end.size();
  // Sorted and disjoint: the events ending after ts are a suffix, all inside
  // [ts, end) but the first (may start before ts) and the one ending past
  // `end` (clock rounding); those after it start after `end`.
  const size_t i = static_cast<size_t>(std::upper_bound(f.end.begin(), f.end.end(), ts) - f.end.begin());
  const size_t k = static_cast<size_t>(std::upper_bound(f.end.begin(), f.end.end(), end) - f.end.begin());
  auto part = [&](size_t j) {
    return std::max<int64_t>(0, std::min(f.end[j], end) - std::max(f.end[j] - f.dur(j), ts));
  };
  int64_t taken = 0;
  if (i < n) taken = part(i);
  if (k > i + 1) taken = saturating_add(taken, f.cum[k - 1] - f.cum[i]);
  if (k < n && k > i) taken = saturating_add(taken, part(k));
  f.end.resize(i);
  f.cum.resize(i);
  if (i == 0 && f.far.block && f.far.end > ts) {  // reaches into the far block
    taken = saturating_add(taken, overlap(f.far, ts, end));
    f.far = Open{};
  }
  return taken;
}

void SelfTimeTracker::add(std::string_view pid, std::string_view tid, int64_t ts, int64_t dur, int64_t* acc,
                          const std::string* group_key) {
  push(thread(pid, tid), ts, saturating_add(ts, std::max<int64_t>(dur, 0)), std::max<int64_t>(dur, 0), acc, group_key);
}

SelfTimeTracker::ThreadState& SelfTimeTracker::thread(std::string_view pid, std::string_view tid) {
  // Events of a few threads alternate line by line: the recent ones are
  // found by comparing two short strings, without building a key.
  for (size_t i = 0; i < kRecent; ++i) {
    Recent& r = recent_[(recent_next_ - 1 - i) % kRecent];
    if (r.state && r.pid == pid && r.tid == tid) return *r.state;
  }
  key_.assign(std::to_string(file_)).append(1, kSep).append(pid).append(1, kSep).append(tid);
  auto it = threads_.find(key_);
  if (it == threads_.end()) it = threads_.emplace(key_, ThreadState{}).first;
  Recent& r = recent_[recent_next_++ % kRecent];
  r.pid.assign(pid);
  r.tid.assign(tid);
  r.state = &it->second;
  return it->second;
}

void SelfTimeTracker::push(ThreadState& t, int64_t ts, int64_t end, int64_t dur, int64_t* acc,
                           const std::string* key) {
  std::vector<Open>& st = t.stack;
  int64_t children = 0;
  bool below = true;  // every event on the stack was popped: the folded ones are next
  while (!st.empty()) {
    Open& top = st.back();
    if (top.end <= ts) {
      // Ended before this event began. Unclaimed, it may still find its
      // parent later (end order); claimed, its parent already counted it.
      if (!top.claimed) {
        below = false;
        break;
      }
    } else if (!top.block && contains_clearly(top.ts, top.end, ts, end)) {
      below = false;
      break;  // this event is inside the top: written parent first
    } else if (!top.claimed) {
      children = saturating_add(children, overlap(top, ts, end));
    }
    finalize(top, t.candidates);
    st.pop_back();
  }
  if (below && !t.folded.empty() && t.folded.last_end() > ts)
    children = saturating_add(children, take_folded(t.folded, ts, end));
  Open e{ts, end, dur, dur - children, acc, key, -1, false, false};
  if (!st.empty() && st.back().end > ts && !st.back().block) {
    st.back().self -= dur;  // a child of the top (parent written first)
    e.claimed = true;
  }
  if (ts < t.min_end) {
    // Began before every earlier event of this run ended: it may enclose
    // events of an earlier run of this thread (which all ended before this
    // run's did), read elsewhere; resolve() settles that.
    e.candidate = static_cast<int32_t>(t.candidates.size());
    t.candidates.push_back(Candidate{ts, end, 0, key, {}});
  }
  t.min_end = std::min(t.min_end, end);
  st.push_back(e);
  if (st.size() > kMaxOpenEvents) fold(t);
}

void SelfTimeTracker::finish() {
  for (auto& [thread, t] : threads_) {
    Run r;
    r.thread = thread;
    if (!t.folded.empty()) {
      // For other runs, the folded events are one block: exact for a parent
      // that encloses them all, estimated (and counted) for one that splits them.
      Folded& f = t.folded;
      Open block = f.far;
      if (!f.end.empty()) {
        if (!block.block) block = Open{f.end[0] - f.dur(0), 0, 0, 0, nullptr, nullptr, -1, false, true};
        block.end = f.end.back();
        block.dur = saturating_add(block.dur, f.cum.back());
      }
      r.leftover.push_back(block);
    }
    for (Open& o : t.stack) {
      if (!o.block && o.candidate < 0) {
        // Without a parent in this run: it may be the parent of another run's.
        o.candidate = static_cast<int32_t>(t.candidates.size());
        t.candidates.push_back(Candidate{o.ts, o.end, 0, o.key, {}});
      }
      finalize(o, t.candidates);
      if (!o.claimed) r.leftover.push_back(o);
    }
    for (Candidate& c : t.candidates) c.key = c.key_ptr ? *c.key_ptr : std::string();
    r.candidates = std::move(t.candidates);
    runs_.push_back(std::move(r));
  }
  threads_.clear();
  for (Recent& r : recent_) r.state = nullptr;
}

void SelfTimeTracker::merge(SelfTimeTracker& o) {
  for (Run& r : o.runs_) runs_.push_back(std::move(r));
  o.runs_.clear();
  stats_.approximated += o.stats_.approximated;
  stats_.folded += o.stats_.folded;
}

void SelfTimeTracker::resolve(const std::function<int64_t*(const std::string&)>& acc) {
  finish();
  std::map<std::string, std::vector<Run*>> by_thread;
  for (Run& r : runs_) by_thread[r.thread].push_back(&r);
  // Per thread: every run's unparented events and possible parents, by start
  // (outer first); each unparented event goes to the innermost possible
  // parent of another run that overlaps it. The order of the runs does not
  // matter (the reader hands the lines that straddle two pieces over last,
  // as one run of lines from all over the file).
  struct Item {
    int64_t ts, end;
    const Open* child;  // an unparented event of its run, or null
    Candidate* parent;  // a possible parent, or null (a folded block)
    size_t run;
  };
  for (auto& [thread, all_runs] : by_thread) {
    // Only runs whose spans meet another's can join: pieces of a file read
    // in time order usually do not, and then there is nothing to sort.
    const std::vector<Run*> runs = runs_that_meet(all_runs);
    if (runs.size() < 2) continue;  // nothing to join
    std::vector<Item> items;
    for (size_t k = 0; k < runs.size(); ++k) {
      Run& r = *runs[k];
      std::vector<bool> in_leftover(r.candidates.size(), false);
      for (const Open& o : r.leftover) {
        Candidate* c = o.candidate >= 0 ? &r.candidates[o.candidate] : nullptr;
        if (c) in_leftover[o.candidate] = true;
        items.push_back(Item{o.ts, o.end, &o, c, k});
      }
      for (size_t i = 0; i < r.candidates.size(); ++i)
        if (!in_leftover[i]) items.push_back(Item{r.candidates[i].ts, r.candidates[i].end, nullptr, &r.candidates[i], k});
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.end != b.end) return a.end > b.end;
      return a.run > b.run;
    });
    std::vector<Item*> open;  // possible parents that may enclose what comes next
    std::vector<int64_t> children(items.size(), 0);
    for (Item& it : items) {
      while (!open.empty() && open.back()->end <= it.ts) open.pop_back();
      // The innermost possible parent, if of another run (one of its own run
      // here did not enclose it there, so nothing here does).
      if (it.child && !open.empty() && open.back()->run != it.run) {
        const size_t at = static_cast<size_t>(open.back() - items.data());
        children[at] = saturating_add(children[at], overlap(*it.child, open.back()->ts, open.back()->end));
      }
      if (it.parent) open.push_back(&it);
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].parent || children[i] == 0) continue;
      Candidate& c = *items[i].parent;
      const int64_t take = std::min(children[i], c.self);
      if (take <= 0) continue;
      if (int64_t* a = acc(c.key)) *a = saturating_sub(*a, take);
      c.self -= take;
    }
  }
  runs_.clear();
}

}  // namespace dftracer::format
