// What holds the peak: the memory capture's per-block events ("alloc" and
// "free", cat "memory", "ph":"i"; an alloc's args addr, size, total -- the
// allocator's bytes allocated after it -- and op: the innermost recorded
// op; a free's addr alone (older traces wrote its size and total too: read
// the same); dev on a device other than the CPU) replayed, so that at
// each process's and device's peak (the event with the highest total) the
// blocks live then are known, by the op, module, phase and step that
// allocated them. Their sizes plus what was live before the trace began
// (the peak minus the traced blocks: "before trace") sum to the peak.
//
// Two passes over the input (memory.cpp drives them): the first finds each
// series' peak event (BlockPeakFinder), the second replays the blocks up to
// it (BlockReplay). Memory is bounded by the live blocks, not the events:
// a block's entry goes when its free is read. Events are used by their time,
// not their place in the file (a free may be written by another thread
// before its allocation's chunk): an event earlier than the one its address
// already has is resolved by time and counted as late.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event_decoder.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

struct StepPlan;

// One row of a composition: a key (op name, module, phase or step) and the
// bytes of the live blocks it allocated. The last row of a list, key
// "(rest)" with `rest` set, holds the keys past the top N.
struct PeakHolder {
  std::string key;
  double bytes = 0;
  uint64_t blocks = 0;
  bool rest = false;
};

struct PeakComposition {
  std::string pid;
  std::string device;  // "cpu", "cuda:0", ...
  int64_t peak_ts_ns = 0;
  double peak = 0;          // the allocator's total at the peak event
  double traced = 0;        // the live blocks' bytes (every block, not only the top rows)
  double before_trace = 0;  // peak - traced: what was live before the trace began
  uint64_t blocks = 0;      // live blocks at the peak
  std::vector<PeakHolder> by_op, by_module, by_phase, by_step;
};

// The composition's lists, in the order written: title, JSON member, the
// name of a row without a key.
struct PeakHolderList {
  const char* title;
  const char* member;
  const char* none;
  std::vector<PeakHolder> PeakComposition::*rows;
};
inline constexpr PeakHolderList kPeakHolderLists[] = {{"op", "by_op", "(no op)", &PeakComposition::by_op},
                                                      {"module", "by_module", "(none)", &PeakComposition::by_module},
                                                      {"phase", "by_phase", "(none)", &PeakComposition::by_phase},
                                                      {"step", "by_step", "(none)", &PeakComposition::by_step}};
inline const std::string& holder_label(const PeakHolder& h, const PeakHolderList& l) {
  static const std::string none[] = {"(no op)", "(none)"};
  return h.key.empty() && !h.rest ? none[l.rows != &PeakComposition::by_op] : h.key;
}

// What the replay could not pair (counted, skipped; one line on stderr).
struct BlockProblems {
  uint64_t bad = 0;                 // block events without a numeric addr (or an alloc's size or total) (skipped)
  uint64_t free_without_alloc = 0;  // frees of addresses with no allocation in the trace (skipped)
  uint64_t alloc_over_live = 0;     // allocations at an address already live (its free missing: taken as freed)
  uint64_t late = 0;                // events earlier than their address's last one read (used by time)
  uint64_t never_freed = 0;         // allocations still live at the end of the trace (normal: parameters, caches)
};

inline constexpr size_t kPeakHolderRows = 10;

// A block event's fields, decoded (false: not a block event).
struct BlockEvent {
  bool alloc = false;
  uint64_t addr = 0;
  double size = 0, total = 0;  // a free without them (as written now): 0 and -1
  std::string_view op, device, pid, tid;
  int64_t ts = 0;
  uint64_t seq = 0;  // its place among its thread's block events (a thread's events are in order in the file)
};

// Decodes only lines that can be block events ("addr" in them), and
// numbers each thread's block events in file order.
class BlockDecoder {
 public:
  BlockDecoder();
  // 1: a block event in `b`; 0: not one; -1: a block event without its numbers (bad).
  int decode(std::string_view line, size_t cap, BlockEvent& b, DecodeStatus& st);

 private:
  EventDecoder decoder_;
  Event ev_;
  std::map<std::string, uint64_t, std::less<>> seq_;  // by "pid\0tid"
  std::string key_;
};

// Pass 1: each series' peak event (the highest total, the earliest of equal
// ones; a free without a total is none: it lowers the total, never peaks).
class BlockPeakFinder {
 public:
  void consume(std::string_view line, size_t cap);
  // The peak event: the thread's events up to `seq` and the other threads'
  // up to `ts` (whole microseconds by default: ties between threads are
  // taken as before it) are before it.
  struct Peak {
    double total = 0;
    int64_t ts = 0;
    std::string tid;
    uint64_t seq = 0;
    // Found through the counter track rather than a block event's total
    // (the alloc that reached the track's peak carries none in the input:
    // a time window, a dropped record-high alloc): the peak is the alloc of
    // `tid` at `ts` (`seq` 0 until the replay finds it), the track's value.
    bool by_sample = false;
  };
  std::map<std::pair<std::string, std::string>, Peak> peaks;  // (pid, device)
  uint64_t bad = 0;

 private:
  BlockDecoder decoder_;
};

// Pass 2: the blocks replayed up to each series' peak, and over the whole
// trace for the counts; the modules and phases of the live blocks from the
// complete events around them on their thread.
class BlockReplay {
 public:
  explicit BlockReplay(const std::map<std::pair<std::string, std::string>, BlockPeakFinder::Peak>& peaks);
  void consume(std::string_view line, size_t cap);
  // The compositions (by pid, then device) with the steps of `plan`; the counts;
  // in `unheld`, the peaks whose allocation the input lacks (pid, device,
  // peak and its time alone: their composition cannot be given).
  std::vector<PeakComposition> finish(const StepPlan& plan, BlockProblems& problems,
                                      std::vector<PeakComposition>& unheld);

 private:
  struct Block {
    int64_t ts = 0;
    uint64_t seq = 0;
    double size = 0;
    const std::string* tid = nullptr;  // pooled strings
    const std::string* op = nullptr;
    const std::string* module = nullptr;
    const std::string* phase = nullptr;
    int64_t module_dur = -1, phase_dur = -1;  // the enclosing event each came from: the shortest wins
    int64_t replaced_ts = -1;                 // the allocation it replaced at a live address (its free unread)
    bool freed = false;                       // a free read before its allocation (late): a tombstone
  };
  // A block event kept whole (a peak found by the track: its thread's events at its time).
  struct HeldEvent {
    bool alloc = false;
    uint64_t addr = 0, seq = 0;
    double size = 0;
    int64_t ts = 0;
    std::string op, device, pid, tid;
  };
  // A complete event that can name a module or phase, kept whole.
  struct Enclosing {
    std::string pid, tid, module, phase;
    bool backward = false;
    int64_t ts = 0, dur = 0;
  };
  struct Series {
    BlockPeakFinder::Peak peak;
    std::unordered_map<uint64_t, Block> at_peak;  // live at the peak (events up to it)
    std::unordered_map<uint64_t, Block> all;      // live at the end (every event): the counts
    // A peak by the track, not yet found: the peak thread's block events at
    // the peak's time (which of them reached it is known once they are all
    // read), and the complete events read meanwhile around that time.
    bool pending = false, found = false;
    std::vector<HeldEvent> held;
    std::vector<Enclosing> enclosing;
  };
  // The peak's events before `b`: on its thread by number, elsewhere by time.
  static bool up_to_peak(const Series& s, const BlockEvent& b);
  void resolve(Series& s);
  void replay(std::unordered_map<uint64_t, Block>& live, const BlockEvent& b, bool count);
  // `b` comes after `x`: by the thread's order on one thread, else by time (a tie: after).
  static bool after(const BlockEvent& b, const Block& x) { return *x.tid == b.tid ? b.seq > x.seq : b.ts >= x.ts; }
  void enclose(std::string_view pid, std::string_view tid, int64_t ts, int64_t dur, std::string_view module,
               std::string_view phase, bool backward);
  const std::string* pooled(std::string_view s);
  // "a\0b" in key_ (reused: no allocation per event).
  const std::string& key(std::string_view a, std::string_view b);

  std::map<std::string, Series, std::less<>> series_;  // by key(pid, device)
  // By key(pid, tid): the at-peak blocks of every series of that pid, by
  // allocation time (for the complete events that enclose them).
  std::map<std::string, std::multimap<int64_t, std::pair<Series*, uint64_t>>, std::less<>> by_thread_;
  std::string key_;
  std::set<std::string, std::less<>> pool_;
  BlockDecoder blocks_;
  EventDecoder decoder_;
  Event ev_;
  BlockProblems problems_;
  size_t pending_ = 0;  // series whose peak (by the track) is not found yet
};

// "skipped 3 frees without an allocation; ..." ("" when nothing to say).
std::string block_problems_line(const BlockProblems& p);

}  // namespace dftracer::analyze
