// Wall time by kind of work. Self time adds up threads: a main thread waiting
// on compile workers and the workers themselves count twice, so "compile" could
// read 104 s for 44.5 s of wall clock. Here each process keeps, per category
// (event_category.hpp), the union over all its threads of the intervals of its
// events, and any window (a step, the run) is split into the categories by
// priority: an instant belongs to the first category active in it, in the
// order compile, gc, optimizer, backward, forward, comm, data, other; the instants where
// no event of the process is open are "untraced". So the parts of a window add
// up to its length and none can exceed it.
//
// I/O calls are data, except on the runtime's own files (imports, libraries:
// runtime_files.hpp), which are other; which files those are is known only
// after the whole read, so each file's I/O spans are held apart until then
// (one union per traced file meanwhile: a run that reads a million sample
// files holds a million small unions, as `io` holds a row per file).
//
// Memory: each category's union is a sorted vector of disjoint spans. Events
// nested in an event of their own category cost nothing; when a category's
// disjoint spans pass kMaxSpans (an eager trace of millions of separate ops),
// gaps up to a growing width are closed and the width is reported.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dftracer::analyze {

class RuntimeFiles;

// The categories in priority order for the partition, as indexes into
// kStepCategories (steps.hpp): compile, gc, checkpoint, optimizer, backward,
// forward, comm, data, other. comm comes after the model's work, so it is the
// exposed wait on peers: a DDP bucket's all-reduce that runs while backward ops
// do is backward time. A garbage collection stops its thread and every Python
// thread with it (the GIL), so the forward, update or region it interrupts
// makes no progress meanwhile: gc comes before them; a compile's collections
// stay compile, as torch's own compile times count them. A checkpoint on the
// main thread (torch.save, a state_dict) holds ops the observer calls forward
// (state_dict's detaches, a device-to-host copy) and file writes that would
// read as data: it comes before them.
inline constexpr size_t kWallPriority[] = {0, 6, 7, 3, 2, 1, 4, 5, 8};
inline constexpr size_t kNumWallCategories = std::size(kWallPriority);

class IntervalUnion {
 public:
  static constexpr size_t kMaxSpans = size_t{1} << 20;
  // Past kMaxSpans, drop the shortest spans (below a doubling length) rather
  // than close gaps: for sparse spans of a high priority (garbage
  // collections, ~100 us apart), closed gaps would claim the work between them.
  void drop_short_past_cap() { drop_short_ = true; }
  void add(int64_t ts, int64_t end);
  void merge(IntervalUnion& other);
  // merge() without the merging: normalize() does it once for many.
  void append(IntervalUnion& other);
  // Merges what add() buffered: spans() is then sorted and disjoint.
  void normalize();
  const std::vector<std::pair<int64_t, int64_t>>& spans() const { return v_; }
  // The widest gap closed to bound memory (0: exact).
  int64_t closed_gap_ns() const { return min_gap_; }
  // With drop_short_past_cap(): spans shorter than this were dropped (0: none).
  int64_t dropped_below_ns() const { return min_len_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> v_;
  size_t normalized_ = 0;  // v_[0, normalized_) is sorted and disjoint
  int64_t min_gap_ = 0;
  int64_t min_len_ = 0;
  bool drop_short_ = false;
};

// One process's wall time by category.
struct WallParts {
  int64_t by_category[kNumWallCategories] = {};  // kStepCategories order
  int64_t untraced = 0;
  int64_t total() const;
};

class ProcessWall {
 public:
  ProcessWall();
  void add(size_t category, int64_t ts, int64_t end) { cats_[category].add(ts, end); }
  // A garbage collection: on the main thread (the one whose work the steps
  // are) it stops the loop and is gc time before everything but compile; on
  // another thread (a pin-memory thread, a logger) the main thread's ops and
  // the autograd engine run on meanwhile (they release the GIL), so it is gc
  // time only where no model work is open.
  void add_gc(bool main_thread, int64_t ts, int64_t end) { (main_thread ? cats_[kGcIndex] : gc_other_).add(ts, end); }
  // A checkpoint (torch.save/load, a state_dict): on the main thread before
  // everything but compile and gc; on another thread (an asynchronous save)
  // the main thread's work and its waits on peers go on meanwhile, so it is
  // checkpoint time only where neither is open (before data: its writes).
  void add_checkpoint(bool main_thread, int64_t ts, int64_t end) {
    (main_thread ? cats_[kCheckpointIndex] : checkpoint_other_).add(ts, end);
  }
  // Collections on any thread inside [ts, end): how many and the longest (ns).
  void gc_in(int64_t ts, int64_t end, uint64_t* count, int64_t* longest_ns) const;
  // An optimizer's step scope (torch's `Optimizer.step#...`, a GradScaler's
  // step): optimizer time, but where forward or backward work that begins
  // inside it runs -- a closure's (`optimizer.step(closure)`: LBFGS,
  // Lightning's automatic optimization), which would otherwise read as the
  // update's. Work that holds the scope (an optimizer stepping in a backward
  // hook) leaves it optimizer. Resolved in finish().
  void add_optimizer_scope(int64_t ts, int64_t end) { optimizer_scopes_.add(ts, end); }
  // An I/O call on the file `fhash`, data or other once its kind is known.
  void add_io(std::string_view fhash, int64_t ts, int64_t end);
  void merge(ProcessWall& other);
  // Call once after the last add/merge: the held I/O spans go to data, or
  // to other for `runtime`'s files (null: none), and the partition reads the unions.
  void finish(const RuntimeFiles* runtime);
  // The window [ts, end) split by priority.
  WallParts partition(int64_t ts, int64_t end) const;
  // The first start and the last end of any event but a garbage collection
  // (INT64_MAX / INT64_MIN: none).
  int64_t first() const { return first_; }
  int64_t last() const { return last_; }
  int64_t closed_gap_ns() const;

 private:
  void add_optimizer_scopes();  // finish(): the scopes' optimizer time, once forward and backward are known
  static constexpr size_t kGcIndex = 6;          // kStepCategories' "gc"
  static constexpr size_t kCheckpointIndex = 7;  // and "checkpoint"
  std::array<IntervalUnion, kNumWallCategories> cats_;
  IntervalUnion gc_other_;          // other threads' collections (add_gc)
  IntervalUnion checkpoint_other_;  // other threads' checkpoints (add_checkpoint)
  IntervalUnion optimizer_scopes_;  // until finish()
  std::unordered_map<std::string, IntervalUnion> io_;  // by fhash, until finish()
  int64_t first_ = INT64_MAX, last_ = INT64_MIN;
};

}  // namespace dftracer::analyze
