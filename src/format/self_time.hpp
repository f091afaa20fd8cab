// Self time: for every complete event, its duration minus the time of the
// events nested directly inside it on the same thread (pid/tid of one file).
//
// Nesting comes from ts/dur alone, streamed: a thread's events arrive in the
// order they were written, which for our traces and DFTracer's is the order
// they ended (a region is recorded when it closes, after everything inside
// it; a graph call's op events are written before the call's own event). So
// a thread needs only a stack of the events that have not found their parent
// yet -- each new event pops the ones it overlaps as its children -- never
// the whole trace. Events written parent-first (a trace sorted by start
// time) nest too: a new event inside the stack's top is that top's child.
//
// Every event's self time goes to its group's accumulator, so the self times
// of a thread add up to the time the thread was inside any event (its traced
// time), and shares of self time add up to 100 %.
//
// The reader splits a file into pieces read on several threads, so one
// thread's events can arrive as several runs on several trackers. Each run
// ("segment") keeps what could still nest with an earlier run: the events
// left on its stack, and the events that started before its first event
// ended (the only ones that can enclose an earlier run's events). resolve()
// nests those once all runs are in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dftracer::analyze {
class PartialCodec;  // the analyzer's partial summaries (partial_summary.cpp)
}  // namespace dftracer::analyze

namespace dftracer::format {

struct NestingStats {
  // A parent that began inside a block of old events folded into one sum: its
  // children's time was estimated in proportion to the overlap. Within one
  // run only past kMaxFoldedEvents + kMaxOpenEvents unparented events on one
  // thread; across runs (pieces read apart) when a parent in one run starts
  // among another run's folded events.
  uint64_t approximated = 0;
  // Folds of old, still unparented events off a thread's stack (memory bound).
  uint64_t folded = 0;
};

class SelfTimeTracker {
 public:
  // The most events one thread keeps on its stack; past this the older half
  // moves to the thread's folded siblings (see Folded).
  static constexpr size_t kMaxOpenEvents = 4096;
  // The most folded siblings kept exactly (16 bytes each: 1 MiB a thread);
  // past this the older half becomes one block, estimated if ever split.
  static constexpr size_t kMaxFoldedEvents = size_t{1} << 16;
  // A child up to this much longer than its parent (clock rounding) still
  // counts as its child when it was written first (end order).
  static constexpr int64_t kRoundingSlackNs = 1000;

  // A new piece of input: the runs of the previous piece end.
  void begin_piece(size_t file_index);
  // One complete event of thread (pid, tid) of the current file. `self_acc`
  // receives its self time (ns) once known; it and `group_key` (which names
  // the same accumulator for resolve()) must stay valid until finish().
  void add(std::string_view pid, std::string_view tid, int64_t ts_ns, int64_t dur_ns, int64_t* self_acc,
           const std::string* group_key);
  // Ends the current runs: every self time is in its accumulator.
  void finish();
  // Takes over other's finished runs (call finish() on both first).
  void merge(SelfTimeTracker& other);
  // Nests the runs of each thread across pieces; `acc` gives the accumulator
  // of a group key in the merged aggregate. Runs may come in any order.
  void resolve(const std::function<int64_t*(const std::string&)>& acc);

  const NestingStats& stats() const { return stats_; }

 private:
  friend class analyze::PartialCodec;  // partial_summary.cpp: runs travel as bytes to be resolved elsewhere
  struct Open {
    int64_t ts, end, dur, self;
    int64_t* acc;         // null for a folded block and once counted
    const std::string* key;
    int32_t candidate;    // index in the run's candidates, or -1
    bool claimed;         // already counted as the child of an event below it
    bool block;           // several folded events (fold())
  };
  // A possible parent of another run's events, and where its self time went.
  struct Candidate {
    int64_t ts = 0, end = 0, self = 0;
    const std::string* key_ptr = nullptr;  // while the run is read
    std::string key;                       // from finish() on
  };
  struct Run {
    std::string thread;   // file index, pid, tid
    std::vector<Open> leftover;  // unclaimed events still without a parent (each also a candidate)
    std::vector<Candidate> candidates;
  };
  // Old unparented events folded off the bottom of a stack. On the stack,
  // unparented events that ended before the next one began are siblings:
  // sorted and disjoint, each with its self time already counted; all a later
  // parent needs of them is which ones it encloses and their time. So they
  // are kept as ends and running sums of durations, and a parent that starts
  // among them (the first compile, after thousands of import I/O calls at
  // top level) still takes exactly the ones inside it (take()).
  struct Folded {
    std::vector<int64_t> end;  // ascending
    std::vector<int64_t> cum;  // cum[i]: summed durations of events 0..i
    Open far{};                // older events past kMaxFoldedEvents, one block (far.block)
    bool empty() const { return end.empty() && !far.block; }
    int64_t last_end() const { return end.empty() ? far.end : end.back(); }
    int64_t dur(size_t i) const { return cum[i] - (i ? cum[i - 1] : 0); }
  };
  struct ThreadState {
    std::vector<Open> stack;
    Folded folded;  // before the stack: every folded event ended before the stack's first began
    std::vector<Candidate> candidates;
    int64_t min_end = INT64_MAX;  // earliest end of the run's events so far
  };

  // The runs of one thread that may join another: those whose spans meet.
  static std::vector<Run*> runs_that_meet(const std::vector<Run*>& runs);
  void push(ThreadState& t, int64_t ts, int64_t end, int64_t dur, int64_t* acc, const std::string* key);
  void finalize(Open& o, std::vector<Candidate>& candidates);
  void fold(ThreadState& t);
  // Moves the oldest foldable events of the stack to t.folded; how many.
  size_t fold_exact(ThreadState& t, size_t limit);
  // Pops the folded events a new event [ts, end) encloses; their time inside it.
  int64_t take_folded(Folded& f, int64_t ts, int64_t end);
  int64_t overlap(const Open& o, int64_t ts, int64_t end);

  size_t file_ = 0;
  std::unordered_map<std::string, ThreadState> threads_;
  ThreadState& thread(std::string_view pid, std::string_view tid);
  static constexpr size_t kRecent = 4;
  struct Recent {
    std::string pid, tid;
    ThreadState* state = nullptr;
  };
  Recent recent_[kRecent];
  size_t recent_next_ = 0;
  std::string key_;
  std::vector<Run> runs_;
  NestingStats stats_;
};

}  // namespace dftracer::format

// The analyzer (src/analyze) names these unqualified.
namespace dftracer::analyze {
using format::NestingStats;
using format::SelfTimeTracker;
}  // namespace dftracer::analyze
