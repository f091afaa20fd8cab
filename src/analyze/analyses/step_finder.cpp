#include "step_finder.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string_view>

#include "device_track.hpp"
#include "event_category.hpp"
#include "median.hpp"
#include "steps.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {
// Past this many top-level events on one main thread, later ones are not kept
// (memory bound; a training loop has a few per step).
constexpr size_t kMaxTopLevel = size_t{1} << 20;
// The same for each other thread of a process without a tid == pid thread.
constexpr size_t kMaxTopLevelOther = size_t{1} << 16;
// Region occurrences kept per thread (16 bytes each).
constexpr size_t kMaxRegionOccurrences = size_t{1} << 21;


bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

// What the first step's walk looks for a work by: its name, and a compiled
// frame's call by its frame, not its compile ("Torch-Compiled Region: 0/1",
// the recompile for a smaller last batch or automatic dynamic shapes, is the
// frame "0/0" the first iteration ran: by name the later steps did not all
// hold it, and the first step began after it and its compile).
std::string_view need_key(std::string_view name) {
  constexpr std::string_view kRegion = "Torch-Compiled Region: ";
  if (!starts_with(name, kRegion)) return name;
  const size_t slash = name.find('/', kRegion.size());
  return slash == std::string_view::npos ? name : name.substr(0, slash);
}

// Cats the capture sources write for ops, graphs, compile work and their own
// records: never a user's loop region. Kineto's ops (`cpu_op`) and the CUDA
// runtime and driver calls (dftracer's CUDA source and Kineto write them on
// the launching thread) repeat as often as the loop runs ops or launches
// work: no iteration either.
bool tracer_cat(std::string_view cat) {
  return cat == "dynamo" || cat == "compile" || cat == "aten" || cat == "autograd" || cat == "comm" ||
         cat == "dftracer" || cat == "cpu_op" || cat == "cuda_runtime" || cat == "cuda_driver" || is_io_cat(cat);
}

// The model's own work: an op, a graph call, compile or optimizer work; not
// a DataLoader thread's ops (phase data: a dataset's transforms).
bool model_work(const Event& e, std::string_view category) {
  if (e.phase == "data") return false;
  return !e.phase.empty() || category == "compile" || category == "optimizer" || category == "forward" ||
         category == "backward" || e.cat == "dynamo" || e.cat == "aten" || e.cat == "autograd";
}

// A user region that could bound steps: not an op, graph call, compile, I/O,
// data-loading or optimizer event, nor one of torch's wrappers of a compiled
// call (its guard check, "TorchDynamo Cache Lookup", opens each call of a
// compiled function: 4 per iteration of a loop whose compiled optimizer step
// breaks into frames, each once taken for a step).
bool region_candidate(const Event& e, std::string_view category) {
  if (category != "other" || !e.phase.empty() || tracer_cat(e.cat)) return false;
  if (e.cat == "torch" && (starts_with(e.name, "CompiledFunction") || starts_with(e.name, "Torch-Compiled Region") ||
                           starts_with(e.name, "TorchDynamo Cache Lookup") || starts_with(e.name, "aten::") ||
                           starts_with(e.name, "autograd::")))
    return false;
  return true;
}

bool is_step_mark(const Event& e) {
  return e.ph == "i" && e.name == "step" && e.cat == "dftracer" && !e.step.empty() && e.has_ts;
}

// Keeps the thread's events that no other of its events contains: the set
// stays an antichain under containment, so on a well-nested thread the only
// possible container of a new event is the last one starting at or before
// it. Equal intervals are both kept (their order is not known across pieces).
void add_top(StepFinder::TopLevel& top, int64_t ts, int64_t end, std::string_view name, size_t category,
             size_t cap) {
  auto first = top.lower_bound(ts);
  for (auto it = first; it != top.end() && it->first == ts; ++it)
    if (it->second.end > end) return;  // inside a top-level event starting with it
  if (first != top.begin() && std::prev(first)->second.end >= end) return;  // inside the last earlier one
  // A thread writes an event when it ends, so of two with the same span in
  // whole microseconds (an op and the one op it runs: relu, clamp_min) the
  // later one holds the earlier. Zero-length ones may be siblings: both kept.
  for (auto it = top.lower_bound(ts); it != top.end() && it->first <= end;) {
    const bool same = it->first == ts && it->second.end == end;
    if (it->second.end <= end && (!same || end > ts)) it = top.erase(it);  // now known not to be top-level
    else ++it;
  }
  if (top.size() < cap) top.emplace(ts, StepFinder::Top{end, std::string(name), category});
}

// Torch's RecordFunction around an optimizer's step ("Optimizer.step#AdamW.step"),
// or the capture's event around a GradScaler's step ("GradScaler.step#AdamW.step"):
// it holds the optimizer's step, or stands for it where the scaler skipped it
// (overflowed gradients), so an iteration whose update was skipped still ends
// a step. The outer one is kept (outermost), so the two never count twice.
bool is_optimizer_step(const Event& e) {
  return starts_with(e.name, "Optimizer.step") || starts_with(e.name, "GradScaler.step");
}

// args.opt (the capture's number of the optimizer), -1 when absent or not a number.
int64_t optimizer_number(std::string_view v) {
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && end == v.data() + v.size() && n >= 0 ? n : -1;
}

// Work events that never begin a training step: an inference call (an
// evaluation between steps), and eager work run with grad mode off (an
// evaluation's ops, but also a no_grad block inside an iteration: a teacher
// model's forward, a metric, an EMA update; so, unlike an inference call,
// it still counts in the first step's walk back to the loop's start).
constexpr size_t kInferenceWork = kNumStepCategories;
constexpr size_t kGradOffWork = kNumStepCategories + 1;

// Inference work: a compiled inference graph call or a grad-off eager op.
bool inference_work(const StepFinder::Top& t) { return t.category == kInferenceWork || t.category == kGradOffWork; }

// The Event::extra_args slots StepFinder captures.
constexpr size_t kArgOpt = 0, kArgGrad = 1, kArgFhash = 2, kArgValue = 3;

// What the LibTorch observer recorded, read once per event (add_event) for
// every rule that tells eager work apart, so that they cannot drift apart.
struct Eager {
  // An op or a scope (cat aten, torch; not an autograd node): with grad mode
  // on it is "forward" wherever it runs (a batch indexed, a model called
  // without no_grad) and trains nothing until a backward.
  bool op = false;
  // Run with grad mode off: args.grad 0 (the observer writes it on the
  // outermost such op or scope of its thread), or phase "inference" on an
  // op, scope or autograd node (what runs inside it).
  bool grad_off = false;
  // Torch's scope around an Inductor-compiled call with grad mode off: an
  // inference loop's model call (its ops nest in it), inference work; with
  // grad on it stays no work (a training step begins with the ops in it).
  bool compiled_call = false;
  bool inference = false;  // args.phase "inference" (any event)
};

Eager eager_of(const Event& e) {
  Eager x;
  x.inference = e.phase == "inference";
  // By length first: most events' cat is none of the three.
  const std::string_view cat = e.cat;
  const bool torch = cat.size() == 5 && cat == "torch";
  x.op = torch || (cat.size() == 4 && cat == "aten");
  const bool observer = x.op || (cat.size() == 8 && cat == "autograd");
  const std::string_view grad = e.extra_args[kArgGrad];
  x.grad_off = (grad.size() == 1 && grad[0] == '0') || (observer && x.inference);
  x.compiled_call = torch && x.grad_off && starts_with(e.name, "Torch-Compiled Region");
  return x;
}

// The category a work event is kept under: kGradOffWork for eager work run
// with grad mode off that is no optimizer, backward or compile work,
// kInferenceWork for other inference work (a compile backend's inference
// graph call and its ops).
size_t work_category(const Event& e, size_t category, const Eager& eager) {
  constexpr size_t forward = 1, other = kNumStepCategories - 1;
  const bool inference = eager.inference;
  if (eager.grad_off && (e.phase.empty() || inference) && (category == other || category == forward))
    return kGradOffWork;
  if (inference) return kInferenceWork;
  return category;
}

// Training work: a forward or backward graph call or op (a compiled
// training forward, an autograd node, dft_ai's compute.forward/backward),
// but not the LibTorch observer's eager ops and scopes in forward (Eager::op).
bool trains_work(size_t wc, const Eager& eager) {
  constexpr size_t forward = 1, backward = 2;
  return wc == backward || (wc == forward && !eager.op);
}

void add_thread_event(StepFinder::Thread& t, const Event& e, const Eager& eager, int64_t end, size_t category,
                      bool candidate, bool work, size_t top_cap, size_t& capped) {
  // A thread writes an event when it ends: the zero-length work a work event
  // holds came just before it, at the end of the list (kept small: most are
  // nested). Only work hides work, as in `work` (a region around the loop does not).
  if (work)
    while (!t.blips.empty() && t.blips.back().ts >= e.ts_ns && t.blips.back().ts <= end) t.blips.pop_back();
  if (end > e.ts_ns) add_top(t.top, e.ts_ns, end, e.name, category, top_cap);
  if (work && end == e.ts_ns) {
    if (t.blips.size() >= kMaxRegionOccurrences) ++capped;
    else t.blips.push_back({e.ts_ns, work_category(e, category, eager), std::hash<std::string_view>{}(e.name)});
  }
  if (work && end > e.ts_ns) {
    const size_t wc = work_category(e, category, eager);
    t.trains = t.trains || trains_work(wc, eager);
    if (wc == kInferenceWork && !e.graph.empty()) {
      // An inference loop's steps tell its graphs apart (inference_bounded).
      std::string named(e.name);
      named.append("#").append(e.graph);
      add_top(t.work, e.ts_ns, end, named, wc, top_cap);
    } else {
      add_top(t.work, e.ts_ns, end, e.name, wc, top_cap);
    }
  }
  if (starts_with(e.name, "enumerate(DataLoader)") && end > e.ts_ns) {
    if (t.fetches.size() >= kMaxRegionOccurrences) ++capped;
    else t.fetches.push_back({e.ts_ns, end});
  }
  if (is_optimizer_step(e) && end > e.ts_ns) {
    if (t.optimizer.size() >= kMaxRegionOccurrences) {
      ++capped;
    } else {
      t.optimizer.push_back({e.ts_ns, end, optimizer_number(e.extra_args[kArgOpt])});
      if (e.ts_ns < t.optimizer_first) {
        t.optimizer_first = e.ts_ns;
        t.optimizer_name.assign(e.name);
      }
    }
  }
  if (!candidate) return;
  if (t.region_count >= kMaxRegionOccurrences) {
    ++capped;
    return;
  }
  auto it = t.regions.find(e.name);  // no allocation for a name seen before
  if (it == t.regions.end()) it = t.regions.emplace(std::string(e.name), std::vector<StepFinder::Span>{}).first;
  it->second.push_back({e.ts_ns, end});
  ++t.region_count;
}

// Drops what lies inside the thread's set-aside spans (its garbage
// collections and checkpoints, add_event): their nested work, blips, module
// calls, fetches and region occurrences are not the loop's. A thread writes
// an event when it ends, so the nested ones came first; and a file read in
// pieces may hold them in another piece than their holder: hence after the
// merge, once. The top-level events need nothing: a checkpoint there holds
// its own (add_top), and a collection's are the events a wait holds anyway.
void drop_set_aside(StepFinder::Thread& t) {
  if (t.aside.empty()) return;
  std::vector<StepFinder::Span>& a = t.aside;
  std::sort(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.ts < y.ts; });
  size_t n = 0;  // disjoint, by start
  for (const StepFinder::Span& s : a) {
    if (n > 0 && s.ts <= a[n - 1].end) a[n - 1].end = std::max(a[n - 1].end, s.end);
    else a[n++] = s;
  }
  a.resize(n);
  auto inside = [&](int64_t ts, int64_t end) {
    auto it = std::upper_bound(a.begin(), a.end(), ts, [](int64_t v, const StepFinder::Span& s) { return v < s.ts; });
    return it != a.begin() && end <= std::prev(it)->end;
  };
  for (auto it = t.work.begin(); it != t.work.end();) it = inside(it->first, it->second.end) ? t.work.erase(it) : std::next(it);
  auto drop = [](auto& v, auto pred) { v.erase(std::remove_if(v.begin(), v.end(), pred), v.end()); };
  drop(t.blips, [&](const StepFinder::Blip& b) { return inside(b.ts, b.ts); });
  drop(t.calls, [&](const StepFinder::ModelCall& c) { return inside(c.ts, c.end); });
  drop(t.fetches, [&](const StepFinder::Span& f) { return inside(f.ts, f.end); });
  for (auto it = t.regions.begin(); it != t.regions.end();) {
    drop(it->second, [&](const StepFinder::Span& s) { return inside(s.ts, s.end); });
    it = it->second.empty() ? t.regions.erase(it) : std::next(it);
  }
  a.clear();
}

// Appends `from` to `into` up to kMaxRegionOccurrences, counting the rest in `capped`.
template <typename T>
void append_capped(std::vector<T>& into, std::vector<T>& from, size_t& capped) {
  const size_t room = kMaxRegionOccurrences - std::min(kMaxRegionOccurrences, into.size());
  const size_t n = std::min(room, from.size());
  capped += from.size() - n;
  std::move(from.begin(), from.begin() + n, std::back_inserter(into));
}

void merge_thread(StepFinder::Thread& into, StepFinder::Thread& from, size_t top_cap, size_t& capped) {
  for (auto& [ts, t] : from.top) add_top(into.top, ts, t.end, t.name, t.category, top_cap);
  for (auto& [ts, t] : from.work) add_top(into.work, ts, t.end, t.name, t.category, top_cap);
  append_capped(into.optimizer, from.optimizer, capped);
  append_capped(into.fetches, from.fetches, capped);
  append_capped(into.blips, from.blips, capped);
  // A file read in pieces: a blip at the end of one piece is held by a work
  // event written in the next, so it was never popped. The merged work
  // tells (its top-level events; a nested holder's outermost work holds it
  // too) where the blip lies strictly inside one: on one thread that is
  // nesting. One at a work's very end may be a sibling written after it
  // (popped in one piece only when written before): kept.
  into.blips.erase(std::remove_if(into.blips.begin(), into.blips.end(),
                                  [&](const StepFinder::Blip& b) {
                                    auto w = into.work.upper_bound(b.ts);
                                    return w != into.work.begin() && std::prev(w)->second.end > b.ts;
                                  }),
                   into.blips.end());
  append_capped(into.calls, from.calls, capped);
  append_capped(into.aside, from.aside, capped);
  into.trains = into.trains || from.trains;
  if (from.optimizer_first < into.optimizer_first) {
    into.optimizer_first = from.optimizer_first;
    into.optimizer_name = std::move(from.optimizer_name);
  }
  for (auto& [name, occ] : from.regions) {
    const size_t room = kMaxRegionOccurrences - std::min(kMaxRegionOccurrences, into.region_count);
    const size_t n = std::min(room, occ.size());
    capped += occ.size() - n;
    auto& dst = into.regions[name];
    dst.insert(dst.end(), occ.begin(), occ.begin() + n);
    into.region_count += n;
  }
}

using Span = StepFinder::Span;
using OptStep = StepFinder::OptStep;

// The lower of the two middle values (the middle one for an odd count): what
// most of a sample is at, with fewer than half of it outliers (one
// evaluation among two waits).
template <typename T>
T lower_median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + (v.size() - 1) / 2, v.end());
  return v[(v.size() - 1) / 2];
}

// A region's (or the optimizer's) occurrences by start, the ones inside an
// earlier one of the same name (recursion) dropped.
template <typename S>
std::vector<S> outermost(std::vector<S> occ) {
  std::sort(occ.begin(), occ.end(), [](const S& a, const S& b) { return a.ts != b.ts ? a.ts < b.ts : a.end > b.end; });
  std::vector<S> out;
  for (const S& s : occ)
    if (out.empty() || s.ts >= out.back().end) out.push_back(s);
  return out;
}

struct Candidate {
  std::string name;
  std::vector<Span> occ;
  int64_t coverage = 0;
  // Per occurrence: the gap after it is no step's (an evaluation between
  // two optimizer-ended steps), whatever its length.
  std::vector<bool> apart;
};

int name_class(std::string_view name) {
  if (contains_nocase(name, "epoch")) return 2;
  if (contains_nocase(name, "step") || contains_nocase(name, "iter") || contains_nocase(name, "batch")) return 0;
  return 1;
}

// Step starts from marks (exact) or from each arg value's first event.
struct StepStart {
  int64_t ts;
  std::string value;
};

std::vector<StepStart> starts_from_marks(std::vector<std::pair<int64_t, std::string>> marks) {
  std::sort(marks.begin(), marks.end());
  std::vector<StepStart> out;
  for (auto& [ts, v] : marks)
    if (out.empty() || out.back().value != v) out.push_back({ts, v});
  return out;
}

// Each value's first event; a step's start moves back over the compile work
// that ran right before it on the main thread (the first call of a new graph
// compiles before any event carries the step).
std::vector<StepStart> starts_from_args(const StepFinder::Process& p, const StepFinder::TopLevel& top) {
  std::vector<StepStart> out;
  for (const auto& [v, span] : p.by_arg) out.push_back({span.first, v});
  std::sort(out.begin(), out.end(), [](const StepStart& a, const StepStart& b) { return a.ts < b.ts; });
  const size_t compile = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t floor = i ? out[i - 1].ts : INT64_MIN;
    auto it = top.lower_bound(out[i].ts);
    while (it != top.begin()) {
      auto prev = std::prev(it);
      if (prev->first <= floor || prev->second.category != compile || prev->second.end > out[i].ts) break;
      out[i].ts = prev->first;
      it = prev;
    }
  }
  return out;
}

// The candidate whose occurrences hold one step start each, in order (start k
// after occurrence k-1 ended and before occurrence k ends); the one covering
// most if several do.
const Candidate* region_matching(const std::vector<Candidate>& cands, const std::vector<StepStart>& starts) {
  const Candidate* best = nullptr;
  for (const Candidate& c : cands) {
    if (c.occ.size() != starts.size()) continue;
    bool ok = true;
    for (size_t k = 0; k < starts.size() && ok; ++k)
      ok = (k == 0 || starts[k].ts >= c.occ[k - 1].end) && starts[k].ts <= c.occ[k].end;
    if (ok && (!best || c.coverage > best->coverage)) best = &c;
  }
  return best;
}

const Candidate* region_by_shape(const std::vector<Candidate>& cands) {
  int64_t most = 0;
  for (const Candidate& c : cands) most = std::max(most, c.coverage);
  const Candidate* best = nullptr;
  for (const Candidate& c : cands) {
    if (2 * c.coverage < most) continue;
    if (!best) {
      best = &c;
      continue;
    }
    const int a = name_class(c.name), b = name_class(best->name);
    // Among step-like names the one covering most (train_step over eval_step);
    // among others the fewest occurrences (the step over its layers).
    const bool fewer = a != 0 && c.occ.size() != best->occ.size();
    if (a != b ? a < b
               : fewer ? c.occ.size() < best->occ.size()
                       : c.coverage != best->coverage ? c.coverage > best->coverage : c.name < best->name)
      best = &c;
  }
  return best;
}

// Region-bounded steps: occurrence i reaches occurrence i+1's start unless
// another repeated region (an epoch) holds i but not i+1, the gap is far
// beyond the usual one, or the candidate says the gap is outside (apart).
std::vector<StepInterval> region_steps(const Candidate& step, const std::vector<Candidate>& cands) {
  const std::vector<bool>& apart = step.apart;
  const auto& occ = step.occ;
  std::vector<int64_t> gaps, durs;
  for (size_t i = 0; i < occ.size(); ++i) {
    durs.push_back(occ[i].end - occ[i].ts);
    if (i + 1 < occ.size()) gaps.push_back(std::max<int64_t>(0, occ[i + 1].ts - occ[i].end));
  }
  const int64_t gap_med = median_of(gaps), dur_med = median_of(durs);
  const int64_t long_gap = std::max(4 * gap_med, gap_med + dur_med);
  auto holder = [](const Candidate& c, const Span& s) -> const Span* {
    auto it = std::upper_bound(c.occ.begin(), c.occ.end(), s.ts, [](int64_t ts, const Span& o) { return ts < o.ts; });
    if (it == c.occ.begin()) return nullptr;
    --it;
    return it->ts <= s.ts && s.end <= it->end ? &*it : nullptr;
  };
  std::vector<StepInterval> out;
  for (size_t i = 0; i < occ.size(); ++i) {
    StepInterval s{occ[i].ts, occ[i].end, step.name};
    if (i + 1 < occ.size()) {
      bool cut = occ[i + 1].ts - occ[i].end > long_gap || (i < apart.size() && apart[i]);
      for (const Candidate& c : cands) {
        if (cut || c.name == step.name) continue;
        const Span* h = holder(c, occ[i]);
        cut = h && h != holder(c, occ[i + 1]);
      }
      if (!cut) s.end = std::max(occ[i].end, occ[i + 1].ts);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The optimizer steps (outermost, sorted) inside s: how many, counted up to
// cap, and their time.
struct OptimizerIn {
  size_t n = 0;
  int64_t time = 0;
};
OptimizerIn optimizer_in(const std::vector<OptStep>& opt, const Span& s, size_t cap) {
  OptimizerIn in;
  auto it = std::lower_bound(opt.begin(), opt.end(), s.ts, [](const OptStep& o, int64_t ts) { return o.ts < ts; });
  for (; it != opt.end() && it->ts <= s.end && in.n < cap; ++it)
    if (it->end <= s.end) ++in.n, in.time += it->end - it->ts;
  return in;
}

// The optimizer cycle (step_finder.hpp): the steps that close one, how many
// optimizer steps one holds (the median over the last eight), and whether
// args.opt said so (else every step closes a cycle of one).
struct OptimizerCycle {
  std::vector<OptStep> closing;
  size_t size = 1;
  bool numbered = false;
};
OptimizerCycle optimizer_cycle(const std::vector<OptStep>& opt) {
  OptimizerCycle c;
  c.numbered = !opt.empty() && std::all_of(opt.begin(), opt.end(), [](const OptStep& o) { return o.opt >= 0; });
  if (!c.numbered) {
    c.closing = opt;
    return c;
  }
  std::vector<size_t> sizes;
  size_t n = 0;
  for (const OptStep& o : opt) {
    ++n;
    if (o.opt != opt.back().opt) continue;
    c.closing.push_back(o);
    sizes.push_back(n);
    n = 0;
  }
  if (sizes.size() > 8) sizes.erase(sizes.begin(), sizes.end() - 8);
  c.size = std::max<size_t>(1, median_of(sizes));
  return c;
}

// The candidates whose occurrences hold one optimizer cycle each: a training
// step's region, not a micro-batch's (mostly none), a layer's or an epoch's
// (many). At least two thirds of the occurrences hold the cycle's optimizer
// steps and the others none (a GradScaler skips the optimizer step of an
// iteration whose gradients overflowed). Without args.opt the cycle is one
// optimizer step, or the same few ones in each occurrence of a step-like
// name (the fewest that any candidate holds). A candidate whose occurrences
// spend most of their time in their optimizer steps, and hold under a
// quarter of a cycle's time outside the optimizer steps, is around the
// optimizer steps alone (an `update` region), not an iteration. Neither
// alone says so: the time between two occurrences of a step region can be
// idle (a wait for data, a sleep stretched by a busy machine) and dwarf the
// iteration's work, and a small model's optimizer step can be shorter than
// its caller's Python around it.
std::vector<Candidate> holding_optimizer_cycles(const std::vector<Candidate>& cands, const OptimizerCycle& cycle,
                                                const std::vector<OptStep>& opt) {
  constexpr size_t kMaxCycle = 64;  // unnumbered optimizer steps one step region may hold
  // A cycle's time outside the optimizer steps: the usual time between two
  // closing steps' ends, less the optimizer steps there.
  std::vector<int64_t> outside;
  for (size_t i = 1; i < cycle.closing.size(); ++i) {
    const Span s{cycle.closing[i - 1].end, cycle.closing[i].end};
    outside.push_back(s.end - s.ts - optimizer_in(opt, s, SIZE_MAX).time);
  }
  const int64_t cycle_outside = median_of(outside);
  std::vector<std::pair<size_t, const Candidate*>> held;  // (optimizer steps per occurrence, candidate)
  for (const Candidate& c : cands) {
    std::map<size_t, size_t> by_count;  // optimizer steps held -> occurrences
    for (const Span& s : c.occ) ++by_count[optimizer_in(opt, s, kMaxCycle + 1).n];
    size_t k = 0, most = 0;
    for (const auto& [n, occurrences] : by_count)
      if (n && occurrences > most) k = n, most = occurrences;
    const size_t none = by_count.count(0) ? by_count.at(0) : 0;
    if (!k || 3 * most < 2 * c.occ.size() || most + none != c.occ.size()) continue;
    if (cycle.numbered ? k != cycle.size : k > kMaxCycle || (k > 1 && name_class(c.name) != 0)) continue;
    std::vector<int64_t> own, inside;
    for (const Span& s : c.occ)
      if (const OptimizerIn in = optimizer_in(opt, s, k + 1); in.n == k) {
        own.push_back(s.end - s.ts - in.time);
        inside.push_back(in.time);
      }
    const int64_t own_med = median_of(own);
    if (4 * own_med < cycle_outside && own_med < median_of(inside)) continue;
    held.emplace_back(k, &c);
  }
  size_t fewest = SIZE_MAX;
  for (const auto& [k, c] : held) fewest = std::min(fewest, k);
  std::vector<Candidate> out;
  for (const auto& [k, c] : held)
    if (k == fewest) out.push_back(*c);
  return out;
}

// Optimizer-ended steps: step k ends with optimizer step k of `opt` (the
// steps closing a cycle: optimizer_cycle). Step k > 0 begins at the end of
// optimizer step k-1, unless its first work after it (an
// inference call, an evaluation, never begins one, nor a zero_grad; moved
// back over the compile and optimizer work right before it) comes far later
// than usual after more works than usual: then there. The
// first step begins where the works before its optimizer step first hold
// those every one of the last steps has (by name and count; a name that no
// work before it has, such as a zero_grad after each step, is not waited
// for), and the compile work right before them: the setup before the loop (a
// model's init ops, the batch made once) stays outside. Four things keep a
// name the first iteration lacks from pulling the walk back into the setup:
// a work whose interval another work shares exactly is not counted (in whole
// microseconds a sub-microsecond op and its caller can share one, and which
// contains the other is unknown, so the name is top-level by chance); a
// zero-length work is (the same op lasting 0 there); a walk that ends with a
// name still missing begins the step at the last work it needed; and the
// walk never crosses a gap with no work longer than the longest later step,
// each from where it begins (mostly the previous optimizer step's end),
// unless compile work borders it, backward work follows it, it lies
// between the last backward and the optimizer step, or some of every
// backward work the later steps have is still missing (an earlier
// micro-batch's): the untraced stretches of the first iteration's compile
// (the backward compiled after the forward ran) are often longer than a
// later step, and on a loaded machine so is a preemption before the
// backward, before the optimizer step or between micro-batches.
Candidate optimizer_bounded(const std::vector<OptStep>& opt, const StepFinder::Thread& t,
                            const std::vector<Span>& fetches) {
  const StepFinder::TopLevel &work = t.work, &top = t.top;
  const std::vector<StepFinder::ModelCall>& calls = t.calls;
  const std::string& name = t.optimizer_name;
  constexpr size_t compile = 0, optimizer = 3;
  // Work that can begin a step; work the first step's walk counts (grad-off
  // work too: a teacher's no_grad forward opening each iteration). Optimizer
  // work (a zero_grad) begins none: `opt.step(); opt.zero_grad()` is the
  // previous iteration's end, and an evaluation run after it would otherwise
  // look like the next iteration's work. A zero_grad opening an iteration is
  // still its own: the start moves back over it (back_over).
  auto begins = [](const StepFinder::Top& t) {
    return t.category != compile && t.category != optimizer && t.category != kInferenceWork &&
           t.category != kGradOffWork;
  };
  auto counted = [](size_t category) { return category != compile && category != kInferenceWork; };
  // In whole microseconds an op nested in a grad-off op can share its
  // interval (relu's clamp_min): both are kept as top-level, and the nested
  // one, which carries no grad arg, must not begin a step either.
  // Whether another work has exactly its interval and satisfies pred.
  auto twin = [&](StepFinder::TopLevel::const_iterator it, auto&& pred) {
    const auto [lo, hi] = work.equal_range(it->first);
    for (auto o = lo; o != hi; ++o)
      if (o != it && o->second.end == it->second.end && pred(o->second)) return true;
    return false;
  };
  auto begins_here = [&](StepFinder::TopLevel::const_iterator it) {
    return begins(it->second) &&
           !twin(it, [&](const StepFinder::Top& t) { return !begins(t) && t.category != compile; });
  };
  auto counted_here = [&](StepFinder::TopLevel::const_iterator it) { return counted(it->second.category); };
  // Moves a start back over the work of the given categories right before it, not before floor.
  auto back_over = [&](int64_t ts, int64_t floor, std::initializer_list<size_t> categories) {
    auto it = work.lower_bound(ts);
    while (it != work.begin()) {
      auto prev = std::prev(it);
      if (prev->first < floor || prev->second.end > ts ||
          std::find(categories.begin(), categories.end(), prev->second.category) == categories.end())
        break;
      ts = prev->first;
      it = prev;
    }
    return ts;
  };
  auto back_over_compile = [&](int64_t ts, int64_t floor) { return back_over(ts, floor, {compile}); };
  Candidate c{name, {}, 0};
  std::vector<int64_t> walked_from;  // per step: where its works the first step's walk looks for begin
  for (size_t k = 0; k < opt.size(); ++k) {
    int64_t ts = opt[k].ts;
    if (k > 0) {
      // No work of the main thread before this optimizer step (its forward
      // and backward untraced, their collectives on another thread): the
      // previous one's end.
      auto first = [&](auto&& which) {
        for (auto it = work.lower_bound(opt[k - 1].end); it != work.end() && it->first < ts; ++it)
          if (which(it) && it->first != ts) return back_over(it->first, opt[k - 1].end, {compile, optimizer});
        return opt[k - 1].end;
      };
      walked_from.push_back(first(counted_here));
      ts = first(begins_here);
    } else {
      walked_from.push_back(ts);
    }
    c.occ.push_back({ts, opt[k].end});
  }
  if (c.occ.empty()) return c;
  // A step runs from the previous optimizer step's end: the untraced work
  // before an iteration's first traced call (Dynamo's guards, the model's
  // Python before its first graph, data made untraced) is its own. Only a
  // wait far beyond the usual one (an evaluation, a checkpoint) stays
  // outside: that step begins at its first work.
  std::vector<int64_t> durs, busy;
  for (size_t k = 1; k < c.occ.size(); ++k) {
    durs.push_back(c.occ[k].end - c.occ[k].ts);
    int64_t t = 0;
    for (auto it = work.lower_bound(c.occ[k].ts); it != work.end() && it->first < c.occ[k].end; ++it)
      t = saturating_add(t, it->second.end - it->first);
    busy.push_back(t);
  }
  const int64_t dur_med = median_of(durs), busy_med = lower_median(busy);
  // A short evaluation (a few no_grad forwards, its wait within the bound
  // below) is told by its grad-off work against the usual wait's: an EMA
  // update or a metric every iteration makes the same work in every wait,
  // an evaluation more of it (by count: a preempted op's time grows, its
  // count does not) and longer, by more than the usual wait's and 1/32 of
  // the (lower median) step's traced work (one forward of a small model
  // beside its backward and AdamW's step under the observer; a metric's few
  // ops take less). Not of a step's wall time: that holds untraced work (a
  // batch read, a sleep; all of the wait when an evaluation opens with
  // grad-on work, below), which can make it many times its traced work and
  // a short evaluation's forwards less than 1/32 of it. The grad-off work is
  // counted up to the iteration's first backward work, not only up to its
  // first work: an evaluation can open with grad-on ops (a loader's seed, a
  // batch moved to the device before the no_grad, as transformers' Trainer
  // does), which would otherwise end the wait before it. Grad-off work inside
  // every iteration (a metric before the backward, a teacher's forward) is in
  // the usual count. Where the LibTorch observer wrote the model's calls, an
  // evaluation is also told by them, whatever its time (a small model's
  // forwards on a loaded machine can take less than its metric's ops): more
  // grad-off calls than the usual wait's of a module the steps train (one
  // called with grad on in them), and it ends with the last of them.
  constexpr size_t backward = 2;
  std::set<uint64_t> trained;
  for (const StepFinder::ModelCall& m : calls)
    if (!m.grad_off) trained.insert(m.name_hash);
  std::vector<const StepFinder::ModelCall*> runs;  // grad-off calls of a trained module, by start
  for (const StepFinder::ModelCall& m : calls)
    if (m.grad_off && trained.count(m.name_hash)) runs.push_back(&m);
  std::sort(runs.begin(), runs.end(), [](const auto* a, const auto* b) { return a->ts < b->ts; });
  std::vector<int64_t> any_runs;  // grad-off calls of any module, by start
  for (const StepFinder::ModelCall& m : calls)
    if (m.grad_off) any_runs.push_back(m.ts);
  std::sort(any_runs.begin(), any_runs.end());
  std::vector<size_t> off_n, run_n, any_n;
  std::vector<int64_t> off_t;
  std::vector<std::vector<int64_t>> run_ends;  // per wait: those calls' ends, in order
  std::vector<std::vector<int64_t>> off_ends;  // per wait: its grad-off works' ends, in order
  // The zero-length grad-off works count too: in whole microseconds which of
  // an EMA update's ops last 0 varies from one iteration to the next (52 to
  // 59 of its 64 on a loaded machine), and counted without them a wait whose
  // update had one op preempted read as an evaluation.
  std::vector<int64_t> off_blips;
  for (const StepFinder::Blip& b : t.blips)
    if (b.category == kInferenceWork || b.category == kGradOffWork) off_blips.push_back(b.ts);
  std::sort(off_blips.begin(), off_blips.end());
  // Per wait: the ends of its top-level checkpoint events that save or load
  // a file, and of its barriers, in order. Not a bare state_dict() or
  // load_state_dict(): a DQN copying its network into the target one every
  // few steps, an EMA, move weights in memory, and the iteration goes on.
  // Nor another collective: a metric all-reduced every few steps for the
  // log is the loop's own.
  constexpr size_t kApart = 2;
  const size_t checkpoint = step_category_index("checkpoint"), comm = step_category_index("comm");
  auto apart_kind = [&](const StepFinder::Top& e) -> size_t {  // kApart: neither
    if (e.category == checkpoint)
      return ends_with(e.name, ".state_dict") || ends_with(e.name, ".load_state_dict") ? kApart : 0;
    return e.category == comm && e.name == "barrier" ? 1 : kApart;
  };
  std::vector<std::vector<int64_t>> apart_ends[kApart];
  for (size_t k = 1; k < c.occ.size(); ++k) {
    int64_t until = c.occ[k].ts;
    for (auto it = work.lower_bound(opt[k - 1].end); it != work.end() && it->first < opt[k].ts; ++it)
      if (it->second.category == backward) {
        until = std::max(until, it->first);
        break;
      }
    for (auto& ends : apart_ends) ends.emplace_back();
    for (auto it = top.lower_bound(opt[k - 1].end); it != top.end() && it->first < until; ++it)
      if (const size_t a = apart_kind(it->second); a < kApart) apart_ends[a].back().push_back(it->second.end);
    size_t n = 0;
    int64_t t = 0;
    off_ends.emplace_back();
    for (auto it = work.lower_bound(opt[k - 1].end); it != work.end() && it->first < until; ++it)
      if (inference_work(it->second)) {
        ++n, t = saturating_add(t, it->second.end - it->first);
        off_ends.back().push_back(it->second.end);
      }
    const size_t timed = n;
    for (auto b = std::lower_bound(off_blips.begin(), off_blips.end(), opt[k - 1].end);
         b != off_blips.end() && *b < until; ++b, ++n)
      off_ends.back().push_back(*b);
    if (n > timed) std::sort(off_ends.back().begin(), off_ends.back().end());
    off_n.push_back(n);
    off_t.push_back(t);
    auto r = std::lower_bound(runs.begin(), runs.end(), opt[k - 1].end,
                              [](const StepFinder::ModelCall* m, int64_t v) { return m->ts < v; });
    run_ends.emplace_back();
    for (; r != runs.end() && (*r)->ts < until; ++r) run_ends.back().push_back((*r)->end);
    run_n.push_back(run_ends.back().size());
    any_n.push_back(std::lower_bound(any_runs.begin(), any_runs.end(), until) -
                    std::lower_bound(any_runs.begin(), any_runs.end(), opt[k - 1].end));
  }
  const size_t usual_n = lower_median(off_n), usual_runs = lower_median(run_n);
  const int64_t usual_t = lower_median(off_t);
  // A wait with more of those calls than usual is told by them alone: more
  // than twice the usual count (no_grad calls that vary by one, RL rollouts
  // of 1 or 2, are no evaluation, however long); other waits by time.
  auto runs_the_model = [&](size_t k) { return run_n[k - 1] > 2 * usual_runs; };
  // Where the observer wrote the model's calls, an evaluation runs a model
  // (the trained one's class, or another: a metric's network): grad-off ops
  // alone, every few steps, are the loop's logging (an accuracy, weight and
  // gradient norms under no_grad), however long they take.
  const size_t usual_any = lower_median(any_n);
  auto evaluation = [&](size_t k) {
    if (off_n[k - 1] <= usual_n) return false;
    if (run_n[k - 1] > usual_runs) return runs_the_model(k);
    if (!trained.empty() && any_n[k - 1] <= usual_any) return false;
    return off_t[k - 1] - usual_t > std::max(usual_t, busy_med / 32);
  };
  // A checkpoint, or a barrier, is told by its events alone, whatever
  // its time: a wait holding more of them than the usual wait, up to the
  // iteration's first backward work, is no iteration's own (a save every
  // few steps; a `dist.barrier()` after an epoch, which on the ranks that
  // do not save waits for the one that does; a save every iteration is the
  // usual wait's).
  // Counted past the first work: the Trainer's loss logging (grad-on ops)
  // can run between the optimizer step and the save, and ended the wait
  // before it. The step begins after them (all but the usual count's last).
  size_t usual_apart[kApart];
  for (size_t a = 0; a < kApart; ++a) {
    std::vector<size_t> n;
    for (const auto& ends : apart_ends[a]) n.push_back(ends.size());
    usual_apart[a] = lower_median(n);
  }
  auto apart_end = [&](size_t k) {  // where the last of the wait's extra ones ends; INT64_MIN: none
    int64_t end = INT64_MIN;
    for (size_t a = 0; a < kApart; ++a) {
      const std::vector<int64_t>& ends = apart_ends[a][k - 1];
      if (ends.size() > usual_apart[a]) end = std::max(end, ends[ends.size() - usual_apart[a] - 1]);
    }
    return end;
  };
  auto apart = [&](size_t k) { return apart_end(k) != INT64_MIN; };
  // An evaluation's step begins after it: at the first work after the
  // evaluation's grad-off works (all but the usual count's last ones, the
  // iteration's own; or its model calls but the usual count's last ones, where
  // usual work, an EMA update, ran before it too). A checkpoint's or a
  // barrier's, after them.
  for (size_t k = 1; k < c.occ.size(); ++k) {
    if (!evaluation(k) && !apart(k)) continue;
    int64_t eval_end = INT64_MIN;
    if (evaluation(k)) eval_end = off_ends[k - 1][off_n[k - 1] - usual_n - 1];
    if (evaluation(k) && runs_the_model(k)) eval_end = std::max(eval_end, run_ends[k - 1][run_n[k - 1] - usual_runs - 1]);
    eval_end = std::max(eval_end, apart_end(k));
    for (auto it = work.lower_bound(eval_end); it != work.end() && it->first < opt[k].ts; ++it)
      if (begins_here(it)) {
        c.occ[k].ts = std::max(c.occ[k].ts, back_over(it->first, eval_end, {compile, optimizer}));
        break;
      }
  }
  // The usual wait, over every wait up to its step's start: an evaluation's
  // wait counts whole, whether the evaluation opens with grad-on work or not.
  // A wait far beyond it is an evaluation or a checkpoint only when it holds
  // more than the usual wait does: more works (an evaluation's ops or
  // inference calls, its compile) or more top-level events of the main thread
  // (a region around a checkpoint's save). A wait that holds the usual ones,
  // only longer, is the iteration's own: the process preempted, a slow batch
  // read untraced. With steps of a few milliseconds one preemption is longer
  // than a step, and cutting it out would shorten the step by most of it.
  std::vector<int64_t> gaps;
  std::vector<size_t> wait_works, wait_top;
  auto count = [](const StepFinder::TopLevel& events, int64_t from, int64_t to, auto&& which) {
    size_t n = 0;
    for (auto it = events.lower_bound(from); it != events.end() && it->first < to; ++it) n += which(it->second);
    return n;
  };
  auto any = [](const StepFinder::Top&) { return true; };
  for (size_t k = 1; k < c.occ.size(); ++k) {
    gaps.push_back(c.occ[k].ts - opt[k - 1].end);
    wait_works.push_back(count(work, opt[k - 1].end, c.occ[k].ts, any));
    wait_top.push_back(count(top, opt[k - 1].end, c.occ[k].ts, any));
  }
  const int64_t gap_med = median_of(gaps);
  const int64_t long_gap = std::max(4 * gap_med, gap_med + dur_med);
  const size_t usual_works = lower_median(wait_works), usual_top = lower_median(wait_top);
  auto more_than_usual = [&](size_t k) { return wait_works[k - 1] > usual_works || wait_top[k - 1] > usual_top; };
  auto late = [&](size_t k) {
    return (c.occ[k].ts - opt[k - 1].end > long_gap && more_than_usual(k)) || evaluation(k) || apart(k);
  };
  auto step_start = [&](size_t k) { return late(k) ? c.occ[k].ts : opt[k - 1].end; };
  c.apart.assign(c.occ.size(), false);
  for (size_t k = 1; k < c.occ.size(); ++k) c.apart[k - 1] = late(k);
  int64_t ts = opt[0].ts;
  if (c.occ.size() == 1) {  // nothing to compare with: all the work before it
    if (!work.empty()) ts = std::min(ts, work.begin()->first);
  } else {
    // The works every one of the last (up to 8) steps has, by name, each as
    // often as the step with fewest: an op the observer records in some
    // iterations only (a detach between two autograd nodes) would otherwise
    // send the walk back to the model's construction.
    auto shared = [&](StepFinder::TopLevel::const_iterator it) { return twin(it, [](const StepFinder::Top&) { return true; }); };
    auto counts = [&](StepFinder::TopLevel::const_iterator it) { return counted(it->second.category) && !shared(it); };
    std::map<std::string_view, size_t> need;
    std::set<std::string_view> backward_names;  // of the works needed: the backward ones
    const size_t from = c.occ.size() > 9 ? c.occ.size() - 8 : 1;
    // Where the LibTorch observer wrote the model's calls and every one of
    // those steps calls the trained model, the work before its first call
    // (the previous iteration's tail after its optimizer step -- a running
    // loss, a scheduler's ops --, the zero_grad, the batch moved to the
    // device) is needed apart (need_pre): the first iteration has no
    // previous one, and looking for the tail's ops sent the walk back into
    // the setup (a DDP wrapper's, a model's initialisation's). They are
    // looked for within the usual (median) such stretch before the first
    // iteration's first call (pre_span), and past it (a first iteration is
    // slower: an RL rollout's first policy calls) only over as many works as
    // such a stretch holds at most, with no gap longer than 4 times the
    // usual longest one (the setup before the loop: the data built
    // untraced between).
    std::vector<int64_t> call_starts;  // the trained model's calls (grad on), by start
    std::vector<std::pair<int64_t, int64_t>> call_spans;  // the same, with their ends
    for (const StepFinder::ModelCall& m : calls)
      if (!m.grad_off) call_starts.push_back(m.ts), call_spans.emplace_back(m.ts, m.end);
    std::sort(call_starts.begin(), call_starts.end());
    std::sort(call_spans.begin(), call_spans.end());
    bool split_pre = !call_starts.empty();
    std::vector<int64_t> call0(c.occ.size(), INT64_MIN);  // per step: its first call
    for (size_t k = from; k < c.occ.size() && split_pre; ++k) {
      auto it = std::lower_bound(call_starts.begin(), call_starts.end(), walked_from[k]);
      if (it == call_starts.end() || *it >= c.occ[k].end) split_pre = false;
      else call0[k] = *it;
    }
    std::map<std::string_view, size_t> need_pre;
    std::vector<int64_t> pre_spans, pre_gaps;  // per step: its stretch before the call, its longest gap there
    size_t pre_works = 0;
    int64_t longest = 0;
    for (size_t k = from; k < c.occ.size(); ++k) {
      longest = std::max(longest, c.occ[k].end - step_start(k));
      std::map<std::string_view, size_t> here, here_pre;
      int64_t last_end = INT64_MIN, pre_gap = 0;  // the pre stretch's previous work's end, its longest gap
      size_t n_pre = 0;
      for (auto it = work.lower_bound(walked_from[k]); it != work.end() && it->first < c.occ[k].end; ++it)
        if (counts(it)) {
          const bool pre = split_pre && it->first < call0[k];
          ++(pre ? here_pre : here)[need_key(it->second.name)];
          if (pre) {
            if (last_end != INT64_MIN) pre_gap = std::max(pre_gap, it->first - last_end);
            last_end = std::max(last_end, it->second.end);
            ++n_pre;
          }
          if (it->second.category == backward) backward_names.insert(need_key(it->second.name));
        }
      if (split_pre && last_end != INT64_MIN) pre_gap = std::max(pre_gap, call0[k] - last_end);
      if (split_pre) pre_spans.push_back(call0[k] - walked_from[k]), pre_gaps.push_back(pre_gap);
      pre_works = std::max(pre_works, n_pre);
      if (k == from) {
        need = std::move(here);
        need_pre = std::move(here_pre);
        continue;
      }
      for (auto [all, one] : {std::make_pair(&need, &here), std::make_pair(&need_pre, &here_pre)})
        for (auto& [n, count] : *all) {
          auto h = one->find(n);
          count = std::min(count, h == one->end() ? size_t{0} : h->second);
        }
    }
    std::map<std::string_view, size_t> before;  // what the works before the first optimizer step can give
    const auto first_end = work.upper_bound(opt[0].ts);
    for (auto it = work.begin(); it != first_end; ++it)
      if (auto n = need.find(need_key(it->second.name)); n != need.end() && counts(it)) ++before[n->first];
    size_t missing = 0, short_backward = 0, needed_backward = 0;  // backward names: still short, needed at all
    for (auto& [n, k] : need) {
      missing += k = std::min(k, before[n]);
      if (backward_names.count(n) && k) ++short_backward, ++needed_backward;
    }
    // Zero-length work counts too (a warm op under a microsecond lasts 0 in
    // whole microseconds and is in no TopLevel: the first iteration's detach
    // of the loss can be one where every later step's lasts 1 µs), once per
    // start: of an op and the op it runs sharing one, either may be top-level.
    std::map<uint64_t, std::string_view> needed_by_hash;
    for (const auto& [n, k] : need)
      if (k) needed_by_hash.emplace(std::hash<std::string_view>{}(n), n);
    std::vector<StepFinder::Blip> blips;  // before the first optimizer step, by start (threads merged in any order)
    std::copy_if(t.blips.begin(), t.blips.end(), std::back_inserter(blips),
                 [&](const StepFinder::Blip& b) { return b.ts < opt[0].ts && needed_by_hash.count(b.name_hash); });
    std::stable_sort(blips.begin(), blips.end(),
                     [](const StepFinder::Blip& a, const StepFinder::Blip& b) { return a.ts < b.ts; });
    auto blip = blips.end();
    int64_t reach = ts;  // the earliest work walked over, compile work too
    size_t reach_category = optimizer;  // that work's (at first the optimizer step's)
    // Whether the walk is still between the first optimizer step and the
    // backward before it (its clipping, its unscale): only where one is.
    bool before_backward = false;
    for (auto it = work.begin(); it != first_end && !before_backward; ++it) before_backward = it->second.category == backward;
    // Where the last needed work was found: a walk that ends with names
    // still missing (the first iteration lacks one; a setup without it)
    // begins there, not at the farthest work it walked over.
    int64_t found = ts;
    int64_t counted_blip_ts = INT64_MAX;
    // Takes one work (or blip) of the walk back; false where the walk stops before it.
    auto take = [&](int64_t start, int64_t end, size_t cat, bool counts_here, std::string_view name) {
      // A gap next to compile work is the compile's own (Dynamo and AOT
      // autograd's untraced Python between its phases, the first call's
      // wait for a backward compile): the loop's first iteration compiles,
      // the setup before it does not. So is a gap before backward work (its
      // forward is its own), one between the first optimizer step and the
      // backward before it (the process preempted there on a loaded
      // machine), and any gap while the walk still misses some of every
      // backward work the later steps have: an earlier micro-batch's
      // backward (gradient accumulation) lies before it. Not one after a
      // setup's warm-up backward: the first iteration's own backward gave
      // what was needed, or most of it (one node rounded to 0 us and
      // popped does not open the setup).
      const bool own_gap = cat == compile || reach_category == compile || reach_category == backward ||
                           before_backward || (short_backward > 0 && short_backward == needed_backward);
      if (end < reach && reach - end > longest && !own_gap) return false;  // the setup before the loop
      if (cat == backward) before_backward = false;
      if (start < reach) reach = start, reach_category = cat;
      if (!counts_here) return true;
      ts = std::min(ts, start);
      auto n = need.find(need_key(name));
      if (n != need.end() && n->second) {
        --n->second, --missing, found = start;
        if (!n->second && backward_names.count(n->first)) --short_backward;
      }
      return true;
    };
    for (auto it = first_end; missing;) {
      const bool blip_next = blip != blips.begin() && (it == work.begin() || std::prev(blip)->ts > std::prev(it)->first);
      if (blip_next) {
        // Only a blip the walk still needs is taken: others neither count
        // nor split a gap (a setup's zero-length op amid the gap before the loop).
        const StepFinder::Blip& b = *--blip;
        const std::string_view named = needed_by_hash.at(b.name_hash);
        if (b.ts == counted_blip_ts || need.at(named) == 0 || !counted(b.category)) continue;
        if (!take(b.ts, b.ts, b.category, true, named)) break;
        counted_blip_ts = b.ts;
      } else if (it != work.begin()) {
        --it;
        if (!take(it->first, it->second.end, it->second.category, counts(it), it->second.name)) break;
      } else {
        break;
      }
    }
    if (missing) ts = found;
    if (split_pre) {  // the first iteration's own work before its first call
      // The usual stretch (a loop logging every few steps makes some longer).
      const int64_t pre_span = median_of(pre_spans), pre_gap = median_of(pre_gaps);
      // The call holding the walk's start (the call's own first op may be
      // one only the first iteration runs); none: the start itself, never an
      // earlier call (a forward on a sample batch before the loop).
      auto c0 = std::upper_bound(call_spans.begin(), call_spans.end(), std::make_pair(ts, INT64_MAX));
      const int64_t anchor = c0 != call_spans.begin() && std::prev(c0)->second > ts ? std::prev(c0)->first : ts;
      ts = anchor;
      size_t pre_missing = 0, past = 0;
      for (const auto& [n, k] : need_pre) pre_missing += k;
      int64_t edge = anchor;  // the earliest work walked over
      for (auto it = work.lower_bound(anchor); it != work.begin() && pre_missing;) {
        --it;
        if (!counts(it)) continue;
        if (edge - it->second.end > longest) break;  // the setup before the loop
        if (it->first < anchor - pre_span && (++past > pre_works || edge - it->second.end > 4 * pre_gap)) break;
        edge = std::min(edge, it->first);
        auto n = need_pre.find(need_key(it->second.name));
        if (n == need_pre.end() || n->second == 0) continue;
        --n->second, --pre_missing;
        ts = std::min(ts, it->first);
      }
      // A zero_grad right before is the iteration's own, however long the
      // first one takes (0.69 ms where the later ones took 20 us).
      ts = back_over(ts, ts - longest, {optimizer});
    }
    ts = back_over_compile(ts, INT64_MIN);
  }
  // A step that begins at its first work, not at the previous optimizer
  // step's end (the first, one after an evaluation), begins with its batch's
  // DataLoader fetch when every later step holds one (a worker-fed loop):
  // the fetch holding that work or the latest one ending before it with no
  // work between, not before `floor`. The other steps hold theirs already:
  // a first fetch that waits for the workers to start is the first step's,
  // as the first fetch of each later epoch is its step's.
  auto holds_fetch = [&](size_t k) {
    auto f = std::lower_bound(fetches.begin(), fetches.end(), opt[k - 1].end,
                              [](const Span& s, int64_t v) { return s.ts < v; });
    return f != fetches.end() && f->ts < opt[k].ts;
  };
  bool fed = c.occ.size() > 1;
  for (size_t k = 1; k < c.occ.size() && fed; ++k) fed = holds_fetch(k);
  auto with_fetch = [&](int64_t start, int64_t floor) {
    if (!fed) return start;
    auto f = std::upper_bound(fetches.begin(), fetches.end(), start, [](int64_t v, const Span& s) { return v < s.ts; });
    if (f == fetches.begin()) return start;
    const Span& fetch = *std::prev(f);
    if (fetch.ts < floor) return start;
    if (fetch.end > start) return fetch.ts;
    auto w = work.lower_bound(fetch.end);
    return w == work.end() || w->first >= start ? fetch.ts : start;
  };
  c.occ[0].ts = with_fetch(ts, INT64_MIN);
  for (size_t k = 1; k < c.occ.size(); ++k) c.occ[k].ts = late(k) ? with_fetch(step_start(k), opt[k - 1].end) : step_start(k);
  for (const Span& s : c.occ) c.coverage = saturating_add(c.coverage, s.end - s.ts);
  return c;
}

// Where the main thread runs inference work and neither trains nor takes
// training steps (fewer than two optimizer steps), the candidates at least
// two thirds of whose occurrences hold some: a user's `infer` region around
// each iteration, or a layer's, not a scope torch opens while the model is
// built (`detach` in a parameter's initialisation). Else all of them.
std::vector<Candidate> holding_inference(const std::vector<Candidate>& cands, const StepFinder::Thread& main) {
  const StepFinder::TopLevel& work = main.work;
  bool any = false;
  for (const auto& [ts, w] : work) any = any || inference_work(w);
  if (!any || main.trains) return cands;
  std::vector<Candidate> out;
  for (const Candidate& c : cands) {
    size_t holding = 0;
    for (const Span& s : c.occ)
      for (auto it = work.lower_bound(s.ts); it != work.end() && it->first < s.end; ++it)
        if (inference_work(it->second) && it->second.end <= s.end) {
          ++holding;
          break;
        }
    if (3 * holding >= 2 * c.occ.size()) out.push_back(c);
  }
  return out;
}

// The loop in a sequence of keys (an inference loop's graph calls or ops, in
// order): the period and the stretch where keys[j] == keys[j + period]. The
// candidate periods are the distances from an anchor key to its later
// occurrences, the anchors at a half, three quarters and seven eighths of the
// sequence (the loop is most of an inference run, or its end: the setup's
// grad-off work, a model's weights initialised under no_grad, comes first);
// each stretch is grown from its anchor, and the one covering most
// keys wins, the shortest period among equal ones (a multiple of the period
// covers no more; a layer's period, inside one forward, covers less). At
// least two periods, else none. `count` whole periods, aligned to the
// stretch's end: setup work before the loop (weights initialised under
// no_grad) can match the end of an iteration's, never a whole one.
struct PeriodicRun {
  size_t first = 0, period = 0, count = 0;  // periods [first + k * period, + period), k < count
};
PeriodicRun periodic_run(const std::vector<uint32_t>& keys) {
  PeriodicRun best;
  const size_t n = keys.size();
  size_t best_covered = 0, best_lo = 0;
  for (const size_t m : {n / 2, n - n / 4, n - n / 8}) {
    if (best_covered && m >= best_lo && m < best_lo + best_covered) continue;  // inside the run found
    size_t best_here = 0;  // this anchor's period (a multiple of it covers no more)
    for (size_t q = m + 1; q < n && 2 * (q - m) <= n; ++q) {
      if (keys[q] != keys[m]) continue;
      const size_t p = q - m;
      if (best_here && p % best_here == 0) continue;
      size_t lo = m, hi = m;  // j in [lo, hi): keys[j] == keys[j + p]
      while (lo > 0 && keys[lo - 1] == keys[lo - 1 + p]) --lo;
      while (hi + p < n && keys[hi] == keys[hi + p]) ++hi;
      const size_t covered = hi - lo + p;
      if (covered < 2 * p || covered <= best_covered) continue;
      best_covered = covered, best_lo = lo, best.period = best_here = p;
    }
  }
  if (!best.period) return best;
  best.count = best_covered / best.period;
  best.first = best_lo + best_covered - best.count * best.period;
  return best;
}

// Groups m calls into one iteration (the gaps after calls k % m == r end
// one): the first whole group begins at call r + 1 (or call 0 when call r
// ends a group of m from the run's start); calls before it are dropped.
// Fewer than two whole groups is no grouping: two stray long gaps (a
// preempted call, the first iteration's warm-up) or two stray works m calls
// apart in a run of fewer than 3m calls would otherwise make one step of all.
bool group(PeriodicRun& run, size_t m, size_t r) {
  const size_t first_call = r + 1 == m ? 0 : r + 1;
  if (run.count < first_call + 2 * m) return false;
  run.first += first_call * run.period;
  run.period *= m;
  run.count = (run.count - first_call) / m;
  return true;
}

// group_calls by the gaps between calls.
bool group_by_gaps(PeriodicRun& run, const std::vector<StepFinder::TopLevel::const_iterator>& seq) {
  std::vector<int64_t> gaps, durs;  // gaps[k]: between call k and call k + 1
  int64_t prev_end = INT64_MIN;
  for (size_t k = 0; k < run.count; ++k) {
    const size_t i0 = run.first + k * run.period;
    int64_t end = seq[i0]->first;
    for (size_t i = i0; i < i0 + run.period; ++i) end = std::max(end, seq[i]->second.end);
    if (k) gaps.push_back(std::max<int64_t>(0, seq[i0]->first - prev_end));
    durs.push_back(end - seq[i0]->first);
    prev_end = end;
  }
  const int64_t dur_med = median_of(durs);
  constexpr int64_t kFloor = 10'000;  // ns
  // The candidate unit, in linear time (a loop of many thousand calls):
  // the gaps far beyond the lower median one are the candidate long ones;
  // m is the most common distance between two of them, r the most common
  // position modulo m. Then the check itself, on the gaps k % m == r.
  std::vector<int64_t> sorted = gaps;
  std::nth_element(sorted.begin(), sorted.begin() + (sorted.size() - 1) / 2, sorted.end());
  const int64_t typical = sorted[(sorted.size() - 1) / 2];
  std::vector<size_t> far;
  for (size_t k = 0; k < gaps.size(); ++k)
    if (gaps[k] > 4 * typical + kFloor) far.push_back(k);
  if (far.size() < 2) return false;
  auto mode = [](const std::vector<size_t>& v) {
    std::map<size_t, size_t> n;
    for (size_t x : v) ++n[x];
    size_t best = 0, most = 0;
    for (const auto& [x, c] : n)
      if (c > most) best = x, most = c;
    return best;
  };
  std::vector<size_t> steps;
  for (size_t i = 1; i < far.size(); ++i) steps.push_back(far[i] - far[i - 1]);
  const size_t m = mode(steps);
  if (m < 2 || 2 * m > run.count) return false;
  for (size_t& k : far) k %= m;
  const size_t r = mode(far);
  int64_t shortest_long = INT64_MAX;
  std::vector<int64_t> short_gaps;
  for (size_t k = 0; k < gaps.size(); ++k) {
    if (k % m == r) shortest_long = std::min(shortest_long, gaps[k]);
    else short_gaps.push_back(gaps[k]);
  }
  if (gaps.size() - short_gaps.size() < 2 || short_gaps.empty()) return false;
  // Most short gaps (a preempted call may stretch a few: the first
  // iteration's warm-up, a busy machine).
  std::nth_element(short_gaps.begin(), short_gaps.begin() + 3 * (short_gaps.size() - 1) / 4, short_gaps.end());
  const int64_t short_gap = short_gaps[3 * (short_gaps.size() - 1) / 4];
  if (short_gap > 4 * dur_med + kFloor || shortest_long <= 4 * short_gap + kFloor) return false;
  return group(run, m, r);  // groups begin after each long gap
}

// group_calls by the other work between calls: the gaps (call k's last work
// to call k + 1's first) holding some are exactly those k % m == r.
void group_by_other_work(PeriodicRun& run, const std::vector<StepFinder::TopLevel::const_iterator>& seq,
                         const StepFinder::TopLevel& work, const std::vector<Span>& fetches,
                         const std::vector<StepFinder::Blip>& blips) {
  std::vector<size_t> with;  // the gaps holding other work
  for (size_t k = 0; k + 1 < run.count; ++k) {
    const auto last = seq[run.first + (k + 1) * run.period - 1], next = seq[run.first + (k + 1) * run.period];
    // Works of the calls' own kind left out of seq (Dynamo's empty frames)
    // are no other work.
    bool other = false;
    for (auto it = std::next(last); it != next && !other; ++it) other = it->second.category != next->second.category;
    if (!other) {
      auto f = std::lower_bound(fetches.begin(), fetches.end(), last->second.end,
                                [](const Span& a, int64_t v) { return a.ts < v; });
      other = f != fetches.end() && f->ts < next->first;
    }
    // A result read can be all sub-microsecond ops (`float(y[0, 0])` in a
    // warm loop): zero-length work, in no TopLevel.
    auto b = std::lower_bound(blips.begin(), blips.end(), last->second.end,
                              [](const StepFinder::Blip& a, int64_t v) { return a.ts < v; });
    for (; !other && b != blips.end() && b->ts <= next->first; ++b) other = b->category != next->second.category;
    if (other) with.push_back(k);
  }
  if (with.size() < 2) return;
  const size_t m = with[1] - with[0], r = with[0] % m;
  if (m < 2 || 2 * m > run.count) return;
  for (size_t i = 1; i < with.size(); ++i)
    if (with[i] - with[i - 1] != m) return;
  // None missing at either end: every gap k % m == r holds some.
  if (with.front() >= m || with.back() + m < run.count - 1) return;
  group(run, m, r);
}

// A model called several times per iteration (an encoder on a query and its
// passages, a generate() loop's decoder once per token) repeats its call's
// sequence each call: the period found is a call, not the iteration. The
// iteration is the repeating unit of the gaps between calls: where, for some
// m >= 2, three quarters of the other gaps are short (calls follow each other: at
// most 4 calls' usual time plus 10 us), every m-th one (from some call on)
// is longer than 4 times those plus 10 us, and at least two are, m calls make one
// iteration (m and the first long gap found as below). Calls before the first whole group
// (setup work matching a call's end) are dropped. Irregular groups (a token
// loop whose requests differ in length) are not told apart this way: a user
// region around each request bounds them.
// Where the gaps do not tell (an eager loop with no work after its calls:
// the gap between two iterations is hardly longer than the Python between
// two calls), other work between two calls does: the iteration's own work
// that is not a call (its result read, `y[0].item()` with grad on; its
// batch's fetch). When such work lies in exactly every m-th gap (from some
// call on, at least two of them) and in no other, m calls make one
// iteration.
void group_calls(PeriodicRun& run, const std::vector<StepFinder::TopLevel::const_iterator>& seq,
                 const StepFinder::TopLevel& work, const std::vector<Span>& fetches,
                 const std::vector<StepFinder::Blip>& blips) {
  if (run.count < 4) return;
  if (!group_by_gaps(run, seq)) group_by_other_work(run, seq, work, fetches, blips);
}

// The thread's DataLoader fetches by start (threads merged in any order).
std::vector<Span> sorted_fetches(const StepFinder::Thread& t) {
  std::vector<Span> fetches = t.fetches;
  std::sort(fetches.begin(), fetches.end(), [](const Span& a, const Span& b) { return a.ts < b.ts; });
  return fetches;
}

// Inference-loop steps (no marks, args, step region, optimizer step or
// training work: an evaluation beside a training loop is no step): one
// per iteration of the loop's inference work, compiled inference graph calls
// (args.phase "inference", told apart by args.graph) if the main thread has
// any, else eager ops run with grad mode off (args.grad 0). That work repeats
// the same sequence every iteration (the frame's graphs, the forward's ops):
// each period of it (periodic_run) is one iteration, beginning with its first
// work, moved back over the compile work right before it (the first call's
// compile, a recompile) and to the DataLoader's batch fetch before that when
// no other work lies between them. The last step ends with its last work.
Candidate inference_bounded(const StepFinder::Thread& t) {
  constexpr size_t compile = 0;
  constexpr int64_t kEmptyFrame = 5'000;  // ns
  const auto& work = t.work;
  bool graphs = false;
  for (const auto& [ts, w] : work) graphs = graphs || w.category == kInferenceWork;
  const size_t want = graphs ? kInferenceWork : kGradOffWork;
  // A frame Dynamo compiled to no graph (a module's __call__ around the
  // frame that has it) still opens torch's scope, for 1-3 us: in whole
  // microseconds some of its calls last 0 and are not kept, so they would
  // make the sequence irregular. It runs no model work: left out. Told by
  // its name's usual duration, not each call's: a first call, or one on a
  // slower or busy machine, outlasts the bound once, and kept once it would
  // make that iteration's sequence differ from the others' (its step lost).
  std::map<std::string_view, std::vector<int64_t>> frame_durs;
  for (const auto& [ts, w] : work)
    if (w.category == want && starts_with(w.name, "Torch-Compiled Region")) frame_durs[w.name].push_back(w.end - ts);
  std::set<std::string_view> empty_frames;
  for (const auto& [name, durs] : frame_durs)
    if (lower_median(durs) < kEmptyFrame) empty_frames.insert(name);
  if (empty_frames.size() == frame_durs.size()) empty_frames.clear();  // every graph that short: all are the model's
  // So is an op that lasts 0 in whole microseconds on some calls (on a
  // GPT-2 forward `aten::view` did on 353 calls of 490, `as_strided`,
  // `transpose`, `dropout` too): only its longer calls are works, a
  // different number in each iteration, and no period repeated exactly (an
  // eager generate() or batch loop of a transformer had no steps).
  std::set<uint64_t> flickering;  // std::hash of their names
  for (const StepFinder::Blip& b : t.blips)
    if (b.category == want) flickering.insert(b.name_hash);
  std::vector<StepFinder::TopLevel::const_iterator> seq;
  std::vector<uint32_t> keys;
  std::map<std::string_view, uint32_t> ids;
  for (auto it = work.begin(); it != work.end(); ++it) {
    if (it->second.category != want || empty_frames.count(it->second.name)) continue;
    if (!flickering.empty() && flickering.count(std::hash<std::string_view>{}(it->second.name))) continue;
    seq.push_back(it);  // (kept once: an op nested in it carries no grad arg)
    keys.push_back(ids.try_emplace(it->second.name, static_cast<uint32_t>(ids.size())).first->second);
  }
  PeriodicRun run = periodic_run(keys);
  Candidate c{"", {}, 0};
  if (run.count < 2) return c;
  // One eager op repeated is no model call (a forward runs several top-level
  // ops; a compiled one is its frame's call): nn.init's weight fills under
  // no_grad (aten::normal_ per layer) in a run that stopped before its loop
  // are no inference loop.
  if (!graphs && run.period == 1 && !starts_with(seq[run.first]->second.name, "Torch-Compiled Region")) return c;
  const std::vector<Span> fetches = sorted_fetches(t);
  std::vector<StepFinder::Blip> blips = t.blips;  // by start (threads merged in any order)
  std::sort(blips.begin(), blips.end(), [](const StepFinder::Blip& a, const StepFinder::Blip& b) { return a.ts < b.ts; });
  group_calls(run, seq, work, fetches, blips);
  std::vector<std::pair<size_t, size_t>> periods;  // [first, last) indices in seq
  for (size_t k = 0; k < run.count; ++k) periods.emplace_back(run.first + k * run.period, run.first + (k + 1) * run.period);
  // A recompile mid-loop (a batch of a new shape: new graphs, which the
  // later calls keep using) splits the loop into two runs of the same
  // period and other keys: the run found is the longer one. Each stretch
  // that compile work parts from the steps found, and that repeats with
  // the same period at least twice, is more of the loop: its whole periods
  // (aligned to the recompile before the run, to the recompile after it),
  // where its periods follow each other about as often as the run's (within
  // 4x: the setup before the first call, weights initialised under no_grad,
  // repeats too, but far faster).
  auto spacing = [&](size_t from, size_t count) {  // lower median, between period starts
    std::vector<int64_t> v;
    for (size_t k = 1; k < count; ++k) v.push_back(seq[from + k * run.period]->first - seq[from + (k - 1) * run.period]->first);
    return lower_median(v);
  };
  const int64_t usual_spacing = spacing(run.first, run.count);
  auto like_the_run = [&](size_t from, size_t count) {
    const int64_t sp = spacing(from, count);
    return 4 * sp >= usual_spacing && sp <= 4 * usual_spacing;
  };
  auto recompiled_between = [&](size_t a, size_t b) {  // compile work between seq[a] and seq[b]
    for (auto it = std::next(seq[a]); it != seq[b]; ++it)
      if (it->second.category == compile) return true;
    return false;
  };
  const size_t period = run.period;
  for (bool more = true; more;) {
    more = false;
    const size_t lo = periods.front().first;
    if (lo >= 2 * period && recompiled_between(lo - 1, lo)) {
      size_t j = lo - period;  // keys[j..lo) one period; back while keys[j - 1] == keys[j - 1 + period]
      while (j > 0 && keys[j - 1] == keys[j - 1 + period]) --j;
      const size_t whole = (lo - j) / period;
      if (whole >= 2 && like_the_run(lo - whole * period, whole)) {
        for (size_t k = 1; k <= whole; ++k) periods.insert(periods.begin(), {lo - k * period, lo - (k - 1) * period});
        more = true;
      }
    }
    const size_t hi = periods.back().second;
    if (hi + 2 * period <= seq.size() && recompiled_between(hi - 1, hi)) {
      size_t j = hi + period;
      while (j < seq.size() && keys[j] == keys[j - period]) ++j;
      const size_t whole = (j - hi) / period;
      if (whole >= 2 && like_the_run(hi, whole)) {
        for (size_t k = 0; k < whole; ++k) periods.emplace_back(hi + k * period, hi + (k + 1) * period);
        more = true;
      }
    }
  }
  // The works after the run: one last iteration when they are no more than
  // one and compile work ran among them or right before them (the last
  // batch's new shape recompiled its graphs, so they match no earlier period).
  const size_t rest = periods.back().second;
  if (rest < seq.size() && seq.size() - rest <= run.period) {
    bool recompiled = false;
    for (auto it = std::next(seq[rest - 1]); it != work.end() && it->first < seq.back()->second.end && !recompiled; ++it)
      recompiled = it->second.category == compile;
    if (recompiled) periods.emplace_back(rest, seq.size());
  }
  int64_t prev_end = INT64_MIN;
  for (size_t k = 0; k < periods.size(); ++k) {
    const size_t i0 = periods[k].first;
    int64_t ts = seq[i0]->first, end = ts;
    for (size_t i = i0; i < periods[k].second; ++i) end = std::max(end, seq[i]->second.end);
    // Back over the compile work right before it, not into the previous
    // iteration: Dynamo's trace of an empty frame, the frame, then the
    // graph's compile, all part of the first call.
    for (auto it = seq[i0]; it != work.begin();) {
      auto prev = std::prev(it);
      if (prev->first < prev_end || prev->second.end > ts) break;
      if (prev->second.category == compile) ts = prev->first;
      else if (!empty_frames.count(prev->second.name)) break;
      it = prev;
    }
    // The batch's fetch: the latest one ending by then, after the previous
    // iteration, with no work between it and the iteration's start.
    auto f = std::upper_bound(fetches.begin(), fetches.end(), ts, [](int64_t v, const Span& s) { return v < s.ts; });
    while (f != fetches.begin() && std::prev(f)->end > ts) --f;
    if (f != fetches.begin()) {
      const Span& fetch = *std::prev(f);
      auto w = work.lower_bound(fetch.end);
      if (fetch.ts >= prev_end && (w == work.end() || w->first >= ts)) ts = fetch.ts;
    }
    if (k == 0) c.name = seq[i0]->second.name;
    c.occ.push_back({ts, end});
    c.coverage = saturating_add(c.coverage, end - ts);
    prev_end = end;
  }
  return c;
}

// Mark- or arg-started steps: each reaches the next one's start; the last
// takes as many top-level events of the main thread as the others had (their
// median), then their median tail, and stops where a further event starts.
std::vector<StepInterval> started_steps(const std::vector<StepStart>& starts, const StepFinder::TopLevel& top,
                                        int64_t last_arg_end) {
  std::vector<StepInterval> out;
  for (size_t i = 0; i < starts.size(); ++i)
    out.push_back({starts[i].ts, i + 1 < starts.size() ? starts[i + 1].ts : starts[i].ts, starts[i].value});
  if (out.empty()) return out;
  std::vector<size_t> counts;
  std::vector<int64_t> tails, durs;
  for (size_t k = 0; k + 1 < out.size(); ++k) {
    size_t n = 0;
    int64_t last_end = INT64_MIN;
    for (auto it = top.lower_bound(out[k].ts); it != top.end() && it->first < out[k].end; ++it, ++n)
      last_end = std::max(last_end, it->second.end);
    counts.push_back(n);
    durs.push_back(out[k].end - out[k].ts);
    if (n) tails.push_back(std::max<int64_t>(0, out[k].end - last_end));
  }
  StepInterval& last = out.back();
  last.end_estimated = true;
  auto it = top.lower_bound(last.ts);
  if (counts.empty()) {  // one step: its events' end
    int64_t end = last_arg_end;
    for (; it != top.end(); ++it) end = std::max(end, it->second.end);
    last.end = std::max(last.ts, end);
    return out;
  }
  const size_t want = median_of(counts);
  int64_t end = last.ts;
  size_t n = 0;
  for (; it != top.end() && n < want; ++it, ++n) end = std::max(end, it->second.end);
  if (want == 0) end = last.ts + median_of(durs);
  else end = saturating_add(end, median_of(tails));
  if (it != top.end()) end = std::min(end, std::max(it->first, last.ts));
  last.end = end;
  return out;
}
}  // namespace

ArgCapture StepFinder::arg_capture() {
  ArgCapture c;
  c.size = 4;
  c.keys[kArgOpt] = "opt";      // an optimizer step's optimizer (optimizer_number)
  c.keys[kArgGrad] = "grad";    // 0: eager work with grad mode off (inference_work)
  c.keys[kArgFhash] = "fhash";  // an I/O call's file (runtime_files.hpp)
  c.keys[kArgValue] = "value";  // an FH record's fhash
  return c;
}

StepFinder::StepFinder(std::shared_ptr<const RuntimeFiles> runtime) : runtime_(std::move(runtime)) {
  decoder_.capture_args(arg_capture());
}

DecodeStatus StepFinder::consume(std::string_view line, size_t cap) {
  DecodeStatus st = decoder_.decode(line, cap, ev_);
  if (st == DecodeStatus::Ok) add_event(file_, ev_);
  return st;
}

void StepFinder::add_event(size_t file, const Event& e) {
  // Device work (a device track of a process, format/device_track.hpp, or
  // Kineto's GPU events under the device's index as pid) is no process of
  // its own and no thread's time: no steps, no wall time.
  if (is_device_event(e)) return;
  if (is_file_name_record(e)) {
    if (runtime_ == nullptr) names_.add(e.extra_args[kArgValue], e.meta_name);
    return;
  }
  // torch names a DataLoader worker process's thread "pt_data_worker"
  // (_worker_loop): its ops are the dataset's transforms, not the model's,
  // even where eager tracing gives them a phase.
  if (e.is_metadata() && e.name == "thread_name" && e.meta_name == "pt_data_worker") {
    processes_[{file, std::string(e.pid_text)}].data_worker = true;
    return;
  }
  const bool mark = is_step_mark(e);
  if (!mark && (!e.is_complete() || !e.has_dur || !e.has_ts)) return;
  // Most events belong to the process of the event before: found without a key.
  if (!last_ || file != last_file_ || e.pid_text != last_pid_) {
    last_ = &processes_[{file, std::string(e.pid_text)}];
    last_file_ = file;
    last_pid_.assign(e.pid_text);
  }
  Process& p = *last_;
  if (mark) {
    p.marks.emplace_back(e.ts_ns, std::string(e.step));
    return;
  }
  const int64_t end = saturating_add(e.ts_ns, std::max<int64_t>(e.dur_ns, 0));
  const std::string_view category = event_category(e, e.extra_args[kArgFhash], runtime_.get());
  const size_t cat = step_category_index(category);
  if (is_io_event(e) && runtime_ == nullptr) p.wall.add_io(e.extra_args[kArgFhash], e.ts_ns, end);
  else if (category == "optimizer" && is_optimizer_step(e)) p.wall.add_optimizer_scope(e.ts_ns, end);
  else if (category == "gc") p.wall.add_gc(e.tid_text == e.pid_text, e.ts_ns, end);  // the main thread's, or another's
  else if (category == "checkpoint") p.wall.add_checkpoint(e.tid_text == e.pid_text, e.ts_ns, end);
  else p.wall.add(cat, e.ts_ns, end);
  if (model_work(e, category)) p.model_work = true;  // (work below: the same test)
  if (is_eager_call(e)) {  // in the wall split: the steps are found on the ops it holds
    const bool grad_off = e.phase == "inference";
    if ((grad_off || e.phase == "forward") && starts_with(e.name, "nn.Module: ")) {  // (evaluations: optimizer_bounded)
      Thread* t = e.tid_text == e.pid_text ? &p.main : p.main.top.empty() ? &p.others[std::string(e.tid_text)] : nullptr;
      if (t && t->calls.size() >= kMaxRegionOccurrences) ++capped_;
      else if (t) t->calls.push_back({e.ts_ns, end, std::hash<std::string_view>{}(e.name), grad_off});
    }
    return;
  }
  // An I/O call is never a step, nor bounds one: a DataLoader worker that only
  // reads, or a loop saving files outside any region, would otherwise have its
  // most-timed repeated call (fread, write) taken for the step region. I/O
  // events are still attributed to the steps they fall in (pass 2). Nor is a
  // garbage collection, which runs wherever the allocations trigger it: a
  // gen2 collection of 0.3 s between two iterations is the loop's own time,
  // not other work in a wait. Nor is a checkpoint (torch.save, a
  // state_dict), but it is a top-level event of its thread: in a wait it
  // is more than the usual wait holds, so the wait is no iteration's own (a
  // checkpoint between two steps is outside them, like an evaluation). The
  // work nested in either is theirs, not the loop's (a finalizer's region,
  // state_dict's detach ops with grad mode on, which the observer writes as
  // forward and which began the next step): their spans are set aside and
  // plan() drops the work inside them.
  const bool checkpoint = category == "checkpoint";
  if (category == "gc" || checkpoint) {
    Thread* t = e.tid_text == e.pid_text ? &p.main : p.main.top.empty() ? &p.others[std::string(e.tid_text)] : nullptr;
    if (t && end > e.ts_ns) {
      if (t->aside.size() >= kMaxRegionOccurrences) ++capped_;
      else t->aside.push_back({e.ts_ns, end});
    }
    if (!checkpoint) return;
  }
  if (is_io_event(e)) return;
  if (!e.step.empty()) {
    auto [it, fresh] = p.by_arg.try_emplace(std::string(e.step), e.ts_ns, end);
    if (!fresh) {
      it->second.first = std::min(it->second.first, e.ts_ns);
      it->second.second = std::max(it->second.second, end);
    }
  }
  const bool candidate = !checkpoint && region_candidate(e, category);
  const Eager eager = eager_of(e);
  const bool work = !checkpoint && (model_work(e, category) || eager.compiled_call);
  if (e.tid_text == e.pid_text) {
    add_thread_event(p.main, e, eager, end, cat, candidate, work, kMaxTopLevel, capped_);
    p.others.clear();  // not needed once the tid == pid thread is known
  } else if (p.main.top.empty()) {
    add_thread_event(p.others[std::string(e.tid_text)], e, eager, end, cat, candidate, work, kMaxTopLevelOther, capped_);
  }
}

const StepFinder::Thread& StepFinder::main_thread(const Process& p) {
  static const Thread kNone;
  if (!p.main.top.empty()) return p.main;
  const Thread* best = &kNone;
  for (const auto& [tid, t] : p.others)  // by tid: ties go to the smallest
    if (!t.top.empty() && (best->top.empty() || t.top.begin()->first < best->top.begin()->first)) best = &t;
  return *best;
}

void StepFinder::merge(StepFinder& o) {
  o.last_ = nullptr;
  last_ = nullptr;
  capped_ += o.capped_;
  names_.merge(o.names_);
  for (auto& [key, q] : o.processes_) {
    Process& p = processes_[key];
    for (auto& [v, s] : q.by_arg) {
      auto [it, fresh] = p.by_arg.try_emplace(v, s);
      if (!fresh) {
        it->second.first = std::min(it->second.first, s.first);
        it->second.second = std::max(it->second.second, s.second);
      }
    }
    p.marks.insert(p.marks.end(), q.marks.begin(), q.marks.end());
    p.model_work = p.model_work || q.model_work;
    p.data_worker = p.data_worker || q.data_worker;
    p.wall.merge(q.wall);
    merge_thread(p.main, q.main, kMaxTopLevel, capped_);
    if (!p.main.top.empty()) {
      p.others.clear();
    } else {
      for (auto& [tid, t] : q.others) merge_thread(p.others[tid], t, kMaxTopLevelOther, capped_);
    }
  }
  o.processes_.clear();
}

StepPlan StepFinder::plan() {
  StepPlan plan;
  plan.capped = capped_;
  plan.runtime_files = runtime_ ? runtime_ : std::make_shared<const RuntimeFiles>(names_);
  bool any_model_work = false;
  for (auto& [key, p] : processes_) {
    drop_set_aside(p.main);
    for (auto& [tid, t] : p.others) drop_set_aside(t);
    p.model_work = p.model_work && !p.data_worker;
    any_model_work = any_model_work || p.model_work;
  }
  for (auto& [key, p] : processes_) {
    ProcessSteps ps;
    ps.file = key.first;
    ps.pid = key.second;
    ps.model_work = p.model_work;
    p.wall.finish(plan.runtime_files.get());
    ps.wall = std::move(p.wall);
    if (any_model_work && !p.model_work) {
      ps.source = "helper";
      plan.without_steps.push_back(std::move(ps));
      continue;
    }
    const Thread& main = main_thread(p);
    std::vector<Candidate> cands;
    for (const auto& [name, occ] : main.regions) {
      Candidate c{name, outermost(occ), 0};
      if (c.occ.size() < 2) continue;
      for (const Span& s : c.occ) c.coverage = saturating_add(c.coverage, s.end - s.ts);
      cands.push_back(std::move(c));
    }
    std::vector<StepStart> starts;
    if (!p.marks.empty()) {
      starts = starts_from_marks(p.marks);
      ps.source = "marks";
    } else if (!p.by_arg.empty()) {
      starts = starts_from_args(p, main.top);
      ps.source = "args.step";
    }
    const std::vector<OptStep> opt = outermost(main.optimizer);
    const OptimizerCycle cycle = optimizer_cycle(opt);
    // Without marks or args, a training loop's regions are told apart by
    // the optimizer steps they hold (one cycle per occurrence for a step's).
    const std::vector<Candidate> holding =
        opt.size() >= 2 ? holding_optimizer_cycles(cands, cycle, opt) : holding_inference(cands, main);
    const Candidate* region = starts.empty() ? region_by_shape(holding) : region_matching(cands, starts);
    if (region) {
      ps.steps = region_steps(*region, cands);
      ps.region = region->name;
      ps.source = "region";
      for (size_t i = 0; i < starts.size() && i < ps.steps.size(); ++i) ps.steps[i].label = starts[i].value;
    } else if (starts.empty() && !opt.empty()) {
      const std::vector<Span> fetches = sorted_fetches(main);
      const Candidate c = optimizer_bounded(cycle.closing, main, fetches);
      ps.steps = region_steps(c, cands);
      ps.region = c.name;
      ps.source = "optimizer";
    } else if (starts.empty() && !main.trains) {
      const Candidate c = inference_bounded(main);
      if (!c.occ.empty()) {
        ps.steps = region_steps(c, cands);
        ps.region = c.name;
        ps.source = "inference";
      }
    } else {
      int64_t last_arg_end = INT64_MIN;
      auto it = p.by_arg.find(starts.back().value);
      if (it != p.by_arg.end()) last_arg_end = it->second.second;
      ps.steps = started_steps(starts, main.top, last_arg_end);
    }
    ps.steps.erase(std::remove_if(ps.steps.begin(), ps.steps.end(),
                                  [](const StepInterval& s) { return s.end <= s.ts; }),
                   ps.steps.end());
    if (ps.steps.empty()) {
      ps.source.clear();
      ps.region.clear();
      plan.without_steps.push_back(std::move(ps));
    } else {
      plan.processes.push_back(std::move(ps));
    }
  }
  return plan;
}

}  // namespace dftracer::analyze
