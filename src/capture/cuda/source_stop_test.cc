// A device source's stop (dft_launch_scope::before_finalize) runs before the
// trace is finalized by the program's own thread: dft_finalize and exit. The
// stop here does what libdftracer_cuda's does -- CUPTI's last buffers are
// converted on CUPTI's completion thread into the process's trace -- with
// recorded activity records in place of CUPTI, so the device events it
// writes must be in the finished file. SIGTERM, _exit and exec finalize
// without it (the signal thread has none of the program's descriptors; a
// failed exec goes on tracing), and the trace is complete all the same. A
// second thread finalizing while the stop runs waits for it. A forked child
// has no scope.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "activity_records_for_test.h"
#include "linked_core_for_test.h"
#include "core_event_sink.h"
#include "device_activity.h"
#include "dftracer/dftracer.h"
#include "trace_file.h"

namespace dftracer::cuda {
namespace {

using test::linked_core;

std::atomic<int> g_stops{0};
uint64_t g_next = 100;
uint64_t push() { return g_next++; }
void pop() {}

// The last buffer, handed over on a thread of CUPTI's while the stop waits.
void stop() {
  g_stops.fetch_add(1);
  std::thread cupti([] {
    ClockMap clock;
    clock.add_sample(0, 0);
    ActivityConverter conv(clock, static_cast<uint32_t>(dft_pid()));
    CoreEventSink sink(linked_core());
    const uint64_t t = dft_now_ns();
    conv.add(test::kernel("last_kernel", t - 5000, t - 1000, 9), &sink);
  });
  cupti.join();
}

const dft_launch_scope kScope = {sizeof(dft_launch_scope), &push, &pop, &stop};

size_t count_named(const std::string& path, const std::string& name) {
  const std::string text = dftracer_test::read_all(path);
  size_t elements = 0, n = 0;
  EXPECT_EQ(dftracer_test::finalized_trace_error(text, &elements), "") << path;
  for (const auto& e : dftracer_test::parse_events(dftracer_test::event_lines(text)))
    if (e.name == name) ++n;
  return n;
}

TEST(DeviceSourceStop, RunsOnceAtFinalizeAndItsLastEventsAreKept) {
  const std::string dir = dftracer_test::temp_dir("cuda-stop");
  dftracer_test::ScopedEnv plain("DFTRACER_TRACE_COMPRESSION", "0");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  g_stops = 0;
  ASSERT_EQ(dft_set_launch_scope(&kScope), 0);
  dft_finalize();
  EXPECT_EQ(g_stops.load(), 1);
  EXPECT_EQ(dft_launch_scope_inline(), nullptr) << "the core clears the scope it stopped";
  EXPECT_EQ(count_named(path, "last_kernel"), 1u);
  dft_finalize();
  EXPECT_EQ(g_stops.load(), 1) << "once";
}

TEST(DeviceSourceStop, RunsAtExit) {
  const std::string dir = dftracer_test::temp_dir("cuda-stop-exit");
  const int status = dftracer_test::run_in_child([&] {
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 3;
    if (dft_set_launch_scope(&kScope) != 0) return 4;
    std::exit(0);  // the core's exit handler finalizes
  });
  ASSERT_EQ(status, 0);
  const auto files = dftracer_test::files_in(dir, ".pfw.gz");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(count_named(files[0], "last_kernel"), 1u);
}

void record_cpu_event(const char* name) { dft_instant_named(name, std::strlen(name), 0, nullptr, 0); }

TEST(DeviceSourceStop, NotOnSigtermAndTheTraceIsComplete) {
  const std::string dir = dftracer_test::temp_dir("cuda-stop-term");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) _exit(3);
    if (dft_set_launch_scope(&kScope) != 0) _exit(4);
    record_cpu_event("cpu_before_term");
    (void)!write(ready[1], "r", 1);
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  const auto files = dftracer_test::files_in(dir, ".pfw.gz");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(count_named(files[0], "cpu_before_term"), 1u);  // and count_named checks the file is finalized
  EXPECT_EQ(count_named(files[0], "last_kernel"), 0u) << "the signal thread does not stop the device source";
}

TEST(DeviceSourceStop, NotAtImmediateExit) {
  const std::string dir = dftracer_test::temp_dir("cuda-stop-_exit");
  const int status = dftracer_test::run_in_child([&] {
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 3;
    if (dft_set_launch_scope(&kScope) != 0) return 4;
    record_cpu_event("cpu_before_exit");
    dft_finalize_before_exit();  // what the I/O library's _exit hook does
    _exit(0);
  });
  ASSERT_EQ(status, 0);
  const auto files = dftracer_test::files_in(dir, ".pfw.gz");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(count_named(files[0], "cpu_before_exit"), 1u);
  EXPECT_EQ(count_named(files[0], "last_kernel"), 0u) << "_exit does not stop the device source";
}

TEST(DeviceSourceStop, NotAtExecAndAFailedExecKeepsTheSource) {
  const std::string dir = dftracer_test::temp_dir("cuda-stop-exec");
  dftracer_test::ScopedEnv plain("DFTRACER_TRACE_COMPRESSION", "0");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  g_stops = 0;
  ASSERT_EQ(dft_set_launch_scope(&kScope), 0);
  record_cpu_event("cpu_before_exec");
  dft_suspend_for_exec();  // what the I/O library's exec hooks do
  EXPECT_EQ(g_stops.load(), 0) << "exec does not stop the device source";
  EXPECT_EQ(dft_launch_scope_inline(), &kScope);
  dft_resume_after_failed_exec();  // the exec failed (execvp's next PATH entry, say)
  ASSERT_TRUE(dft_enabled());
  const std::string path = dft_trace_path();
  dft_finalize();
  EXPECT_EQ(g_stops.load(), 1);
  EXPECT_EQ(count_named(path, "last_kernel"), 1u) << "the source's last buffers go into the resumed trace";
}

// The second finalizer must not finalize while the first still runs the
// stop: the stop waits (up to 1 s) for the second dft_finalize to return,
// which it does at once unless it waits for the stop; then it records.
std::atomic<bool> g_in_slow_stop{false};
std::atomic<bool> g_second_done{false};
void slow_stop() {
  g_in_slow_stop = true;
  for (int i = 0; i < 1000 && !g_second_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  record_cpu_event("recorded_by_stop");
}
const dft_launch_scope kSlowScope = {sizeof(dft_launch_scope), &push, &pop, &slow_stop};

TEST(DeviceSourceStop, ASecondFinalizerWaitsForTheStop) {
  const std::string dir = dftracer_test::temp_dir("cuda-stop-race");
  dftracer_test::ScopedEnv plain("DFTRACER_TRACE_COMPRESSION", "0");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  g_in_slow_stop = false;
  g_second_done = false;
  ASSERT_EQ(dft_set_launch_scope(&kSlowScope), 0);
  std::thread first([] { dft_finalize(); });
  while (!g_in_slow_stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread second([] {
    dft_finalize();
    g_second_done = true;
  });
  second.join();
  first.join();
  EXPECT_EQ(count_named(path, "recorded_by_stop"), 1u) << "the trace was finalized before the stop returned";
}

TEST(DeviceSourceStop, AForkedChildHasNoScope) {
  const std::string dir = dftracer_test::temp_dir("cuda-stop-fork");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  ASSERT_EQ(dft_set_launch_scope(&kScope), 0);
  g_stops = 0;
  const int status = dftracer_test::run_in_child([] {
    if (dft_launch_scope_inline() != nullptr) return 1;
    dft_finalize();
    return g_stops.load() == 0 ? 0 : 2;  // the parent's source is not stopped from the child
  });
  EXPECT_EQ(status, 0);
  dft_finalize();
  EXPECT_EQ(g_stops.load(), 1);
}

}  // namespace
}  // namespace dftracer::cuda
