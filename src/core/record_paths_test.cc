// The record path's forms, each through its fast and slow halves: header-only
// events (written inline) and events with args (out of line), on every chunk
// boundary of a small chunk size; calls after finalize counted whichever form
// they take; the clock read by the region calls when ticks are not the TSC.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "dftracer/dftracer.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

// Records `n` events in four forms, interleaved (regions and complete events,
// each with and without args), and checks every one is in the file once, with
// its own duration.
void record_every_form_and_check(int n) {
  std::string dir = temp_dir("paths");
  ScopedEnv compress("DFTRACER_TRACE_COMPRESSION", "0");
  ScopedEnv chunk("DFTRACER_CHUNK_SIZE", "4K");  // a chunk every 128 header-only events
  ASSERT_EQ(dft_init_opt_in((dir + "/p").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  const dft_id cat = dft_intern_cstr("paths");
  const dft_id names[4] = {dft_intern_cstr("region"), dft_intern_cstr("region_args"),
                           dft_intern_cstr("complete"), dft_intern_cstr("complete_args")};
  const dft_id k_i = dft_intern_cstr("i");
  const bool tsc = dft_hot.tsc != 0;
  for (int i = 0; i < n; ++i) {
    dft_arg a{};
    a.key = k_i, a.type = DFT_ARG_INT, a.v.i = i;
    const uint64_t t = dft_ticks();
    switch (i % 4) {
      case 0: dft_region_end(names[0], cat, dft_region_begin(), nullptr, 0); break;
      case 1: dft_region_end(names[1], cat, dft_region_begin(), &a, 1); break;
      case 2: dft_complete_ticks(names[2], cat, t, t, nullptr, 0); break;
      default: dft_complete_ticks(names[3], cat, t, t, &a, 1); break;
    }
  }
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_dropped, 0u);
  dft_finalize();
  std::string text = read_all(path);
  size_t elems = 0;
  ASSERT_EQ(finalized_trace_error(text, &elems), "");
  std::map<std::string, int> count;
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (const Event& e : parse_events(event_lines(text))) {
    if (e.cat != "paths") continue;
    ++count[e.name];
    EXPECT_EQ(e.ph, "X");
    EXPECT_GE(e.dur, 0) << e.name;
    if (e.name == "complete" || e.name == "complete_args") EXPECT_EQ(e.dur, 0) << e.name;
    if (e.name == "region_args" || e.name == "complete_args") {
      const int64_t i = int_arg(e, "i");
      ASSERT_TRUE(i >= 0 && i < n) << e.args_json;
      ++seen[static_cast<size_t>(i)];
    }
  }
  const int quarter = n / 4;
  EXPECT_EQ(count["region"], quarter) << "tsc " << tsc;
  EXPECT_EQ(count["region_args"], quarter);
  EXPECT_EQ(count["complete"], quarter);
  EXPECT_EQ(count["complete_args"], quarter);
  for (int i = 0; i < n; ++i)
    if (i % 4 == 1 || i % 4 == 3) EXPECT_EQ(seen[static_cast<size_t>(i)], 1) << i;
}

TEST(RecordPaths, EveryFormArrivesOnceAcrossChunkBoundaries) { record_every_form_and_check(40000); }

TEST(RecordPaths, CallsAfterFinalizeAreCountedInEveryForm) {
  std::string dir = temp_dir("after");
  ASSERT_EQ(dft_init_opt_in((dir + "/a").c_str(), nullptr, -1), 0);
  const dft_id n = dft_intern_cstr("e"), c = dft_intern_cstr("c"), k = dft_intern_cstr("k");
  dft_finalize();
  dft_arg a{};
  a.key = k, a.type = DFT_ARG_INT, a.v.i = 1;
  const uint64_t t = dft_ticks();
  dft_region_end(n, c, dft_region_begin(), nullptr, 0);
  dft_region_end(n, c, dft_region_begin(), &a, 1);
  dft_complete_ticks(n, c, t, t, nullptr, 0);
  dft_complete_ticks(n, c, t, t, &a, 1);
  dft_complete_ticks_plain(n, c, t, t, &a, 1);
  dft_complete_ns(n, c, 1, 1, nullptr, 0);
  dft_instant(n, c, nullptr, 0);
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_after_finalize, 7u);
}

// Ticks from CLOCK_MONOTONIC (DFTRACER_NO_TSC, read when the clock is first
// used): the region calls take their slow half. Runs in a program of its own,
// this binary again, since this process's clock is already chosen.
TEST(RecordPaths, EveryFormWithoutTheTsc) {
  if (getenv("DFT_TEST_RECORD_PATHS_NO_TSC") != nullptr) {  // the child
    EXPECT_EQ(dft_hot.tsc, 0);
    record_every_form_and_check(4000);
    EXPECT_EQ(dft_hot.tsc, 0);
    return;
  }
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(len, 0);
  self[len] = '\0';
  std::vector<std::string> env = {"DFTRACER_NO_TSC=1", "DFT_TEST_RECORD_PATHS_NO_TSC=1"};
  for (const char* keep : {"TMPDIR", "PATH", "LD_LIBRARY_PATH", "ASAN_OPTIONS", "TSAN_OPTIONS"})
    if (const char* v = getenv(keep)) env.push_back(std::string(keep) + "=" + v);
  EXPECT_EQ(run_program(self, {"--gtest_filter=RecordPaths.EveryFormWithoutTheTsc"}, env), 0);
}

}  // namespace
