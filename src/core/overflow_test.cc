// Bounded memory: the `drop` policy loses events only when the pool is
// exhausted and counts every one; memory stays under the pool cap however
// many events stream through.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "dftracer/dftracer.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

// A small pool under the drop policy and a slow writer (gzip level 9), so
// that recording outruns the writer and the pool overflows.
struct SlowWriterOnASmallPool {
  ScopedEnv p{"DFTRACER_OVERFLOW", "drop"};
  ScopedEnv b{"DFTRACER_BUFFER_SIZE", "128K"};
  ScopedEnv c{"DFTRACER_CHUNK_SIZE", "8K"};
  ScopedEnv l{"DFTRACER_COMPRESSION_LEVEL", "9"};
};

}  // namespace

TEST(Overflow, DropPolicyCountsEveryDroppedEventExactly) {
  std::string dir = temp_dir("drop");
  SlowWriterOnASmallPool pool;
  ASSERT_EQ(dft_init_opt_in((dir + "/d").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  const int threads = 4;
  const uint64_t per_thread = scaled(500000);
  const dft_id name = dft_intern_cstr("burst"), cat = dft_intern_cstr("t");
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (uint64_t i = 0; i < per_thread; ++i) dft_complete_ns(name, cat, i, 1, nullptr, 0);
    });
  for (auto& t : ts) t.join();
  dft_finalize();
  dft_stats st;
  dft_get_stats(&st);

  auto events = parse_events(event_lines(read_all(path)));
  uint64_t in_file = 0;
  int64_t end_dropped = -1;
  for (auto& e : events) {
    if (e.name == "burst") ++in_file;
    if (e.name == "end") end_dropped = int_arg(e, "dropped");
  }
  const uint64_t attempted = threads * per_thread;
  EXPECT_GT(in_file, 0u);
  EXPECT_GT(attempted - in_file, 0u) << "the pool never overflowed; the test proves nothing";
  EXPECT_EQ(static_cast<uint64_t>(end_dropped), attempted - in_file) << "end event's count is exact";
  EXPECT_EQ(st.events_dropped, attempted - in_file);
  EXPECT_LE(st.pool_bytes_peak, st.pool_bytes_cap);
}

TEST(Overflow, BlockPolicyLosesNothingWithATinyPool) {
  std::string dir = temp_dir("block");
  ScopedEnv b("DFTRACER_BUFFER_SIZE", "128K");
  ScopedEnv c("DFTRACER_CHUNK_SIZE", "8K");
  ASSERT_EQ(dft_init_opt_in((dir + "/b").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  const uint64_t n = scaled(300000);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      const dft_id name = dft_intern_cstr("e"), cat = dft_intern_cstr("t");
      for (uint64_t i = 0; i < n; ++i) dft_complete_ns(name, cat, i, 1, nullptr, 0);
    });
  for (auto& t : ts) t.join();
  dft_finalize();
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_dropped, 0u);
  EXPECT_LE(st.pool_bytes_peak, st.pool_bytes_cap);
  uint64_t found = 0;
  for (auto& e : parse_events(event_lines(read_all(path)))) found += e.name == "e";
  EXPECT_EQ(found, 4 * n);
}

// More live recording threads than the pool has chunks (1,000 threads on the
// default 256 chunks lost 75% of their events): the threads without a chunk
// drop every event. That was only counted; now it is also said, once.
TEST(Overflow, MoreThreadsThanChunksWarnsOnceNamingTheBufferSize) {
  std::string dir = temp_dir("threads");
  ScopedEnv b("DFTRACER_BUFFER_SIZE", "64K");
  ScopedEnv c("DFTRACER_CHUNK_SIZE", "4K");  // at most 16 chunks
  testing::internal::CaptureStderr();
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  const int kThreads = 64, kEach = 100;  // 100 events fit in one chunk: no thread ever seals one
  std::atomic<int> holding{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      const dft_id name = dft_intern_cstr("e"), cat = dft_intern_cstr("t");
      dft_complete_ns(name, cat, 1, 1, nullptr, 0);  // takes a chunk, if one is left
      holding.fetch_add(1);
      while (holding.load() < kThreads) std::this_thread::yield();  // all alive at once
      for (int i = 1; i < kEach; ++i) dft_complete_ns(name, cat, 1, 1, nullptr, 0);
    });
  for (auto& t : ts) t.join();
  dft_finalize();
  std::string err = testing::internal::GetCapturedStderr();
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_GT(st.events_dropped, 0u) << "the pool never ran out; the test proves nothing";
  size_t warnings = 0;
  for (size_t p = err.find("dropping events"); p != std::string::npos; p = err.find("dropping events", p + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  EXPECT_NE(err.find("DFTRACER_BUFFER_SIZE=65536"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  int64_t end_dropped = -1;
  for (auto& e : parse_events(event_lines(read_all(path))))
    if (e.name == "end") end_dropped = int_arg(e, "dropped");
  EXPECT_EQ(static_cast<uint64_t>(end_dropped), st.events_dropped);
}

// One thread outrunning the writer on a pool with room for many threads'
// chunks: the advice used to be "at least 2 x threads x chunk size", a size
// below the one already set (393,216 with DFTRACER_BUFFER_SIZE=1M).
TEST(Overflow, AWriterFallingBehindIsAdvisedAPoolLargerThanTheOneSet) {
  std::string dir = temp_dir("behind");
  SlowWriterOnASmallPool pool;
  testing::internal::CaptureStderr();
  ASSERT_EQ(dft_init_opt_in((dir + "/b").c_str(), nullptr, -1), 0);
  const dft_id name = dft_intern_cstr("burst"), cat = dft_intern_cstr("t");
  for (uint64_t i = 0; i < scaled(2000000); ++i) dft_complete_ns(name, cat, i, 1, nullptr, 0);
  dft_finalize();
  std::string err = testing::internal::GetCapturedStderr();
  dft_stats st;
  dft_get_stats(&st);
  ASSERT_GT(st.events_dropped, 0u) << "the pool never overflowed; the test proves nothing";
  const size_t at = err.find("DFTRACER_BUFFER_SIZE above 131072 (262144, say)");
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find("at least 2 x threads"), std::string::npos) << err;
}

TEST(Overflow, MemoryStaysUnderThePoolCapWhileFiftyMillionEventsStream) {
  std::string dir = temp_dir("stream");
  ScopedEnv b("DFTRACER_BUFFER_SIZE", "4M");
  ScopedEnv c("DFTRACER_CHUNK_SIZE", "64K");
  ASSERT_EQ(dft_init_opt_in((dir + "/s").c_str(), nullptr, -1), 0);
  const uint64_t n = scaled(50000000);
  const dft_id name = dft_intern_cstr("e"), cat = dft_intern_cstr("t");
  size_t rss_before = rss_bytes();
  size_t rss_max = rss_before;
  for (uint64_t i = 0; i < n; ++i) {
    dft_complete_ns(name, cat, i, 1, nullptr, 0);
    if ((i & 0xFFFFF) == 0) rss_max = std::max(rss_max, rss_bytes());
  }
  dft_finalize();
  dft_stats st;
  dft_get_stats(&st);
  EXPECT_EQ(st.events_dropped, 0u);
  EXPECT_GE(st.events_written, n);
  EXPECT_LE(st.pool_bytes_peak, 4u << 20);
  // The process grows by at most the pool plus the writer's fixed buffers
  // (formatting and compression, a few MiB), never with the event count.
  EXPECT_LT(rss_max - rss_before, size_t{4 << 20} + size_t{16 << 20}) << "RSS grew with the stream";
}
