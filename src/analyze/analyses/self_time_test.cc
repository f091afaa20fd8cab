// Self time on hand-made traces with known nesting: exact self times, and the
// self times of each thread adding up to its traced time (the union of its
// events), whatever the order, the pieces and the threads they are read in.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "self_time.hpp"
#include "summary.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

// Self-time accumulators by name, as the summary keeps them per group.
using Groups = std::map<std::string, int64_t>;

void add_to(SelfTimeTracker& t, Groups& g, const std::string& name, int64_t ts_ns, int64_t dur_ns,
            const std::string& pid = "1", const std::string& tid = "1") {
  auto& group = *g.try_emplace(name, 0).first;
  t.add(pid, tid, ts_ns, dur_ns, &group.second, &group.first);
}

// Feeds (name, ts, dur) events in microseconds to one tracker; self times by name, in us.
struct Feed {
  SelfTimeTracker tracker;
  Groups self;
  void add(const std::string& name, int64_t ts_us, int64_t dur_us, const std::string& pid = "1",
           const std::string& tid = "1") {
    add_to(tracker, self, name, ts_us * 1000, dur_us * 1000, pid, tid);
  }
  void add_ns(const std::string& name, int64_t ts_ns, int64_t dur_ns) { add_to(tracker, self, name, ts_ns, dur_ns); }
  Groups done(int64_t unit = 1000) {
    tracker.finish();
    tracker.resolve([this](const std::string& k) { return &self[k]; });
    Groups out;
    for (auto& [k, v] : self) out[k] = v / unit;
    return out;
  }
};

int64_t sum(const Groups& m) {
  int64_t s = 0;
  for (auto& [k, v] : m) s += v;
  return s;
}

// step [0,100) > fwd [10,60) > {mm [10,30), add [35,40)}; opt [70,90).
void expect_step_tree(Groups s) {
  EXPECT_EQ(s["mm"], 20);
  EXPECT_EQ(s["add"], 5);
  EXPECT_EQ(s["fwd"], 25);
  EXPECT_EQ(s["opt"], 20);
  EXPECT_EQ(s["step"], 30);
  EXPECT_EQ(sum(s), 100);  // the thread's traced time
}

struct Ev {
  const char* name;
  int64_t ts_us, dur_us;
};
// The tree above, in the order it is written (each event when it ends).
const std::vector<Ev> kStepTreeEndOrder = {{"mm", 10, 20}, {"add", 35, 5}, {"fwd", 10, 50}, {"opt", 70, 20},
                                           {"step", 0, 100}};

TEST(SelfTime, EndOrderThreeLevels) {
  Feed f;
  for (const Ev& e : kStepTreeEndOrder) f.add(e.name, e.ts_us, e.dur_us);
  expect_step_tree(f.done());
}

TEST(SelfTime, StartOrderNestsTheSame) {
  // The same tree written parent first (a trace sorted by start time).
  std::vector<Ev> by_start = kStepTreeEndOrder;
  std::stable_sort(by_start.begin(), by_start.end(), [](const Ev& a, const Ev& b) {
    return a.ts_us != b.ts_us ? a.ts_us < b.ts_us : a.dur_us > b.dur_us;
  });
  Feed f;
  for (const Ev& e : by_start) f.add(e.name, e.ts_us, e.dur_us);
  expect_step_tree(f.done());
}

TEST(SelfTime, EqualTimestampsCountOnce) {
  // A graph call and its only op share start and end (the op ends at the
  // call's end); a zero-length event sits at the same start.
  Feed f;
  f.add("zero", 5, 0);
  f.add("op", 5, 40);
  f.add("call", 5, 40);
  auto s = f.done();
  EXPECT_EQ(s["op"], 40);
  EXPECT_EQ(s["call"], 0);  // written last: the parent, with nothing of its own
  EXPECT_EQ(s["zero"], 0);
  EXPECT_EQ(sum(s), 40);
}

TEST(SelfTime, ChildLongerThanParentFromRounding) {
  // Rounding made the child 400 ns longer at each end than its parent; written first.
  Feed f;
  f.add_ns("child", 99'600, 100'800);
  f.add_ns("parent", 100'000, 100'000);
  auto s = f.done(1);
  EXPECT_EQ(s["child"], 100'800);
  EXPECT_EQ(s["parent"], 0);    // clamped: never negative
  EXPECT_EQ(sum(s), 100'800);  // the union of the two
}

TEST(SelfTime, CutByACrashLeavesChildrenTopLevel) {
  // The enclosing step never ended (killed): its ops are top-level, nothing lost.
  Feed f;
  f.add("op", 0, 10);
  f.add("op", 20, 10);
  f.add("inner", 40, 5);
  f.add("outer", 35, 20);
  auto s = f.done();
  EXPECT_EQ(s["op"], 20);
  EXPECT_EQ(s["inner"], 5);
  EXPECT_EQ(s["outer"], 15);
  EXPECT_EQ(sum(s), 40);
}

TEST(SelfTime, ThreadsAndProcessesNestSeparately) {
  // The same intervals on other threads and processes, interleaved: no cross-nesting.
  Feed f;
  f.add("op", 10, 10, "1", "1");
  f.add("op", 10, 10, "1", "2");
  f.add("op", 12, 5, "2", "1");
  f.add("step", 0, 50, "1", "1");
  f.add("step", 0, 50, "2", "2");
  auto s = f.done();
  EXPECT_EQ(s["op"], 25);
  EXPECT_EQ(s["step"], 90);  // 40 on pid 1 tid 1, 50 on pid 2 tid 2
  EXPECT_EQ(sum(s), 50 + 10 + 50 + 5);
}

TEST(SelfTime, RunsReadOnDifferentTrackersAreJoined) {
  // A thread's children in one piece and their parent in the next, read by
  // two trackers, the later piece first.
  Groups self;
  SelfTimeTracker a, b;
  b.begin_piece(0);
  add_to(b, self, "op", 50, 10);
  add_to(b, self, "step", 0, 100);
  add_to(b, self, "op", 200, 10);
  a.begin_piece(0);
  add_to(a, self, "op", 10, 10);
  add_to(a, self, "op", 30, 10);
  a.finish();
  b.finish();
  a.merge(b);
  a.resolve([&](const std::string& k) { return &self[k]; });
  EXPECT_EQ(self["op"], 40);
  EXPECT_EQ(self["step"], 70);
}

TEST(SelfTime, RunsApartInTimeAreLeftOutOfTheJoinButTouchingOnesJoin) {
  // Five pieces of one thread: [0,100) holds a parent, [10,40) its children,
  // [500,600) stands apart, [1000,1010) ends where [1010,1100) (its parent,
  // from 1000) begins -- spans that touch still join -- and the runs come in
  // no time order.
  Groups self;
  SelfTimeTracker t;
  t.begin_piece(0);
  add_to(t, self, "far", 500, 100);
  t.begin_piece(0);
  add_to(t, self, "op", 10, 10);
  add_to(t, self, "op", 30, 10);
  t.begin_piece(0);
  add_to(t, self, "late", 1000, 10);
  t.begin_piece(0);
  add_to(t, self, "step", 0, 100);
  t.begin_piece(0);
  add_to(t, self, "outer", 1000, 100);
  t.finish();
  t.resolve([&](const std::string& k) { return &self[k]; });
  EXPECT_EQ(self["op"], 20);
  EXPECT_EQ(self["step"], 80);
  EXPECT_EQ(self["far"], 100);
  EXPECT_EQ(self["late"], 10);
  EXPECT_EQ(self["outer"], 90);
}

TEST(SelfTime, ManyTopLevelEventsStayBoundedAndExact) {
  // More unparented events than the stack keeps, then one parent of them all:
  // folded into blocks, still exact because the parent covers every block.
  Feed f;
  const int n = 3 * static_cast<int>(SelfTimeTracker::kMaxOpenEvents);
  for (int i = 0; i < n; ++i) f.add("op", 10 + 3 * i, 2);
  f.add("run", 0, 10 + 3 * n);
  auto s = f.done();
  EXPECT_EQ(s["op"], 2 * n);
  EXPECT_EQ(s["run"], 10 + 3 * n - 2 * n);
  EXPECT_GT(f.tracker.stats().folded, 0u);
  EXPECT_EQ(f.tracker.stats().approximated, 0u);
}

TEST(SelfTime, AParentStartingAmongThousandsOfFoldedSiblingsIsExact) {
  // The first compile of a real run: thousands of I/O calls at top level
  // (imports), then 12,000 more inside one late compile event that starts in
  // the middle of them. Siblings folded off the stack keep their ends and
  // summed durations, so the compile takes exactly the 12,000 inside it.
  Feed f;
  const int before = 5000, inside = 12000;
  int64_t t = 0;
  for (int i = 0; i < before; ++i, t += 10) f.add("io", t, 2);  // sparser than inside: no estimate is right
  const int64_t compile_ts = t;
  for (int i = 0; i < inside; ++i, t += 3) f.add("io", t + 1, 2);
  f.add("compile", compile_ts, t + 5 - compile_ts);
  f.add("step", compile_ts - 1, t + 10 - compile_ts);  // encloses the compile, not the first 5,000
  auto s = f.done();
  EXPECT_EQ(s["io"], 2 * (before + inside));
  EXPECT_EQ(s["compile"], t + 5 - compile_ts - 2 * inside);
  EXPECT_EQ(s["step"], 5);
  EXPECT_GT(f.tracker.stats().folded, 0u);
  EXPECT_EQ(f.tracker.stats().approximated, 0u);
}

TEST(SelfTime, PastTheFoldedBoundOnlyASplitOfTheOldestBlockIsEstimated) {
  // More siblings than kMaxFoldedEvents: the oldest become one block. A parent
  // of all of them is still exact; one that starts inside that block is the
  // one estimate, and is counted.
  const int n = static_cast<int>(SelfTimeTracker::kMaxFoldedEvents + 3 * SelfTimeTracker::kMaxOpenEvents);
  Feed all;
  for (int i = 0; i < n; ++i) all.add("op", 10 + 3 * i, 2);
  all.add("run", 0, 10 + 3 * n);
  auto s = all.done();
  EXPECT_EQ(s["op"], 2 * n);
  EXPECT_EQ(s["run"], 10 + 3 * n - 2 * n);
  EXPECT_EQ(all.tracker.stats().approximated, 0u);
  Feed split;
  for (int i = 0; i < n; ++i) split.add("op", 10 + 3 * i, 2);
  split.add("run", 10 + 3 * 100, 3 * (n - 100));  // the last n - 100 events
  auto t = split.done();
  EXPECT_EQ(t["op"], 2 * n);
  EXPECT_EQ(split.tracker.stats().approximated, 1u);
  EXPECT_NEAR(static_cast<double>(t["run"]), static_cast<double>(3 * (n - 100) - 2 * (n - 100)), 3);
}

// ---------------------------------------------------------------------------
// Through the reader: random trees on several processes and threads, written
// as they end into a multi-member .pfw.gz, read on 1 to 4 threads in small
// pieces. Self times are exact; per thread they add up to its traced time.

struct Tree {
  std::vector<std::string> lines;                 // in end order per thread, threads interleaved
  std::map<std::string, int64_t> self_by_name;    // expected, ns
  std::map<std::string, int64_t> traced_by_tid;   // expected, ns
};

std::string x_line(int id, const std::string& name, int pid, int tid, int64_t ts_ns, int64_t dur_ns) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"id\":%d,\"name\":\"%s\",\"cat\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%lld.%03lld,\"dur\":%lld.%03lld,"
                "\"ph\":\"X\"}",
                id, name.c_str(), pid, tid, static_cast<long long>(ts_ns / 1000), static_cast<long long>(ts_ns % 1000),
                static_cast<long long>(dur_ns / 1000), static_cast<long long>(dur_ns % 1000));
  return buf;
}

Tree random_tree(unsigned seed) {
  std::mt19937_64 rng(seed);
  Tree t;
  std::vector<std::vector<std::string>> per_thread;
  int id = 0;
  for (int pid = 1; pid <= 2; ++pid) {
    for (int tid = 1; tid <= 3; ++tid) {
      std::vector<std::string> out;
      std::string tkey = std::to_string(pid * 10 + tid);
      // Emits the subtree in [ts, ts+len) at `depth`, children first; returns nothing.
      std::function<void(int64_t, int64_t, int)> emit = [&](int64_t ts, int64_t len, int depth) {
        int64_t children = 0;
        int64_t cur = ts;
        if (depth < 4) {
          int n = static_cast<int>(rng() % 4);
          for (int c = 0; c < n && cur < ts + len; ++c) {
            int64_t gap = static_cast<int64_t>(rng() % 50);
            int64_t clen = static_cast<int64_t>(rng() % 2000);
            if (cur + gap + clen > ts + len) break;
            emit(cur + gap, clen, depth + 1);
            children += clen;
            cur += gap + clen;
          }
        }
        std::string name = "d" + std::to_string(depth) + "_" + std::to_string(rng() % 3);
        out.push_back(x_line(++id, name, pid, tid, ts, len));
        t.self_by_name[name] += len - children;
      };
      int64_t ts = 1'700'000'000'000'000'000 + 1000 * tid;  // epoch-scale times
      for (int top = 0; top < 60; ++top) {
        int64_t len = 100 + static_cast<int64_t>(rng() % 9000);
        emit(ts, len, 0);
        t.traced_by_tid[tkey] += len;
        ts += len + static_cast<int64_t>(rng() % 300);
      }
      per_thread.push_back(std::move(out));
    }
  }
  // Interleave the threads in runs, as the writer drains their chunks.
  std::vector<size_t> pos(per_thread.size(), 0);
  for (bool any = true; any;) {
    any = false;
    for (size_t k = 0; k < per_thread.size(); ++k) {
      size_t run = 1 + rng() % 40;
      for (size_t j = 0; j < run && pos[k] < per_thread[k].size(); ++j) t.lines.push_back(per_thread[k][pos[k]++]);
      any |= pos[k] < per_thread[k].size();
    }
  }
  return t;
}

TEST(SelfTimeTrace, RandomTreesExactOnAnyThreadCountAndPieces) {
  for (unsigned seed : {1u, 2u, 3u}) {
    Tree t = random_tree(seed);
    TempDir dir;
    write_gz(dir.file("t.pfw.gz"), pfw_text(t.lines), 37, true);
    ReadOptions ro;
    ro.min_piece_bytes = 1;  // as many pieces as the threads can take
    for (unsigned threads : {1u, 2u, 4u}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(threads) + " threads");
      Summary s = summarize({dir.file("t.pfw.gz")}, parse_group_keys("name"), 0, threads, ro);
      ASSERT_EQ(s.rows.size(), t.self_by_name.size());
      for (const SummaryRow& r : s.rows) EXPECT_DOUBLE_EQ(r.self_us, ns_to_us(t.self_by_name[r.key[0]])) << r.key[0];
      for (size_t i = 1; i < s.rows.size(); ++i) EXPECT_GE(s.rows[i - 1].self_us, s.rows[i].self_us);
      Summary by_thread = summarize({dir.file("t.pfw.gz")}, parse_group_keys("pid,tid"), 0, threads, ro);
      int64_t traced = 0;
      double shares = 0;
      for (const SummaryRow& r : by_thread.rows) {
        const int64_t want = t.traced_by_tid[std::to_string(std::stoi(r.key[0]) * 10 + std::stoi(r.key[1]))];
        EXPECT_DOUBLE_EQ(r.self_us, ns_to_us(want)) << r.key[0] << "/" << r.key[1];
        traced += want;
        shares += r.share;
      }
      EXPECT_DOUBLE_EQ(by_thread.traced_us, ns_to_us(traced));
      EXPECT_NEAR(shares, 1.0, 1e-12);
    }
  }
}

TEST(SelfTimeTrace, SortTotalKeepsTheInclusiveView) {
  TempDir dir;
  write_file(dir.file("t.pfw"), pfw_text({x_line(1, "op", 1, 1, 10'000, 30'000), x_line(2, "op", 1, 1, 50'000, 30'000),
                                          x_line(3, "step", 1, 1, 0, 100'000)}));
  Summary by_self = summarize({dir.file("t.pfw")}, parse_group_keys("name"), 0, 1);
  ASSERT_EQ(by_self.rows.size(), 2u);
  EXPECT_EQ(by_self.rows[0].key[0], "op");  // 60 us of self time beats the step's own 40 us
  EXPECT_DOUBLE_EQ(by_self.rows[0].self_us, 60.0);
  EXPECT_DOUBLE_EQ(by_self.rows[0].share, 0.6);
  EXPECT_DOUBLE_EQ(by_self.rows[1].self_us, 40.0);
  EXPECT_DOUBLE_EQ(by_self.traced_us, 100.0);
  Summary top1 = summarize({dir.file("t.pfw")}, parse_group_keys("name"), 1, 1, {}, SummarySort::total);
  ASSERT_EQ(top1.rows.size(), 1u);
  EXPECT_EQ(top1.rows[0].key[0], "step");
  EXPECT_DOUBLE_EQ(top1.rows[0].total_us, 100.0);
  EXPECT_THROW(parse_summary_sort("count"), std::invalid_argument);
}

}  // namespace
}  // namespace dftracer::analyze::testing

namespace dftracer::analyze::testing {
namespace {

std::string ev_line(int id, const std::string& name, const std::string& cat, int64_t ts_us, int64_t dur_us,
                    const std::string& args = "") {
  return "{\"id\":" + std::to_string(id) + ",\"name\":\"" + name + "\",\"cat\":\"" + cat +
         "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(ts_us) + ",\"dur\":" + std::to_string(dur_us) +
         ",\"ph\":\"X\"" + (args.empty() ? "" : ",\"args\":{" + args + "}") + "}";
}

TEST(SelfTimeTrace, CompileVersusRunByCategory) {
  // One step [0,1000) written as it ends: a compile region with a recompile
  // inside it, forward and backward ops, an optimizer step, a data read;
  // after it a compiled optimizer step's op.
  TempDir dir;
  write_file(dir.file("t.pfw"),
             pfw_text({ev_line(1, "recompile", "compile", 50, 100, "\"reason\":\"shape\""),
                       ev_line(2, "dynamo.trace", "compile", 0, 300),
                       ev_line(3, "function.mm", "op", 300, 100, "\"phase\":\"forward\""),
                       ev_line(4, "function.mm", "op", 400, 50, "\"phase\":\"inference\""),
                       ev_line(5, "function.mm_backward", "op", 450, 150, "\"phase\":\"backward\""),
                       ev_line(6, "Optimizer.step#SGD.step", "torch", 600, 100),
                       ev_line(7, "read", "POSIX", 700, 40), ev_line(8, "enumerate(DataLoader)#x", "torch", 740, 60),
                       ev_line(9, "train_step", "region", 0, 1000),
                       // a compiled optimizer step's op (torch.compile(opt.step)): its phase says so
                       ev_line(10, "function._foreach_mul_.Scalar", "dynamo", 1000, 30, "\"phase\":\"optimizer\"")}));
  Summary s = summarize({dir.file("t.pfw")}, parse_group_keys("category"), 0, 1);
  std::map<std::string, double> self;
  for (const SummaryRow& r : s.rows) self[r.key[0]] = r.self_us;
  EXPECT_EQ(self, (std::map<std::string, double>{{"compile", 300},
                                                 {"forward", 150},
                                                 {"backward", 150},
                                                 {"optimizer", 130},
                                                 {"data", 100},
                                                 {"other", 200}}));
  EXPECT_DOUBLE_EQ(s.traced_us, 1030.0);
  EXPECT_EQ(s.keys[0].label, "category");
}

}  // namespace
}  // namespace dftracer::analyze::testing
