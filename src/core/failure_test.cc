// I/O failures never reach the traced program: an output directory that
// cannot be written, one that vanishes during the run, and a full disk each
// give one warning; the program's own work goes on unchanged.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "dftracer/dftracer.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// Work the "application" does; its result must not change with tracing.
uint64_t app_work(int n) {
  const dft_id name = dft_intern_cstr("step"), cat = dft_intern_cstr("app");
  uint64_t acc = 0;
  for (int i = 0; i < n; ++i) {
    uint64_t t0 = dft_region_begin();
    acc = acc * 31 + static_cast<uint64_t>(i);
    dft_region_end(name, cat, t0, nullptr, 0);
  }
  return acc;
}

}  // namespace

TEST(Failure, UnwritableDirectoryWarnsOnceAndLeavesTracingOff) {
  testing::internal::CaptureStderr();
  // /proc cannot hold new files, even for root.
  EXPECT_EQ(dft_init_opt_in("/proc/self/no-such-dir/trace", nullptr, -1), -1);
  EXPECT_EQ(dft_enabled(), 0);
  uint64_t r = app_work(10000);
  dft_finalize();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(occurrences(err, "cannot create trace file"), 1) << err;
  EXPECT_EQ(occurrences(err, "\n"), 1) << err;
  EXPECT_EQ(r, app_work(10000));
}

TEST(Failure, VanishedDirectoryWarnsAndTheProgramContinues) {
  std::string dir = temp_dir("gone");
  testing::internal::CaptureStderr();
  ASSERT_EQ(dft_init_opt_in((dir + "/v").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  app_work(1000);
  dft_flush();
  ASSERT_EQ(unlink(path.c_str()), 0);
  unlink((path + ".idx").c_str());
  ASSERT_EQ(rmdir(dir.c_str()), 0);
  uint64_t r = app_work(100000);
  dft_finalize();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(occurrences(err, "was deleted while it was being written"), 1) << err;
  EXPECT_EQ(occurrences(err, "\n"), 1) << err;
  EXPECT_EQ(r, app_work(100000));
}

TEST(Failure, FullDiskWarnsOnceCountsLossesAndTheProgramContinues) {
  std::string dir = temp_dir("full");
  // A child whose files may not grow past 64 KiB stands in for a full disk:
  // write() then fails with EFBIG (SIGXFSZ ignored), like ENOSPC would.
  int rc = run_in_child([&]() -> int {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) return 10;
    int err_pipe[2];
    if (pipe(err_pipe) != 0) return 11;
    int saved = dup(2);
    dup2(err_pipe[1], 2);
    setenv("DFTRACER_TRACE_COMPRESSION", "0", 1);
    if (dft_init_opt_in((dir + "/f").c_str(), nullptr, -1) != 0) return 12;
    uint64_t r = app_work(300000);
    dft_finalize();
    dup2(saved, 2);
    close(err_pipe[1]);
    char buf[4096];
    ssize_t n = read(err_pipe[0], buf, sizeof buf);
    std::string err(buf, n > 0 ? static_cast<size_t>(n) : 0);
    dft_stats st;
    dft_get_stats(&st);
    if (occurrences(err, "cannot write trace file") != 1) return 13;
    if (st.events_dropped == 0) return 14;
    if (r != app_work(300000)) return 15;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "10+: setup, 13: warning count, 14: losses not counted, 15: result changed";
  auto files = files_in(dir, ".pfw");
  ASSERT_EQ(files.size(), 1u);
  std::string partial;
  auto lines = event_lines(read_all(files[0]), &partial);
  EXPECT_GT(lines.size(), 100u);
  parse_events(lines);  // every complete line that made it is valid JSON
}
