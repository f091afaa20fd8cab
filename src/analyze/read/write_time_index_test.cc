// The write-time index (src/file/member_index.h, read by trace_index.hpp and
// index_summary.hpp), end to end: traces written by the real writer (the
// core's C API, a real .pfw.gz and .idx on disk), then summaries answered
// from the index compared with full reads of the same file, time windows
// with member skipping compared with filtered full reads, and damaged,
// truncated or stale indexes that must fall back to reading.
#include <gtest/gtest.h>
#include <zlib.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "dftracer/dftracer.h"
#include "event_decoder.hpp"
#include "trace_reader.hpp"
#include "index_summary.hpp"
#include "partial_summary.hpp"
#include "summary.hpp"
#include "summary_expect.hpp"
#include "trace_files.hpp"
#include "trace_index.hpp"
#include "trace_window.hpp"
#include "mapped_file.hpp"

using namespace dftracer::analyze;
using namespace dftracer::analyze::testing;

namespace {

constexpr uint64_t kBase = 1700000000000000000ull;  // epoch ns

dft_id id(const char* s) { return dft_intern_cstr(s); }

// One thread's work: `steps` step regions, each with nested ops (children
// written first, as a region closes after what ran inside it), some ops
// overlapping without nesting, zero-length and sub-microsecond events.
void record_thread(int t, int steps, uint64_t base) {
  const char* ops[] = {"aten.mm", "aten.add", "quote\"d name", "\xc3\xa9t\xc3\xa9", ""};
  for (int s = 0; s < steps; ++s) {
    uint64_t t0 = base + uint64_t(s) * 2000000 + uint64_t(t) * 1000;
    for (int k = 0; k < 5; ++k) {
      uint64_t st = t0 + 10000 + uint64_t(k) * 150000;
      dft_complete_ns(id("inner"), id("cpu"), st + 1000, 20500 + uint64_t(k) * 333, nullptr, 0);
      dft_complete_ns(id(ops[(s + k) % 5]), id(k % 2 ? "compute" : "data"), st, 100000 + uint64_t(k) * 7, nullptr, 0);
    }
    dft_complete_ns(id("overlap"), id("cpu"), t0 + 900000, 400000, nullptr, 0);  // crosses the next op's start
    dft_complete_ns(id("zero"), id("cpu"), t0 + 1500000, 0, nullptr, 0);
    dft_complete_ns(id("step"), id("loop"), t0, 1800000, nullptr, 0);
    if (s % 3 == 0) dft_instant(id("mark"), id("loop"), nullptr, 0);
    if (s % 4 == 0) dft_flush();  // a new gzip member
  }
}

// A trace from the real writer: several threads, metadata, instants, real
// clock regions, many members, under the name `file` (or one beside it).
// Returns its path.
// `args`: when given, a JSON fragment (e.g. "\"flops\":1000") put on some
// events of every thread (as the compile backend's per-node args), and a
// dynamic double "bytes" arg on others.
std::string write_trace(const std::string& dir, int steps, bool ns_times, const char* args = nullptr) {
  setenv("DFTRACER_TIME_RESOLUTION", ns_times ? "ns" : "us", 1);
  EXPECT_EQ(dft_init_opt_in(dir.c_str(), nullptr, 7), 0);
  dft_metadata("run", "index test");
  std::vector<std::thread> threads;
  for (int t = 1; t <= 2; ++t) threads.emplace_back(record_thread, t, steps, kBase);
  record_thread(0, steps, kBase);
  uint64_t b = dft_region_begin();
  dft_region_end(id("real clock"), id("cpu"), b, nullptr, 0);
  if (args) {
    dft_arg a{};
    a.type = DFT_ARG_JSON;
    a.v.id = dft_intern_json_fragment(args, std::strlen(args));
    dft_arg b{};
    b.type = DFT_ARG_DOUBLE;
    b.key = id("bytes");
    for (int k = 0; k < 40; ++k) {
      dft_complete_ns(id(k % 2 ? "aten.mm" : "aten.add"), id("compute"), kBase + uint64_t(k) * 9000, 5000 + k, &a, 1);
      b.v.d = 0.5 * k;  // halves: sums exact in any order
      dft_complete_ns(id("aten.add"), id("compute"), kBase + uint64_t(k) * 9000 + 6000, 700, &b, 1);
    }
  }
  for (auto& th : threads) th.join();
  std::string path = dft_trace_path();
  dft_finalize();
  return path;
}

Summary read_summary(const std::string& path, const std::string& by, bool use_index, int64_t from = INT64_MIN,
                     int64_t to = INT64_MAX, unsigned threads = 2) {
  ReadOptions o;
  o.use_index = use_index;
  o.from_ns = from;
  o.to_ns = to;
  return summarize({path}, parse_group_keys(by), 0, threads, o);
}

const char* kGroupings[] = {"name", "cat", "pid", "tid", "name,cat", "cat,tid", "tid,name,pid"};

// Loads the index of `path` as the reader does (the trace mapped, the .idx
// beside it checked against it); a failure says why it was not usable.
::testing::AssertionResult usable_index(const std::string& path, TraceIndex* index) {
  MappedFile map(path);
  std::string why;
  if (load_trace_index(path, map.data(), map.size(), index, &why) == IndexStatus::Usable)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "index of " << path << " not usable: " << why;
}

}  // namespace

TEST(WriteTimeIndex, IndexOnlySummaryEqualsFullReadForEveryGrouping) {
  for (bool ns : {false, true}) {
    TempDir d;
    std::string path = write_trace(d.file("t.pfw.gz"), 40, ns);
    for (const char* by : kGroupings) {
      Summary fast = read_summary(path, by, true);
      Summary full = read_summary(path, by, false);
      EXPECT_TRUE(fast.from_index) << by;
      EXPECT_FALSE(full.from_index) << by;
      EXPECT_GT(full.stats.json_bytes, 0u);
      expect_same_summary(fast, full, std::string(by) + (ns ? " ns" : " us"));
      expect_same_summary(fast, read_summary(path, by, false, INT64_MIN, INT64_MAX, 1), std::string(by) + " 1 thread");
    }
  }
}

// The Dask workers' path: a partial summary answers each finalized,
// indexed .pfw.gz from its index (nothing inflated) and reads the rest, and
// the combined parts equal one full read of everything.
TEST(WriteTimeIndex, PartialSummariesAnswerIndexedFilesFromTheirIndexes) {
  TempDir d;
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) files.push_back(write_trace(d.file("t" + std::to_string(i) + ".pfw.gz"), 10 + i, i == 1));
  setenv("DFTRACER_TRACE_COMPRESSION", "0", 1);  // a .pfw has no index: read
  files.push_back(write_trace(d.file("plain"), 9, false));
  unsetenv("DFTRACER_TRACE_COMPRESSION");
  ASSERT_EQ(files.back().substr(files.back().size() - 4), ".pfw");
  for (const char* by : kGroupings) {
    std::vector<GroupKey> keys = parse_group_keys(by);
    ReadOptions full;
    full.use_index = false;
    Summary want = summarize(files, keys, 0, 2, full);
    std::vector<std::string> parts = {partial_summary({files[0], files[1]}, {0, 1}, keys, 1),
                                      partial_summary({files[2], files[3]}, {2, 3}, keys, 1)};
    Summary got = combine_partials(parts, keys, 0);
    EXPECT_EQ(got.stats.indexed_files, 3u) << by;
    EXPECT_EQ(got.stats.files, 4u) << by;
    EXPECT_FALSE(got.from_index) << by;  // one file was read
    expect_same_summary(want, got, std::string("partials, by ") + by);
    Summary all_indexed = combine_partials({partial_summary({files[0], files[1], files[2]}, {0, 1, 2}, keys, 1)}, keys, 0);
    EXPECT_TRUE(all_indexed.from_index) << by;
    // --no-index on the workers reads every file.
    ReadOptions no_index;
    no_index.use_index = false;
    EXPECT_EQ(combine_partials({partial_summary(files, {0, 1, 2, 3}, keys, 1, no_index)}, keys, 0).stats.indexed_files,
              0u)
        << by;
  }
  // A key the index does not hold: every file is read.
  std::vector<GroupKey> step = parse_group_keys("args.step");
  EXPECT_EQ(combine_partials({partial_summary(files, {0, 1, 2, 3}, step, 1)}, step, 0).stats.indexed_files, 0u);
}

TEST(WriteTimeIndex, MemberStatisticsEqualTheMembersEvents) {
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 20, true);
  TraceIndex index;
  ASSERT_TRUE(usable_index(path, &index));
  ASSERT_EQ(index.version, 3);
  ASSERT_TRUE(index.finalized);
  ASSERT_GT(index.members.size(), 3u);
  // Each member alone, read through a window that holds exactly its times,
  // against its indexed counts: members are independent, lines whole.
  uint64_t complete = 0, metadata = 0, other = 0;
  for (const IndexedMember& m : index.members) {
    complete += m.complete;
    metadata += m.metadata;
    other += m.other;
    if (m.timed) EXPECT_LE(m.min_ts, m.max_ts);
    EXPECT_LE(m.max_ts, m.max_end);
  }
  Summary full = read_summary(path, "name", false);
  EXPECT_EQ(complete, full.complete_events);
  EXPECT_EQ(metadata, full.metadata_events);
  EXPECT_EQ(other, full.other_events);
  EXPECT_EQ(index.complete, full.complete_events);
  uint64_t cells = 0;
  for (const IndexedCell& c : index.cells) cells += c.count;
  EXPECT_EQ(cells, full.complete_events);
}

TEST(WriteTimeIndex, TimeWindowEqualsFilteredFullReadAndSkipsMembers) {
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 40, false);
  // Whole steps 10..19 of 40 (2 ms apart, from kBase), in us as written.
  const int64_t from = int64_t(kBase) + 10 * 2000000, to = int64_t(kBase) + 20 * 2000000;
  Summary windowed = read_summary(path, "name", true, from, to);
  EXPECT_FALSE(windowed.from_index);
  // Without the index every member is inflated and every line filtered.
  std::string idx = read_file(path + ".idx");
  ::unlink((path + ".idx").c_str());
  Summary filtered = read_summary(path, "name", true, from, to);
  expect_same_summary(windowed, filtered, "window");
  EXPECT_LT(windowed.stats.json_bytes, filtered.stats.json_bytes) << "no member was skipped";
  EXPECT_EQ(windowed.stats.boundary_mismatches, 0u);  // pieces around skipped members still line up
  EXPECT_EQ(windowed.stats.malformed, 0u);
  // By hand: 3 threads x 10 steps x 13 complete events (5 inner, 5 ops,
  // overlap, zero, step) start in the window.
  EXPECT_EQ(windowed.complete_events, 3u * 10 * 13);
  write_file(path + ".idx", idx);
  Summary all = read_summary(path, "name", false);
  EXPECT_GT(all.complete_events, windowed.complete_events);
}

// args.flops / args.bytes are summed by the writer into the C lines: the
// index answers, with the same gflops / gbps as a full read.
TEST(WriteTimeIndex, FilesWhoseEventsCarryFlopsAndBytesAnswerFromTheIndex) {
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 4, false, "\"flops\":1000,\"bytes\":4096");
  for (const char* by : {"name", "cat", "tid", "name,tid"}) {
    Summary s = read_summary(path, by, true);
    Summary full = read_summary(path, by, false);
    EXPECT_TRUE(s.from_index) << by;
    expect_same_summary(s, full, by);
    size_t with = 0;
    for (size_t i = 0; i < s.rows.size(); ++i) {
      EXPECT_EQ(std::isnan(s.rows[i].gbps), std::isnan(full.rows[i].gbps));
      if (std::isnan(full.rows[i].gflops)) continue;
      ++with;
      EXPECT_EQ(s.rows[i].gflops, full.rows[i].gflops) << by << " " << s.rows[i].key[0];
      EXPECT_EQ(s.rows[i].gbps, full.rows[i].gbps) << by << " " << s.rows[i].key[0];
    }
    EXPECT_GT(with, 0u) << by;
  }
}

// Args the writer cannot be sure the analyzer reads as it would (a string
// value, the key twice, a nested object) make the file read, same numbers.
TEST(WriteTimeIndex, FlopsTheIndexCannotReadExactlyMakeTheSummaryRead) {
  for (const char* args : {"\"flops\":\"1000\"", "\"flops\":1,\"flops\":2", "\"x\":{\"flops\":5},\"flops\":3",
                           "\"flops\":1e999"}) {
    SCOPED_TRACE(args);
    TempDir d;
    std::string path = write_trace(d.file("t.pfw.gz"), 2, false, args);
    Summary s = read_summary(path, "name", true);
    EXPECT_FALSE(s.from_index);
    expect_same_summary(s, read_summary(path, "name", false), args);
  }
}

// The memory capture's args are summary columns the index holds no sums of:
// a file with them is read. Other *_bytes args (a compiled graph's planned
// memory) are not summed, so the index still answers, with the same numbers.
TEST(WriteTimeIndex, MemoryArgsMakeTheSummaryReadOtherBytesArgsDoNot) {
  struct Case {
    const char* args;
    bool from_index;
  };
  for (const Case& c : {Case{"\"alloc_bytes\":64,\"flops\":10", false}, Case{"\"flops\":10,\"free_bytes\":64", false},
                        Case{"\"dev_alloc_bytes\":64", false}, Case{"\"dev_free_bytes\":64", false},
                        Case{"\"planned_alloc_bytes\":64,\"planned_live_bytes\":128,\"flops\":10", true},
                        Case{"\"planned_free_bytes\":64,\"bytes\":4096", true}}) {
    SCOPED_TRACE(c.args);
    TempDir d;
    std::string path = write_trace(d.file("t.pfw.gz"), 2, false, c.args);
    Summary s = read_summary(path, "name", true);
    EXPECT_EQ(s.from_index, c.from_index);
    expect_same_summary(s, read_summary(path, "name", false), c.args);
  }
}

namespace {

// An index damaged by `damage` must be ignored: the summary is read from
// the events and equals the summary of the same trace without any index;
// `warned`: the read's one line about skipped input counts it.
void expect_fallback(const std::function<void(const std::string& path)>& damage, const char* what,
                     bool warned = true) {
  SCOPED_TRACE(what);
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 12, false);
  damage(path);
  Summary s = read_summary(path, "name", true);
  EXPECT_FALSE(s.from_index);
  EXPECT_EQ(s.stats.bad_indexes, warned ? 1u : 0u);
  ::unlink((path + ".idx").c_str());
  Summary plain = read_summary(path, "name", true);
  expect_same_summary(s, plain, what);
}

}  // namespace

TEST(WriteTimeIndex, TruncatedCorruptOrStaleIndexFallsBackToReading) {
  expect_fallback([](const std::string& p) {  // a crash before finalize: no summary lines
    std::string idx = read_file(p + ".idx");
    write_file(p + ".idx", idx.substr(0, idx.find("\nC ") + 1));
  }, "truncated", /*warned=*/false);  // a crashed run's index: still good for its members
  expect_fallback([](const std::string& p) {  // one digit of a summary cell changed: its CRC fails
    std::string idx = read_file(p + ".idx");
    size_t c = idx.find("\nC ") + 3;
    idx[c] = idx[c] == '1' ? '2' : '1';
    write_file(p + ".idx", idx);
  }, "corrupt");
  expect_fallback([](const std::string& p) {  // the trace grew after the index was written
    std::string gz = read_file(p);
    write_file(p, gz + gz.substr(0, gz.size() / 2));
  }, "stale: longer trace");
  expect_fallback([](const std::string& p) {  // another run's trace under the same index
    TempDir other;
    std::string q = write_trace(other.file("t.pfw.gz"), 12, true);
    write_file(p, read_file(q));
  }, "stale: other trace");
  expect_fallback([](const std::string& p) {  // an index of another trace with the same layout:
    std::string idx = read_file(p + ".idx");  // a member's gzip CRC differs (its line's own CRC is right)
    size_t b = idx.find("\nM ") + 1, e = idx.find(" *", b);
    std::string line = idx.substr(b, e - b);
    size_t f = 0;
    for (int k = 0; k < 5; ++k) f = line.find(' ', f) + 1;  // M offset size raw lines |crc
    line.replace(f, line.find(' ', f) - f, "12345");
    char tail[16];
    std::snprintf(tail, sizeof tail, " *%08lx", crc32(0L, reinterpret_cast<const Bytef*>(line.data()), line.size()));
    write_file(p + ".idx", idx.substr(0, b) + line + tail + idx.substr(idx.find('\n', e)));
  }, "stale: member CRC");
  expect_fallback([](const std::string& p) {  // garbage
    write_file(p + ".idx", "#dftracer-idx 2 *00000000\nM 1 2 3\n");
  }, "garbage");
}

TEST(WriteTimeIndex, IndexOfACrashedRunStillSplitsMembers) {
  // No F line: the members stay usable for parallel reading and windows.
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 12, false);
  std::string idx = read_file(path + ".idx");
  write_file(path + ".idx", idx.substr(0, idx.find("\nC ") + 1));
  TraceIndex index;
  EXPECT_TRUE(usable_index(path, &index));
  EXPECT_FALSE(index.finalized);
  ReadStats st = read_summary(path, "name", true).stats;
  EXPECT_EQ(st.bad_indexes, 0u);
}

TEST(WriteTimeIndex, VersionOneIndexStillReads) {
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 12, false);
  TraceIndex index;
  ASSERT_TRUE(usable_index(path, &index));
  std::string v1;
  for (const IndexedMember& m : index.members)
    v1 += std::to_string(m.entry.offset) + " " + std::to_string(m.entry.size) + " " +
          std::to_string(m.entry.uncompressed) + " " + std::to_string(m.entry.lines) + "\n";
  write_file(path + ".idx", v1);
  Summary s = read_summary(path, "name", true);
  EXPECT_FALSE(s.from_index);
  EXPECT_EQ(s.stats.bad_indexes, 0u);
  expect_same_summary(s, read_summary(path, "name", false), "v1");
}

namespace {

// The complete events of one thread of a sample, in file order.
struct ThreadEvents {
  std::vector<std::string> names, cats;
  std::vector<int64_t> ts, dur;
};

class SampleCollector : public LineConsumer {
 public:
  std::map<std::string, ThreadEvents> threads;  // by "pid tid"
  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = decoder_.decode(line, cap, ev_);
    if (st == DecodeStatus::Ok && ev_.is_complete() && ev_.has_dur && ev_.has_ts && ev_.ts_ns >= 0 &&
        ev_.dur_ns >= 0) {
      ThreadEvents& t = threads[std::string(ev_.pid_text) + " " + std::string(ev_.tid_text)];
      t.names.emplace_back(ev_.name);
      t.cats.emplace_back(ev_.cat);
      t.ts.push_back(ev_.ts_ns);
      t.dur.push_back(ev_.dur_ns);
    }
    return st;
  }

 private:
  EventDecoder decoder_;
  Event ev_;
};

}  // namespace

// Every sample (DFTracer's own traces, and pydftracer's in tests/data)
// replayed through our writer -- each of its threads' complete events, in
// file order, on a thread of ours, with their names, categories and times --
// gives a trace whose index-only summaries equal its full read: real
// nesting patterns, overlaps and names, not only generated ones.
TEST(WriteTimeIndex, SamplesReplayedThroughTheWriterSummarizeTheSameFromTheIndex) {
  std::vector<std::string> samples = {std::string(DFTRACER_TEST_DATA_DIR) + "/dftracer-2.2-pydftracer.pfw.gz"};
  for (const char* s : {"cm1-DEFAULT-3537780-preload.pfw.gz", "test-2023.pfw.gz"}) {
    std::string p = std::string(DFTRACER_SAMPLES_DIR) + "/" + s;
    if (::access(p.c_str(), R_OK) == 0) samples.push_back(p);
  }
  ASSERT_EQ(samples.size(), 3u) << "DFTracer's samples not found under " << DFTRACER_SAMPLES_DIR;
  setenv("DFTRACER_TIME_RESOLUTION", "ns", 1);
  for (const std::string& sample : samples) {
    SCOPED_TRACE(sample);
    SampleCollector c;
    read_traces({sample}, {&c});
    ASSERT_FALSE(c.threads.empty());
    TempDir d;
    ASSERT_EQ(dft_init_opt_in(d.file("r.pfw.gz").c_str(), nullptr, 3), 0);
    size_t n = 0;
    for (const auto& [key, t] : c.threads) {
      std::thread replay([&t] {
        for (size_t i = 0; i < t.ts.size(); ++i) {
          dft_complete_ns(dft_intern(t.names[i].data(), t.names[i].size()), dft_intern(t.cats[i].data(), t.cats[i].size()),
                          static_cast<uint64_t>(t.ts[i]), static_cast<uint64_t>(t.dur[i]), nullptr, 0);
          if (i % 500 == 499) dft_flush();
        }
      });
      replay.join();
      n += t.ts.size();
    }
    std::string path = dft_trace_path();
    dft_finalize();
    for (const char* by : kGroupings) {
      Summary fast = read_summary(path, by, true);
      Summary full = read_summary(path, by, false);
      EXPECT_TRUE(fast.from_index) << by;
      EXPECT_EQ(full.complete_events, n + 2) << by;  // and our start and end events
      expect_same_summary(fast, full, by);
    }
  }
}

// A thread-churning program: past MemberIndex::kMaxThreads threads the
// writer gives the whole-file summary up (its memory in the traced process
// stays bounded); the members stay indexed and summaries read the events.
TEST(WriteTimeIndex, ThreadChurnGivesTheSummaryUpAndSummariesRead) {
  TempDir d;
  ASSERT_EQ(dft_init_opt_in(d.file("churn.pfw.gz").c_str(), nullptr, 5), 0);
  for (int t = 0; t < 200; ++t) {
    std::thread([t] {
      for (int k = 0; k < 20; ++k) dft_complete_ns(id("work"), id("cpu"), kBase + t * 100000 + k * 1000, 500, nullptr, 0);
    }).join();
  }
  std::string path = dft_trace_path();
  dft_finalize();
  TraceIndex index;
  ASSERT_TRUE(usable_index(path, &index));
  EXPECT_TRUE(index.finalized);
  EXPECT_FALSE(index.exact);
  EXPECT_TRUE(index.cells.empty());
  Summary s = read_summary(path, "name", true);
  EXPECT_FALSE(s.from_index);
  EXPECT_EQ(s.complete_events, 200u * 20 + 2);
}

// fork(): the child drops its copy of the parent's writer (and so of the
// parent's index descriptor) and starts its own file. It must not write the
// parent's summary lines: the parent's index stays valid and answers.
TEST(WriteTimeIndex, ForkedChildLeavesTheParentsIndexAlone) {
  TempDir d;
  ASSERT_EQ(dft_init_opt_in(d.file("p.pfw.gz").c_str(), nullptr, 9), 0);
  record_thread(0, 8, kBase);
  dft_flush();
  pid_t child = fork();
  if (child == 0) _exit(0);  // its own file stays unfinished; nothing else
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  record_thread(0, 8, kBase + 100000000);
  std::string path = dft_trace_path();
  dft_finalize();
  TraceIndex index;
  ASSERT_TRUE(usable_index(path, &index));
  EXPECT_TRUE(index.finalized);
  Summary fast = read_summary(path, "name", true);
  EXPECT_TRUE(fast.from_index);
  expect_same_summary(fast, read_summary(path, "name", false), "after fork");
}

// Relative windows (trace_window.hpp) take the trace's start and end from the
// index when it has them: they must be what a full read finds, and a
// relative window must equal the absolute one it resolves to.
TEST(WriteTimeIndex, TimeRangeFromIndexEqualsFullReadAndRelativeWindowsResolveToIt) {
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 12, false);
  TraceTimeRange indexed = trace_time_range({path}, 2);
  EXPECT_TRUE(indexed.from_index);
  std::string idx = read_file(path + ".idx");
  ::unlink((path + ".idx").c_str());
  TraceTimeRange read = trace_time_range({path}, 2);
  EXPECT_FALSE(read.from_index);
  ASSERT_TRUE(indexed.any && read.any);
  EXPECT_EQ(indexed.first_ns, read.first_ns);
  EXPECT_EQ(indexed.last_end_ns, read.last_end_ns);
  write_file(path + ".idx", idx);
  EXPECT_EQ(read.first_ns, int64_t(kBase));  // thread 0's first step starts at kBase
  Summary all = read_summary(path, "name", false);
  EXPECT_DOUBLE_EQ(all.span_us, double(read.last_end_ns - read.first_ns) / 1000);  // summary's span
  // "+20ms" to "+24ms" is steps 10 and 11 (2 ms apart from kBase).
  ReadOptions ro;
  resolve_window(parse_window_bound("+20ms"), parse_window_bound("+24ms"), {path}, 2, &ro);
  EXPECT_EQ(ro.from_ns, int64_t(kBase) + 20000000);
  EXPECT_EQ(ro.to_ns, int64_t(kBase) + 24000000);
  Summary rel = summarize({path}, parse_group_keys("name"), 0, 2, ro);
  expect_same_summary(rel, read_summary(path, "name", true, ro.from_ns, ro.to_ns), "relative = absolute");
  EXPECT_EQ(rel.complete_events, 3u * 2 * 13);
  // "-1ms" is from 1 ms before the last end.
  resolve_window(parse_window_bound("-1ms"), WindowBound{}, {path}, 2, &ro);
  EXPECT_EQ(ro.from_ns, read.last_end_ns - 1000000);
  EXPECT_EQ(ro.to_ns, INT64_MAX);
}

namespace {

// Flips bytes inside the compressed data of members 1, 3 and 5 (not their
// headers or trailers: sizes, places and trailer CRCs stay as indexed).
void damage_members(const std::string& path) {
  TraceIndex index;
  ASSERT_TRUE(usable_index(path, &index));
  ASSERT_GT(index.members.size(), 6u);
  std::string gz = read_file(path);
  for (size_t m : {1, 3, 5}) {
    const GzipIndexEntry& e = index.members[m].entry;
    ASSERT_GT(e.size, 40u);
    for (uint64_t k = 0; k < 8; ++k) gz[e.offset + 12 + (e.size - 30) * k / 8] ^= 0x5a;
    gz[e.offset + e.size - 9] ^= 0x81;  // the last deflate byte: the stream may now run past the member
  }
  write_file(path, gz);
}

void expect_same_stats(const ReadStats& want, const ReadStats& got, const std::string& what) {
  EXPECT_EQ(want.events, got.events) << what;
  EXPECT_EQ(want.corrupt_members, got.corrupt_members) << what;
  EXPECT_EQ(want.truncated_members, got.truncated_members) << what;
  EXPECT_EQ(want.malformed, got.malformed) << what;
  EXPECT_EQ(want.bad_indexes, got.bad_indexes) << what;
}

}  // namespace

// Damaged member bytes under an intact index (its lines, places and trailer
// CRCs all still match): whatever would answer without inflating -- the
// summary, the Dask workers' partials, the trace range, a window's skipped
// members -- sees that the member CRC no longer vouches for them, and every
// path reads, skips and counts the damaged members exactly as --no-index does.
TEST(WriteTimeIndex, DamagedMembersUnderAnIntactIndexAreReadAndCountedByEveryPath) {
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 40, false);
  const uint64_t intact_events = read_summary(path, "name", false).stats.events;
  damage_members(path);
  TraceIndex index;
  ASSERT_TRUE(usable_index(path, &index));  // the index itself checks out
  uint64_t damaged_events = 0;
  for (size_t m : {1, 3, 5}) damaged_events += index.members[m].complete + index.members[m].metadata + index.members[m].other;
  {
    MappedFile map(path);
    EXPECT_EQ(first_unvouched_member(index, map.data()), 1u);
  }
  std::string why;
  EXPECT_FALSE(index_answers(path));
  std::vector<GroupKey> keys = parse_group_keys("name");
  EXPECT_FALSE(summary_from_indexes({path}, keys, 0, SummarySort::self, &why));
  EXPECT_NE(why.find("member 1 (at byte"), std::string::npos) << why;

  Summary full = read_summary(path, "name", false);
  EXPECT_EQ(full.stats.corrupt_members, 3u);
  // A damaged member gives none of its lines (they could inflate to plausible
  // events with wrong values before its CRC fails), and nothing else is lost.
  EXPECT_EQ(full.stats.events, intact_events - damaged_events);
  EXPECT_EQ(full.stats.malformed + full.stats.bad_fields, 0u);
  Summary fast = read_summary(path, "name", true);
  EXPECT_FALSE(fast.from_index);
  expect_same_summary(full, fast, "index allowed");
  expect_same_stats(full.stats, fast.stats, "index allowed");
  Summary partial = combine_partials({partial_summary({path}, {0}, keys, 1)}, keys, 0);
  EXPECT_EQ(partial.stats.indexed_files, 0u);
  expect_same_stats(full.stats, partial.stats, "partial");
  // The Dask workers' member ranges of a large file: the same counts.
  std::vector<std::string> range_parts;
  const std::vector<MemberRange> ranges = gzip_member_ranges(path, 1);  // a range a member
  ASSERT_GT(ranges.size(), 3u);
  for (const MemberRange& r : ranges) range_parts.push_back(partial_summary_range(path, 0, r, keys));
  Summary ranged = combine_partials(range_parts, keys, 0);
  expect_same_summary(full, ranged, "member ranges");
  expect_same_stats(full.stats, ranged.stats, "member ranges");
  EXPECT_FALSE(trace_time_range({path}, 2).from_index);

  // A window that leaves the damaged members out still reads them: they are
  // counted as the same window without the index counts them.
  const int64_t from = int64_t(kBase) + 30 * 2000000, to = INT64_MAX;
  Summary windowed = read_summary(path, "name", true, from, to);
  std::string idx = read_file(path + ".idx");
  ::unlink((path + ".idx").c_str());
  Summary scanned = read_summary(path, "name", true, from, to);
  Summary scanned_all = read_summary(path, "name", true);  // members found by scanning, not the index
  write_file(path + ".idx", idx);
  expect_same_summary(full, scanned_all, "scanned");
  expect_same_stats(full.stats, scanned_all.stats, "scanned");
  EXPECT_EQ(scanned.stats.corrupt_members, 3u);
  expect_same_summary(scanned, windowed, "window");
  expect_same_stats(scanned.stats, windowed.stats, "window");
}

// A version-2 index (no member CRC) still checks out and splits the read,
// but vouches for no member's bytes: summaries and windows read them.
TEST(WriteTimeIndex, VersionTwoIndexSplitsButAnswersNothingUnread) {
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 12, false);
  std::string idx = read_file(path + ".idx"), v2;
  for (size_t b = 0; b < idx.size();) {  // drop each M line's member CRC, the 7th word; re-sign the lines
    size_t e = idx.find('\n', b);
    std::string line = idx.substr(b, idx.rfind(" *", e) - b);
    b = e + 1;
    if (line == "#dftracer-idx 3") line = "#dftracer-idx 2";
    if (line.rfind("M ", 0) == 0) {
      size_t f = 0;
      for (int k = 0; k < 6; ++k) f = line.find(' ', f) + 1;
      line.erase(f, line.find(' ', f) + 1 - f);
    }
    char tail[16];
    std::snprintf(tail, sizeof tail, " *%08lx\n", crc32(0L, reinterpret_cast<const Bytef*>(line.data()), line.size()));
    v2 += line + tail;
  }
  write_file(path + ".idx", v2);
  TraceIndex index;
  ASSERT_TRUE(usable_index(path, &index));
  EXPECT_EQ(index.version, 2);
  EXPECT_TRUE(index.finalized);
  EXPECT_GT(index.members.size(), 1u);
  EXPECT_FALSE(index_answers(path));
  Summary s = read_summary(path, "name", true);
  EXPECT_FALSE(s.from_index);
  EXPECT_EQ(s.stats.bad_indexes, 0u);
  expect_same_summary(read_summary(path, "name", false), s, "version 2");
  EXPECT_FALSE(trace_time_range({path}, 2).from_index);
}

namespace {

// `line` (an index line without its CRC) signed as the writer signs it.
std::string signed_line(const std::string& line) {
  char tail[16];
  std::snprintf(tail, sizeof tail, " *%08lx\n", crc32(0L, reinterpret_cast<const Bytef*>(line.data()), line.size()));
  return line + tail;
}

// Replaces the `k`th space-separated word of `line` (0: the record kind).
void set_word(std::string& line, int k, const std::string& word) {
  size_t f = 0;
  for (int i = 0; i < k; ++i) f = line.find(' ', f) + 1;
  line.replace(f, line.find(' ', f) == std::string::npos ? std::string::npos : line.find(' ', f) - f, word);
}

}  // namespace

TEST(WriteTimeIndex, MemberWhoseOffsetPlusSizeWrapsIsNotTaken) {
  // A crafted second member: its offset where member 0 ends, its size chosen so
  // offset + size wraps to 24, its gzip CRC field equal to the 4 bytes that
  // wrapped end would point at. It lies past the trace: never an indexed member.
  TempDir d;
  std::string path = write_trace(d.file("t.pfw.gz"), 12, false);
  TraceIndex good;
  ASSERT_TRUE(usable_index(path, &good));
  ASSERT_GT(good.members.size(), 2u);
  const std::string gz = read_file(path);
  const uint64_t end0 = good.members[0].entry.size, huge = (~uint64_t(0)) - end0 + 1 + 24;
  char crc[16];
  std::snprintf(crc, sizeof crc, "%u", uint32_t(uint8_t(gz[16])) | uint32_t(uint8_t(gz[17])) << 8 |
                                           uint32_t(uint8_t(gz[18])) << 16 | uint32_t(uint8_t(gz[19])) << 24);
  std::string idx = read_file(path + ".idx"), crafted;
  int members = 0;
  for (size_t b = 0; b < idx.size() && members < 2;) {  // the header, the names, members 0 and 1 (crafted)
    size_t e = idx.find('\n', b);
    std::string line = idx.substr(b, idx.rfind(" *", e) - b);
    b = e + 1;
    if (line.rfind("M ", 0) == 0 && ++members == 2) {
      set_word(line, 2, std::to_string(huge));
      set_word(line, 5, crc);
    }
    crafted += signed_line(line);
  }
  write_file(path + ".idx", crafted);
  TraceIndex index;
  MappedFile map(path);
  load_trace_index(path, map.data(), map.size(), &index, nullptr);
  ASSERT_EQ(index.members.size(), 1u);
  Summary s = read_summary(path, "name", true);
  EXPECT_EQ(s.stats.bad_indexes, 0u);
  expect_same_summary(s, read_summary(path, "name", false), "wrapped member");

  // The same member in a version-1 index.
  write_file(path + ".idx", "0 " + std::to_string(end0) + " 1 1\n" + std::to_string(end0) + " " +
                                std::to_string(huge) + " 1 1\n");
  TraceIndex v1;
  load_trace_index(path, map.data(), map.size(), &v1, nullptr);
  ASSERT_EQ(v1.members.size(), 1u);
  expect_same_summary(read_summary(path, "name", true), read_summary(path, "name", false), "wrapped v1 member");
}
