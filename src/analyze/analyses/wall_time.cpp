#include "wall_time.hpp"

#include <algorithm>

#include "runtime_files.hpp"
#include "steps.hpp"

namespace dftracer::analyze {

void IntervalUnion::add(int64_t ts, int64_t end) {
  if (end <= ts || end - ts < min_len_) return;  // zero-length events take no wall time
  v_.emplace_back(ts, end);
  // Amortized: merge once the unsorted tail is as long as the merged head.
  if (v_.size() - normalized_ > std::max<size_t>(normalized_, 4096)) normalize();
}

void IntervalUnion::normalize() {
  if (normalized_ == v_.size()) return;
  std::sort(v_.begin(), v_.end());
  for (;;) {
    size_t n = 0;
    for (const auto& s : v_) {
      if (n && s.first <= v_[n - 1].second + min_gap_) v_[n - 1].second = std::max(v_[n - 1].second, s.second);
      else v_[n++] = s;
    }
    v_.resize(n);
    if (v_.size() <= kMaxSpans) break;
    if (drop_short_) {
      min_len_ = min_len_ ? 2 * min_len_ : 1000;  // from 1 us, doubling
      v_.erase(std::remove_if(v_.begin(), v_.end(), [&](const auto& s) { return s.second - s.first < min_len_; }),
               v_.end());
      if (v_.size() <= kMaxSpans) break;
      continue;
    }
    min_gap_ = min_gap_ ? 2 * min_gap_ : 1000;  // from 1 us, doubling
  }
  normalized_ = v_.size();
}

void IntervalUnion::merge(IntervalUnion& o) {
  min_gap_ = std::max(min_gap_, o.min_gap_);
  min_len_ = std::max(min_len_, o.min_len_);
  drop_short_ = drop_short_ || o.drop_short_;
  v_.insert(v_.end(), o.v_.begin(), o.v_.end());
  o.v_.clear();
  o.normalized_ = 0;
  normalized_ = 0;
  normalize();
}

void IntervalUnion::append(IntervalUnion& o) {
  min_gap_ = std::max(min_gap_, o.min_gap_);
  min_len_ = std::max(min_len_, o.min_len_);
  v_.insert(v_.end(), o.v_.begin(), o.v_.end());
  o.v_.clear();
  o.normalized_ = 0;
}

int64_t WallParts::total() const {
  int64_t t = untraced;
  for (int64_t v : by_category) t += v;
  return t;
}

namespace {
constexpr size_t kForward = 1, kComm = 4, kData = 5, kGc = 6, kCheckpoint = 7, kOther = 8;
static_assert(std::string_view(kStepCategories[kForward]) == "forward" &&
              std::string_view(kStepCategories[kComm]) == "comm" &&
              std::string_view(kStepCategories[kData]) == "data" && std::string_view(kStepCategories[kGc]) == "gc" &&
              std::string_view(kStepCategories[kCheckpoint]) == "checkpoint" &&
              std::string_view(kStepCategories[kOther]) == "other");
}  // namespace

ProcessWall::ProcessWall() {
  static_assert(kGcIndex == kGc && kCheckpointIndex == kCheckpoint);
  cats_[kGc].drop_short_past_cap();
  gc_other_.drop_short_past_cap();
}

void ProcessWall::gc_in(int64_t ts, int64_t end, uint64_t* count, int64_t* longest_ns) const {
  *count = 0;
  *longest_ns = 0;
  for (const IntervalUnion* u : {&cats_[kGc], &gc_other_})
    for (const auto& [a, b] : u->spans())
      if (a >= ts && b <= end) {
        ++*count;
        *longest_ns = std::max(*longest_ns, b - a);
      }
}

void ProcessWall::add_io(std::string_view fhash, int64_t ts, int64_t end) {
  auto it = io_.find(std::string(fhash));
  if (it == io_.end()) it = io_.emplace(std::string(fhash), IntervalUnion()).first;
  it->second.add(ts, end);
}

void ProcessWall::merge(ProcessWall& o) {
  for (size_t c = 0; c < cats_.size(); ++c) cats_[c].merge(o.cats_[c]);
  gc_other_.merge(o.gc_other_);
  checkpoint_other_.merge(o.checkpoint_other_);
  optimizer_scopes_.merge(o.optimizer_scopes_);
  for (auto& [fhash, u] : o.io_) io_[fhash].merge(u);
  o.io_.clear();
  first_ = std::min(first_, o.first_);
  last_ = std::max(last_, o.last_);
}

void ProcessWall::finish(const RuntimeFiles* runtime) {
  for (auto& [fhash, u] : io_) cats_[runtime != nullptr && runtime->contains(fhash) ? kOther : kData].append(u);
  io_.clear();
  for (auto& c : cats_) c.normalize();
  gc_other_.normalize();
  checkpoint_other_.normalize();
  add_optimizer_scopes();
  // A garbage collection alone does not widen the run: it runs wherever
  // allocations trigger it, also while the interpreter imports, builds the
  // model and exits (a 0.27 s full collection at teardown), before and after
  // everything else the trace holds; inside the run it is counted.
  for (size_t i = 0; i <= cats_.size(); ++i) {
    const auto& s = i < cats_.size() ? cats_[i].spans() : checkpoint_other_.spans();
    if (s.empty() || i == kGc) continue;
    first_ = std::min(first_, s.front().first);
    last_ = std::max(last_, s.back().second);
  }
}

void ProcessWall::add_optimizer_scopes() {
  optimizer_scopes_.normalize();
  if (optimizer_scopes_.spans().empty()) return;
  constexpr size_t kForward = 1, kBackward = 2, kOptimizer = 3;
  static_assert(std::string_view(kStepCategories[kForward]) == "forward" &&
                std::string_view(kStepCategories[kBackward]) == "backward" &&
                std::string_view(kStepCategories[kOptimizer]) == "optimizer");
  const std::vector<std::pair<int64_t, int64_t>>&fwd = cats_[kForward].spans(), &bwd = cats_[kBackward].spans();
  std::vector<std::pair<int64_t, int64_t>> inner;  // forward and backward spans, by start
  std::merge(fwd.begin(), fwd.end(), bwd.begin(), bwd.end(), std::back_inserter(inner));
  for (const auto& [ts, end] : optimizer_scopes_.spans()) {
    int64_t at = ts;  // the scope's instants before `at` are placed
    // Spans beginning inside it, at its very start too unless they hold it
    // (in whole microseconds a closure's first op can begin with its scope).
    auto it = std::lower_bound(inner.begin(), inner.end(), std::make_pair(ts, INT64_MIN));
    for (; it != inner.end() && it->first < end; ++it) {
      if (it->first == ts && it->second > end) continue;
      if (it->first > at) cats_[kOptimizer].add(at, it->first);
      at = std::max(at, it->second);
    }
    if (at < end) cats_[kOptimizer].add(at, end);
  }
  cats_[kOptimizer].normalize();
  optimizer_scopes_ = IntervalUnion();
}

int64_t ProcessWall::closed_gap_ns() const {
  int64_t g = 0;
  for (const auto& c : cats_) g = std::max(g, c.closed_gap_ns());
  return g;
}

namespace {
using Spans = std::vector<std::pair<int64_t, int64_t>>;

// The spans of `s` inside [ts, end), clipped.
Spans clip(const Spans& s, int64_t ts, int64_t end) {
  Spans out;
  auto it = std::upper_bound(s.begin(), s.end(), std::make_pair(ts, INT64_MAX));
  if (it != s.begin() && std::prev(it)->second > ts) --it;
  for (; it != s.end() && it->first < end; ++it) out.emplace_back(std::max(it->first, ts), std::min(it->second, end));
  return out;
}

// Length of `a` not covered by `claimed`; both sorted and disjoint.
int64_t uncovered(const Spans& a, const Spans& claimed) {
  int64_t len = 0;
  size_t j = 0;
  for (auto [ts, end] : a) {
    int64_t at = ts;
    while (j < claimed.size() && claimed[j].second <= at) ++j;
    for (size_t k = j; k < claimed.size() && claimed[k].first < end; ++k) {
      if (claimed[k].first > at) len += claimed[k].first - at;
      at = std::max(at, claimed[k].second);
      if (at >= end) break;
    }
    if (at < end) len += end - at;
  }
  return len;
}

Spans unite(const Spans& a, const Spans& b) {
  Spans all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  Spans out;
  for (const auto& s : all) {
    if (!out.empty() && s.first <= out.back().second) out.back().second = std::max(out.back().second, s.second);
    else out.push_back(s);
  }
  return out;
}
}  // namespace

WallParts ProcessWall::partition(int64_t ts, int64_t end) const {
  WallParts p;
  if (end <= ts) return p;
  Spans claimed;
  auto claim = [&](const IntervalUnion& u, size_t c) {
    Spans mine = clip(u.spans(), ts, end);  // normalized by finish()
    p.by_category[c] += uncovered(mine, claimed);
    claimed = unite(claimed, mine);
  };
  for (size_t c : kWallPriority) {
    claim(cats_[c], c);
    if (c == kForward) claim(gc_other_, kGc);  // other threads' collections: after the model's work
    if (c == kComm) claim(checkpoint_other_, kCheckpoint);  // other threads' checkpoints: after its waits too
  }
  int64_t covered = 0;
  for (const auto& s : claimed) covered += s.second - s.first;
  p.untraced = (end - ts) - covered;
  return p;
}

}  // namespace dftracer::analyze
