// The wall split's unions (wall_time.hpp): garbage collections and
// checkpoints by thread, and what bounds a union's memory.
#include "wall_time.hpp"

#include <gtest/gtest.h>

#include "steps.hpp"

namespace dftracer::analyze {
namespace {

enum Cat { kCompile, kForward, kBackward, kOptimizer, kComm, kData, kGc, kCheckpoint, kOther };  // kStepCategories
static_assert(kOther == kNumStepCategories - 1 && kCheckpoint == step_category_index("checkpoint"));

// The main thread's collection stops the loop: gc before the forward it
// interrupts. Another thread's runs while the main thread's ops go on
// (they release the GIL): gc only where no model work is open, and still
// before comm, data and other.
TEST(WallTime, AnotherThreadsCollectionIsGcOnlyWhereNoModelWorkIsOpen) {
  ProcessWall w;
  w.add(kForward, 0, 1000);
  w.add(kOther, 0, 2000);  // the step's region
  w.add_gc(true, 100, 200);
  w.add_gc(false, 500, 1500);  // half under the forward
  w.add(kData, 1400, 1600);
  w.finish(nullptr);
  const WallParts p = w.partition(0, 2000);
  EXPECT_EQ(p.by_category[kGc], 100 + 500);
  EXPECT_EQ(p.by_category[kForward], 1000 - 100);
  EXPECT_EQ(p.by_category[kData], 100);  // [1500, 1600)
  EXPECT_EQ(p.by_category[kOther], 400);
  EXPECT_EQ(p.total(), 2000);
  uint64_t n = 0;
  int64_t longest = 0;
  w.gc_in(0, 2000, &n, &longest);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(longest, 1000);
  w.gc_in(0, 1000, &n, &longest);  // only those wholly inside
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(longest, 100);
}

// A checkpoint on the main thread is checkpoint time before the forward ops
// state_dict runs (its detaches) and the data I/O torch.save does. On another
// thread (an asynchronous save) the main thread's model work and its waits
// on peers go on: checkpoint only where neither is open, still before data.
TEST(WallTime, ACheckpointOutranksItsOpsAndWritesAndAnotherThreadsOnlyWhereTheLoopIsIdle) {
  ProcessWall w;
  w.add_checkpoint(true, 0, 100);
  w.add(kForward, 10, 20);  // a detach inside it
  w.add(kData, 50, 90);     // its write
  w.add(kForward, 100, 300);
  w.add(kComm, 300, 400);
  w.add_checkpoint(false, 250, 600);
  w.add(kData, 450, 550);  // the other thread's write
  w.finish(nullptr);
  const WallParts p = w.partition(0, 700);
  EXPECT_EQ(p.by_category[kCheckpoint], 100 + 200);  // [0, 100) and [400, 600)
  EXPECT_EQ(p.by_category[kForward], 200);
  EXPECT_EQ(p.by_category[kComm], 100);
  EXPECT_EQ(p.by_category[kData], 0);
  EXPECT_EQ(p.untraced, 100);
  EXPECT_EQ(w.first(), 0);
  EXPECT_EQ(w.last(), 600);  // a checkpoint, on any thread, is the run's work
}

// Past the cap a union closes its narrowest gaps, but collections are
// sparse spans of the second priority: closed gaps between them would claim
// the work they interrupt. Their union drops the shortest instead.
TEST(WallTime, PastTheCapCollectionsDropTheShortestInsteadOfClosingGaps) {
  ProcessWall w;
  const int64_t n = static_cast<int64_t>(IntervalUnion::kMaxSpans) + 1000;
  for (int64_t i = 0; i < n; ++i) w.add_gc(true, i * 100'000, i * 100'000 + 500);  // 0.5 us every 100 us
  for (int64_t i = 0; i < 10; ++i) w.add_gc(true, i * 100'000 + 10'000, i * 100'000 + 60'000);  // 50 us
  w.add(kForward, 0, n * 100'000);
  w.finish(nullptr);
  EXPECT_EQ(w.closed_gap_ns(), 0);
  const WallParts p = w.partition(0, 1'000'000);  // the first 10 periods
  EXPECT_EQ(p.by_category[kGc], 10 * 50'000);  // the long ones kept, nothing between them claimed
  EXPECT_EQ(p.by_category[kForward], 1'000'000 - 10 * 50'000);
}

}  // namespace
}  // namespace dftracer::analyze
