// The session's trace file, end to end: two processes given the same
// process_id (or a reused pid) each get a complete file of their own, a
// planted symlink is never followed, and a directory prefix gets a base
// name inside it.
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "dftracer/dftracer.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

std::string app_name() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return exe.substr(exe.find_last_of('/') + 1);
}

std::string core_file_name(const std::string& prefix, int64_t pid) {
  char name[PATH_MAX];
  dft_trace_file_name(prefix.c_str(), app_name().c_str(), pid, 1, name, sizeof name);
  return name;
}

void emit(dft_id name, int64_t seq) {
  dft_arg a{};
  a.key = dft_intern_cstr("seq");
  a.type = DFT_ARG_INT;
  a.v.i = seq;
  dft_complete_ns(name, dft_intern_cstr("test"), 1000 + static_cast<uint64_t>(seq), 1, &a, 1);
}

}  // namespace

// Both used to open "<prefix>-<app>-4242.pfw.gz" with O_TRUNC and write over
// each other: one file, holding a mix of both. As under pydftracer 2.x,
// process_id now names no file and replaces no pid: each file is named by
// and carries its process's own pid, and keeps the id as `start`'s p_idx.
TEST(TraceFile, TwoProcessesGivenTheSameProcessIdEachWriteACompleteFile) {
  std::string dir = temp_dir("samepid");
  const int kEvents = 20000;
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  pid_t kids[2];
  fflush(nullptr);
  for (int k = 0; k < 2; ++k) {
    kids[k] = fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      // Both open their file before either writes events, as two ranks
      // started together do.
      if (dft_init_opt_in((dir + "/same").c_str(), nullptr, 4242) != 0) _exit(3);
      char c = 'r';
      if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(4);
      dft_id name = dft_intern_cstr(k == 0 ? "from_first" : "from_second");
      for (int i = 0; i < kEvents; ++i) emit(name, i);
      dft_finalize();
      _exit(0);
    }
  }
  for (int k = 0; k < 2; ++k) {
    char c;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
  }
  ASSERT_EQ(write(go[1], "gg", 2), 2);
  for (pid_t kid : kids) {
    int status = 0;
    waitpid(kid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);

  auto files = files_in(dir, ".pfw.gz");
  ASSERT_EQ(files.size(), 2u) << "both processes wrote one file";
  int first = 0, second = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    std::string text = read_all(path);
    size_t n = 0;
    EXPECT_EQ(finalized_trace_error(text, &n), "");
    int a = 0, b = 0;
    for (auto& e : parse_events(event_lines(text))) {
      a += e.name == "from_first";
      b += e.name == "from_second";
      EXPECT_TRUE(e.pid == kids[0] || e.pid == kids[1]) << e.pid;
      EXPECT_NE(path.find("-" + std::to_string(e.pid) + ".pfw.gz"), std::string::npos) << e.pid;
      if (e.name == "start") EXPECT_EQ(int_arg(e, "p_idx"), 4242);
    }
    EXPECT_TRUE((a == kEvents && b == 0) || (a == 0 && b == kEvents)) << a << " " << b;
    first += a;
    second += b;
  }
  EXPECT_EQ(first, kEvents);
  EXPECT_EQ(second, kEvents);
}

// A symlink at the trace path (and one at the next name's .idx) aimed at a
// file of the user's: it used to be truncated and overwritten with the trace.
TEST(TraceFile, APlantedSymlinkIsNotFollowed) {
  std::string dir = temp_dir("link");
  std::string victim = dir + "/victim", victim_idx = dir + "/victim-idx";
  std::ofstream(victim) << "precious\n";
  std::ofstream(victim_idx) << "precious index\n";
  std::string planted = core_file_name(dir + "/s", getpid());
  ASSERT_EQ(symlink(victim.c_str(), planted.c_str()), 0);
  const std::string alt1 = planted.substr(0, planted.size() - 7) + "-1.pfw.gz";
  ASSERT_EQ(symlink(victim_idx.c_str(), (alt1 + ".idx").c_str()), 0);

  ASSERT_EQ(dft_init_opt_in((dir + "/s").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  for (int i = 0; i < 100; ++i) emit(dft_intern_cstr("e"), i);
  dft_finalize();

  EXPECT_EQ(read_bytes(victim), "precious\n");
  EXPECT_EQ(read_bytes(victim_idx), "precious index\n");
  EXPECT_EQ(path, planted.substr(0, planted.size() - 7) + "-2.pfw.gz");
  size_t n = 0;
  EXPECT_EQ(finalized_trace_error(read_all(path), &n), "");
  struct stat st;
  EXPECT_EQ(lstat(alt1.c_str(), &st), -1) << "the name whose .idx was taken is given back";
}

// A re-init in the same process used to truncate the first session's file.
TEST(TraceFile, ReinitWithTheSamePrefixKeepsTheFirstFile) {
  std::string dir = temp_dir("reinit");
  ASSERT_EQ(dft_init_opt_in((dir + "/r").c_str(), nullptr, -1), 0);
  std::string one = dft_trace_path();
  emit(dft_intern_cstr("first_session"), 0);
  dft_finalize();
  ASSERT_EQ(dft_init_opt_in((dir + "/r").c_str(), nullptr, -1), 0);
  std::string two = dft_trace_path();
  emit(dft_intern_cstr("second_session"), 0);
  dft_finalize();
  EXPECT_NE(one, two);
  int found = 0;
  for (auto& e : parse_events(event_lines(read_all(one)))) found += e.name == "first_session";
  EXPECT_EQ(found, 1);
}

// DFTRACER_LOG_FILE=dir/ used to name the file "dir/-<app>-<pid>.pfw.gz".
TEST(TraceFile, DirectoryPrefixGetsTheDefaultBaseName) {
  std::string dir = temp_dir("dirprefix");
  ScopedEnv env("DFTRACER_LOG_FILE", (dir + "/runs/").c_str());
  ASSERT_EQ(dft_init_opt_in(nullptr, nullptr, 55), 0);
  std::string path = dft_trace_path();
  dft_finalize();
  EXPECT_EQ(path, dir + "/runs/dftracer-" + app_name() + "-" + std::to_string(getpid()) + ".pfw.gz");
  size_t n = 0;
  EXPECT_EQ(finalized_trace_error(read_all(path), &n), "");
}
