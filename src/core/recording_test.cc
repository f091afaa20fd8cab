// Recording end to end: events recorded on 1 and 8 threads come back from the
// file exactly once each, in per-thread order; finalized files are strict
// JSON in both formats; lifecycle calls behave.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "dftracer/dftracer.h"
#include "dftracer/dftracer.hpp"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

dft_arg int_arg_of(dft_id key, int64_t v) {
  dft_arg a{};
  a.key = key;
  a.type = DFT_ARG_INT;
  a.v.i = v;
  return a;
}

// Records `per_thread` events on each of `threads` threads, each carrying its
// thread index and sequence number, then checks the file holds every one
// exactly once and in order per thread.
void record_and_check(int threads, uint64_t per_thread, bool compress) {
  std::string dir = temp_dir("rec");
  ScopedEnv c("DFTRACER_TRACE_COMPRESSION", compress ? "1" : "0");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  const dft_id name = dft_intern_cstr("op");
  const dft_id cat = dft_intern_cstr("test");
  const dft_id k_seq = dft_intern_cstr("seq");
  const dft_id k_thr = dft_intern_cstr("thr");
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      for (uint64_t i = 0; i < per_thread; ++i) {
        dft_arg args[2] = {int_arg_of(k_thr, t), int_arg_of(k_seq, static_cast<int64_t>(i))};
        uint64_t t0 = dft_ticks();
        dft_complete_ticks(name, cat, t0, t0 + 10, args, 2);
      }
    });
  }
  for (auto& th : pool) th.join();
  dft_finalize();

  std::string text = read_all(path);
  ASSERT_FALSE(text.empty());
  std::vector<uint64_t> next(threads, 0);
  std::map<int64_t, int> tid_of_thread;  // every event of a thread shares one tid
  simdjson::dom::parser parser;
  uint64_t ops = 0;
  size_t pos = 0, lines = 0;
  bool saw_end = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    ASSERT_NE(nl, std::string::npos) << "finalized file must end with a newline";
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++lines;
    if (line == "[" || line == "]") continue;
    if (!line.empty() && line.back() == ',') line.remove_suffix(1);
    simdjson::dom::element doc;
    ASSERT_FALSE(parser.parse(line.data(), line.size()).get(doc)) << line;
    std::string_view n;
    ASSERT_FALSE(doc["name"].get(n));
    if (n == "end") saw_end = true;
    if (n != "op") continue;
    int64_t thr, seq, tid;
    ASSERT_FALSE(doc["args"]["thr"].get(thr));
    ASSERT_FALSE(doc["args"]["seq"].get(seq));
    ASSERT_FALSE(doc["tid"].get(tid));
    ASSERT_GE(thr, 0);
    ASSERT_LT(thr, threads);
    ASSERT_EQ(static_cast<uint64_t>(seq), next[thr]) << "thread " << thr << " out of order or duplicated";
    ++next[thr];
    auto it = tid_of_thread.find(tid);
    if (it == tid_of_thread.end()) tid_of_thread[tid] = static_cast<int>(thr);
    else ASSERT_EQ(it->second, thr) << "two threads wrote under one tid";
    ++ops;
  }
  EXPECT_TRUE(saw_end);
  EXPECT_EQ(ops, per_thread * threads);
  for (int t = 0; t < threads; ++t) EXPECT_EQ(next[t], per_thread) << "thread " << t;
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_dropped, 0u);
}

}  // namespace

TEST(Recording, OneThreadMillionEventsExactlyOnceInOrder) { record_and_check(1, scaled(1000000), true); }

TEST(Recording, EightThreadsMillionEventsEachExactlyOnceInOrder) { record_and_check(8, scaled(1000000), true); }

TEST(Recording, EightThreadsPlainFile) { record_and_check(8, scaled(100000), false); }

TEST(Recording, FinalizedFilesAreWellFramed) {
  for (bool compress : {false, true}) {
    std::string dir = temp_dir("strict");
    ScopedEnv c("DFTRACER_TRACE_COMPRESSION", compress ? "1" : "0");
    ASSERT_EQ(dft_init_opt_in((dir + "/s").c_str(), nullptr, -1), 0);
    std::string path = dft_trace_path();
    EXPECT_EQ(path.substr(path.size() - (compress ? 7 : 4)), compress ? ".pfw.gz" : ".pfw");
    const dft_id name = dft_intern_cstr("region"), cat = dft_intern_cstr("app");
    const dft_id k_d = dft_intern_cstr("ratio"), k_b = dft_intern_cstr("ok"), k_s = dft_intern_cstr("file");
    for (int i = 0; i < 50000; ++i) {
      dft_arg a[3] = {};
      a[0].key = k_d; a[0].type = DFT_ARG_DOUBLE; a[0].v.d = i * 0.5;
      a[1].key = k_b; a[1].type = DFT_ARG_BOOL; a[1].v.i = i & 1;
      a[2].key = k_s; a[2].type = DFT_ARG_BYTES; a[2].v.str.ptr = "/data/x.bin"; a[2].v.str.len = 11;
      uint64_t t0 = dft_region_begin();
      dft_region_end(name, cat, t0, a, 3);
    }
    dft_metadata("model", "resnet");
    dft_hash_metadata("FH", "/data/x.bin");
    dft_instant(dft_intern_cstr("mark"), cat, nullptr, 0);
    dft_flow(dft_intern_cstr("link"), cat, 42, 1, dft_ticks());
    dft_flow(dft_intern_cstr("link"), cat, 42, 0, dft_ticks());
    dft_finalize();
    std::string text = read_all(path);
    size_t n = 0;
    EXPECT_EQ(finalized_trace_error(text, &n), "") << (compress ? "gz" : "plain");
    // 50000 regions + HH + process_name + start + thread_name + 5 above + end
    // (SH/FH only with DFTRACER_INC_METADATA=1)
    EXPECT_GE(n, 50000u + 10u);
    auto events = parse_events(event_lines(text));
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().name, "end");
    // num_events as DFTracer 2.x counts: start, complete and instant events
    // before `end`, not the metadata or flow lines (it used to count all n - 1).
    int64_t counted = 0;
    for (const auto& e : events) counted += e.name != "end" && (e.ph == "X" || e.ph == "i");
    EXPECT_EQ(counted, 50000 + 2);  // the regions, start, mark
    EXPECT_EQ(int_arg(events.back(), "num_events"), counted);
  }
}

TEST(Recording, MetadataEventsDescribeTheProcess) {
  std::string dir = temp_dir("meta");
  ScopedEnv full("DFTRACER_INC_METADATA", "1");  // SH/FH and "hhash" everywhere, as DFTracer
  ASSERT_EQ(dft_init_opt_in((dir + "/m").c_str(), "/data", -1), 0);
  std::string path = dft_trace_path();
  dft_set_thread_name("main-loop");
  dft_metadata("epoch_size", "100");
  uint64_t fh = dft_hash_metadata("FH", "/data/file0");
  dft_finalize();
  auto ev = parse_events(event_lines(read_all(path)));
  std::map<std::string, int> count;
  for (auto& e : ev) count[e.name]++;
  EXPECT_EQ(count["HH"], 1);
  EXPECT_EQ(count["SH"], 2);  // command line, executable
  EXPECT_EQ(count["process_name"], 1);
  EXPECT_EQ(count["start"], 1);
  EXPECT_EQ(count["end"], 1);
  EXPECT_GE(count["thread_name"], 1);
  bool named = false, meta = false, file = false;
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fh));
  for (auto& e : ev) {
    if (e.name == "thread_name" && str_arg(e, "name") == "main-loop") named = true;
    if (e.name == "epoch_size" && e.ph == "M" && str_arg(e, "value") == "100") meta = true;
    if (e.name == "FH" && str_arg(e, "name") == "/data/file0" && str_arg(e, "value") == hex) file = true;
    if (e.ph == "X" || e.ph == "M") {
      EXPECT_EQ(e.pid, static_cast<int64_t>(getpid()));
    }
    if (e.name == "HH") EXPECT_EQ(str_arg(e, "hhash").size(), 16u);
  }
  EXPECT_TRUE(named);
  EXPECT_TRUE(meta);
  EXPECT_TRUE(file);
}

// DFTRACER_TIME_RESOLUTION=ns: the nanoseconds given are written as fractions.
TEST(Recording, TimestampsAreEpochMicrosecondsAndDurationsMatch) {
  std::string dir = temp_dir("ts");
  ScopedEnv res("DFTRACER_TIME_RESOLUTION", "ns");
  ASSERT_EQ(dft_init_opt_in((dir + "/c").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  uint64_t before = dft_now_ns();
  {
    DFT_REGION("sleep", "app");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  uint64_t after = dft_now_ns();
  dft_complete_ns(dft_intern_cstr("given"), dft_intern_cstr("app"), 1700000000123456789ull, 1500, nullptr, 0);
  dft_finalize();
  auto ev = parse_events(event_lines(read_all(path)));
  bool slept = false, given = false;
  for (auto& e : ev) {
    if (e.name == "sleep") {
      slept = true;
      EXPECT_GE(e.ts * 1000, static_cast<double>(before) - 1000);  // 1 us of float slack
      EXPECT_LE((e.ts + e.dur) * 1000, static_cast<double>(after) + 1000);
      EXPECT_GE(e.dur, 19000.0);  // slept at least 19 ms
    }
    if (e.name == "given") {
      given = true;
      EXPECT_DOUBLE_EQ(e.ts, 1700000000123456.789);
      EXPECT_DOUBLE_EQ(e.dur, 1.5);
    }
  }
  EXPECT_TRUE(slept);
  EXPECT_TRUE(given);
}

// DFTRACER_TIME_RESOLUTION=us: every ts and dur a whole number of
// microseconds, both ends floored (so a child stays inside its parent), the
// default's fractions gone.
TEST(Recording, WholeMicrosecondResolutionKeepsNesting) {
  std::string dir = temp_dir("us");
  ScopedEnv res("DFTRACER_TIME_RESOLUTION", "us");
  ASSERT_EQ(dft_init_opt_in((dir + "/w").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  const dft_id cat = dft_intern_cstr("app");
  for (int i = 0; i < 200; ++i) {
    DFT_REGION("outer", "app");
    { DFT_REGION("inner", "app"); }
  }
  // 1.5 us from ...456.789 to ...458.289 us: ends floored to 456 and 458, dur 2.
  dft_complete_ns(dft_intern_cstr("given"), cat, 1700000000123456789ull, 1500, nullptr, 0);
  dft_instant(dft_intern_cstr("mark"), cat, nullptr, 0);
  dft_finalize();
  const std::string text = read_all(path);
  size_t n = 0;
  ASSERT_EQ(finalized_trace_error(text, &n), "");
  auto ev = parse_events(event_lines(text));
  int outer = 0, inner = 0, given = 0;
  for (auto& e : ev) {
    EXPECT_EQ(e.ts, static_cast<double>(static_cast<uint64_t>(e.ts))) << e.name;
    EXPECT_EQ(e.dur, static_cast<double>(static_cast<uint64_t>(e.dur))) << e.name;
    outer += e.name == "outer";
    inner += e.name == "inner";
    if (e.name == "given") {
      ++given;
      EXPECT_DOUBLE_EQ(e.ts, 1700000000123456.0);
      EXPECT_DOUBLE_EQ(e.dur, 2.0);
    }
  }
  // Each inner precedes its outer in the file (it ends first): pair them.
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    if (ev[i].name != "inner" || ev[i + 1].name != "outer") continue;
    EXPECT_GE(ev[i].ts, ev[i + 1].ts);
    EXPECT_LE(ev[i].ts + ev[i].dur, ev[i + 1].ts + ev[i + 1].dur);
  }
  EXPECT_EQ(outer, 200);
  EXPECT_EQ(inner, 200);
  EXPECT_EQ(given, 1);
  EXPECT_EQ(text.find("\"ts\":1700000000123456.789"), std::string::npos);
}

TEST(Lifecycle, FinalizeTwiceAndRecordAfterFinalizeAreCountedNoOps) {
  std::string dir = temp_dir("fin");
  ASSERT_EQ(dft_init_opt_in((dir + "/f").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  const dft_id n = dft_intern_cstr("e"), c = dft_intern_cstr("c");
  dft_complete_ns(n, c, 1, 1, nullptr, 0);
  dft_finalize();
  dft_finalize();
  EXPECT_EQ(dft_enabled(), 0);
  EXPECT_EQ(dft_trace_path(), nullptr);
  for (int i = 0; i < 5; ++i) dft_complete_ns(n, c, 1, 1, nullptr, 0);
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_after_finalize, 5u);
  size_t elems = 0;
  EXPECT_EQ(finalized_trace_error(read_all(path), &elems), "");
}

// dft_enabled_inline / dft_ticks_inline (the hot-path mirrors in
// dftracer.h) must answer exactly as the calls do, through a whole session.
TEST(Lifecycle, InlineHelpersAgreeWithTheCalls) {
  std::string dir = temp_dir("inl");
  EXPECT_EQ(dft_enabled_inline(), dft_enabled());
  ASSERT_EQ(dft_init_opt_in((dir + "/i").c_str(), nullptr, -1), 0);
  EXPECT_EQ(dft_enabled_inline(), 1);
  EXPECT_EQ(dft_enabled(), 1);
  for (int i = 0; i < 1000; ++i) {  // one clock: interleaved reads never go backwards
    const uint64_t a = dft_ticks(), b = dft_ticks_inline(), c = dft_ticks();
    ASSERT_LE(a, b);
    ASSERT_LE(b, c);
  }
  const uint64_t t0 = dft_ticks_inline();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const uint64_t t1 = dft_ticks_inline();
  const double ms = static_cast<double>(dft_ticks_to_ns(t1) - dft_ticks_to_ns(t0)) / 1e6;
  EXPECT_GE(ms, 4.5);  // converted like dft_ticks() values: real elapsed time
  dft_finalize();
  EXPECT_EQ(dft_enabled_inline(), 0);
  EXPECT_EQ(dft_enabled(), 0);
}

TEST(Lifecycle, InitAgainAfterFinalizeStartsANewFile) {
  std::string dir = temp_dir("again");
  const dft_id n = dft_intern_cstr("e"), c = dft_intern_cstr("c");
  ASSERT_EQ(dft_init_opt_in((dir + "/one").c_str(), nullptr, -1), 0);
  std::string one = dft_trace_path();
  dft_complete_ns(n, c, 1, 1, nullptr, 0);
  dft_finalize();
  ASSERT_EQ(dft_init_opt_in((dir + "/two").c_str(), nullptr, -1), 0);
  std::string two = dft_trace_path();
  EXPECT_NE(one, two);
  dft_complete_ns(n, c, 2, 1, nullptr, 0);
  dft_complete_ns(n, c, 3, 1, nullptr, 0);
  dft_finalize();
  auto count = [&](const std::string& p) {
    int k = 0;
    for (auto& e : parse_events(event_lines(read_all(p)))) k += e.name == "e";
    return k;
  };
  EXPECT_EQ(count(one), 1);
  EXPECT_EQ(count(two), 2);
}

TEST(Lifecycle, DisabledApiRecordsNothingAndCreatesNoFile) {
  ScopedEnv e("DFTRACER_ENABLE", nullptr);
  std::string dir = temp_dir("off");
  ScopedEnv lf("DFTRACER_LOG_FILE", (dir + "/x").c_str());
  dft_stats before;
  dft_get_stats(&before);
  EXPECT_EQ(dft_init_from_env(), 0);
  EXPECT_EQ(dft_enabled(), 0);
  const dft_id n = dft_intern_cstr("e"), c = dft_intern_cstr("c");
  for (int i = 0; i < 1000; ++i) dft_complete_ns(n, c, 1, 1, nullptr, 0);
  { DFT_REGION("r", "c"); }
  dft_finalize();
  EXPECT_TRUE(files_in(dir, ".pfw.gz").empty());
  EXPECT_TRUE(files_in(dir, ".pfw").empty());
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_recorded, before.events_recorded);
  EXPECT_EQ(st.events_written, before.events_written);
}

TEST(Lifecycle, EnableFromEnvironment) {
  std::string dir = temp_dir("env");
  ScopedEnv e("DFTRACER_ENABLE", "1");
  ScopedEnv lf("DFTRACER_LOG_FILE", (dir + "/envrun").c_str());
  ScopedEnv cz("DFTRACER_TRACE_COMPRESSION", "0");
  EXPECT_EQ(dft_init_from_env(), 1);
  std::string path = dft_trace_path();
  EXPECT_NE(path.find(dir + "/envrun-"), std::string::npos);
  EXPECT_EQ(path.substr(path.size() - 4), ".pfw");
  EXPECT_NE(path.find("-" + std::to_string(getpid()) + ".pfw"), std::string::npos);
  dft_finalize();
}

// Python's Thread.join() returns before the OS thread has run its exit
// handlers, so finalize() can race with threads that are still exiting.
// Their events, all recorded before finalize, must all be written.
TEST(Lifecycle, ThreadsExitingDuringFinalizeKeepTheirEvents) {
  const dft_id cat = dft_intern_cstr("c");
  for (int round = 0; round < 20; ++round) {
    std::string dir = temp_dir("exitrace");
    ASSERT_EQ(dft_init_opt_in((dir + "/r").c_str(), nullptr, -1), 0);
    std::string path = dft_trace_path();
    std::atomic<int> done{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t) {
      ts.emplace_back([&, t] {
        const dft_id name = dft_intern_cstr(("t" + std::to_string(t)).c_str());
        for (int i = 0; i < 1000; ++i) {
          uint64_t t0 = dft_ticks();
          dft_complete_ticks(name, cat, t0, t0 + 1, nullptr, 0);
        }
        done.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(50 * t));  // exit while finalize runs
      });
    }
    while (done.load() < 8) std::this_thread::yield();
    dft_finalize();  // not joined yet: like Python, the threads are still exiting
    for (auto& th : ts) th.join();
    std::map<std::string, int> per_thread;
    for (auto& e : parse_events(event_lines(read_all(path))))
      if (e.cat == "c") per_thread[e.name]++;
    ASSERT_EQ(per_thread.size(), 8u) << "round " << round;
    for (auto& kv : per_thread) ASSERT_EQ(kv.second, 1000) << kv.first << " round " << round;
  }
}

// dft_get_stats().events_recorded covers threads that have exited: the
// writer retires an exited thread's buffer and a new thread reuses it, and
// neither may take its events out of the count (initialize_log() decides
// from it whether a file is empty enough to delete).
TEST(Stats, RecordedCountKeepsEventsOfExitedThreads) {
  std::string dir = temp_dir("stats");
  ASSERT_EQ(dft_init_opt_in((dir + "/s").c_str(), nullptr, -1), 0);
  const dft_id n = dft_intern_cstr("e"), c = dft_intern_cstr("c");
  std::thread([&] {
    for (int i = 0; i < 1000; ++i) dft_complete_ns(n, c, 1, 1, nullptr, 0);
  }).join();
  dft_flush();  // the writer drains the exited thread's chain and retires its buffer
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_recorded, 1000u);
  std::thread([&] { dft_complete_ns(n, c, 1, 1, nullptr, 0); }).join();  // reuses that buffer
  dft_flush();
  dft_get_stats(&st);
  EXPECT_EQ(st.events_recorded, 1001u);
  dft_finalize();
  dft_get_stats(&st);
  EXPECT_EQ(st.events_recorded, 1001u);
}

// Counters are per session: a thread that recorded in the last session
// starts again from zero in the next one.
TEST(Stats, RecordedCountStartsOverInANewSession) {
  std::string dir = temp_dir("stats2");
  const dft_id n = dft_intern_cstr("e"), c = dft_intern_cstr("c");
  ASSERT_EQ(dft_init_opt_in((dir + "/a").c_str(), nullptr, -1), 0);
  for (int i = 0; i < 5; ++i) dft_complete_ns(n, c, 1, 1, nullptr, 0);
  dft_finalize();
  ASSERT_EQ(dft_init_opt_in((dir + "/b").c_str(), nullptr, -1), 0);
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_recorded, 0u);
  for (int i = 0; i < 2; ++i) dft_complete_ns(n, c, 1, 1, nullptr, 0);
  dft_get_stats(&st);
  EXPECT_EQ(st.events_recorded, 2u);
  dft_finalize();
}
