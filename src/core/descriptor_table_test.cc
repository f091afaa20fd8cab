// The tracer's own threads keep descriptor tables of their own
// (tracer_thread.h): the writer holds the trace file's descriptors and no
// copy of the program's, the signal thread holds none; the program's table
// holds none of ours. What a user sees: a program that closes every
// descriptor keeps its trace and its own files stay its own, and a pipe
// closed by the program reaches EOF at once.
//
// Each test runs in a forked child (the checks close descriptors and read
// /proc of our threads), which reports through its exit status: 0 is a pass,
// any other value names the check that failed.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dftracer/dftracer.h"
#include "seq_event.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

// The tid of our thread named `comm` ("dftracer-writer"), or 0.
pid_t thread_named(const char* comm) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return 0;
  pid_t found = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string p = std::string("/proc/self/task/") + e->d_name + "/comm";
    char buf[64] = {0};
    FILE* f = fopen(p.c_str(), "r");
    if (f == nullptr) continue;
    if (fgets(buf, sizeof buf, f) != nullptr) buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
    if (std::strcmp(buf, comm) == 0) found = static_cast<pid_t>(std::atoi(e->d_name));
  }
  closedir(d);
  return found;
}

// What the descriptors of a table point at: /proc/self/fd (the program's,
// as seen by the calling thread) or /proc/self/task/<tid>/fd.
std::set<std::string> targets_of(const std::string& fd_dir) {
  std::set<std::string> out;
  DIR* d = opendir(fd_dir.c_str());
  if (d == nullptr) return out;
  // The listing's own descriptor is in the calling thread's table.
  int own = fd_dir == "/proc/self/fd" ? dirfd(d) : -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
    char buf[4096];
    ssize_t n = readlink((fd_dir + "/" + e->d_name).c_str(), buf, sizeof buf - 1);
    if (n > 0) out.insert(std::string(buf, static_cast<size_t>(n)));
  }
  closedir(d);
  return out;
}

std::set<int> numbers_in(const std::string& fd_dir) {
  std::set<int> out;
  DIR* d = opendir(fd_dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') out.insert(std::atoi(e->d_name));
  closedir(d);
  return out;
}

// Runs `body` in a forked child; returns its exit status (128 + the signal
// that killed it).
template <typename F>
int in_child(F body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// ThreadSanitizer models descriptors per process, so the tracer keeps its
// threads in the program's table there (tracer_thread.h).
#if defined(__SANITIZE_THREAD__)
#define SKIP_WITHOUT_PRIVATE_TABLES() GTEST_SKIP() << "private descriptor tables are off under ThreadSanitizer"
#else
#define SKIP_WITHOUT_PRIVATE_TABLES() (void)0
#endif

}  // namespace

TEST(DescriptorTable, WriterHoldsOnlyTheTraceAndTheProgramHoldsNoneOfOurs) {
  SKIP_WITHOUT_PRIVATE_TABLES();
  std::string dir = temp_dir("fdtable");
  int status = in_child([&] {
    int user_pipe[2];
    if (pipe(user_pipe) != 0) return 10;
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 11;
    std::string trace = dft_trace_path();
    pid_t writer = thread_named("dftracer-writer");
    pid_t signal_thread = thread_named("dftracer-signal");
    if (writer == 0) return 12;
    std::set<std::string> wt = targets_of("/proc/self/task/" + std::to_string(writer) + "/fd");
    if (wt.count(trace) != 1) return 13;                    // the writer holds the trace...
    if (wt.count(trace + ".idx") != 1) return 14;           // ...and its index
    // ...and no copy of the program's: its 0-2 are /dev/null, besides them
    // only the trace, the index and a pidfd of the process (diagnostics).
    for (const std::string& t : wt)
      if (t != trace && t != trace + ".idx" && t != "/dev/null" && t != "anon_inode:[pidfd]") return 15;
    if (targets_of("/proc/self/task/" + std::to_string(writer) + "/fd").count("/dev/null") != 1) return 16;
    std::set<std::string> mine = targets_of("/proc/self/fd");
    if (mine.count(trace) || mine.count(trace + ".idx")) return 17;  // the program's table has none of ours
    if (signal_thread != 0) {
      for (const std::string& t : targets_of("/proc/self/task/" + std::to_string(signal_thread) + "/fd"))
        if (t != "/dev/null" && t != "anon_inode:[pidfd]") return 18;
    }
    (void)user_pipe;
    for (int i = 0; i < 100; ++i) emit("e", i);
    dft_finalize();
    size_t n = 0;
    if (!finalized_trace_error(read_all(trace), &n).empty()) return 19;
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(DescriptorTable, ProgramClosingEveryDescriptorKeepsItsTraceAndItsOwnFiles) {
  SKIP_WITHOUT_PRIVATE_TABLES();
  std::string dir = temp_dir("fdtable");
  const std::string user_file = dir + "/user.bin";
  int status = in_child([&] {
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 10;
    std::string trace = dft_trace_path();
    for (int i = 0; i < 500; ++i) emit("before", i);
    dft_flush();
    // What daemons and some launchers do: close everything above stderr.
    syscall(SYS_close_range, 3u, ~0u, 0u);
    // The program's next file takes the lowest free number: where the
    // trace's descriptor was, when the writer shared this table.
    int fd = open(user_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return 11;
    const char user_bytes[] = "the program's own bytes\n";
    for (int i = 0; i < 500; ++i) emit("after", i);
    dft_flush();
    if (write(fd, user_bytes, sizeof user_bytes - 1) != static_cast<ssize_t>(sizeof user_bytes - 1)) return 12;
    dft_finalize();
    close(fd);
    std::string user = read_bytes(user_file);
    if (user != user_bytes) return 13;  // no trace bytes in the program's file
    size_t n = 0;
    std::string text = read_all(trace);
    if (!finalized_trace_error(text, &n).empty()) return 14;
    std::multiset<std::string> names;
    for (auto& e : parse_events(event_lines(text))) names.insert(e.name);
    if (names.count("before") != 500 || names.count("after") != 500) return 15;
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(DescriptorTable, PipeClosedByTheProgramReachesEofAtOnce) {
  SKIP_WITHOUT_PRIVATE_TABLES();
  std::string dir = temp_dir("fdtable");
  int status = in_child([&] {
    int p[2];
    if (pipe(p) != 0) return 10;
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 11;
    emit("e", 0);
    close(p[1]);  // the last write end, unless the writer kept a copy
    pollfd pf{p[0], POLLIN, 0};
    if (poll(&pf, 1, 2000) != 1) return 12;
    char c;
    if (read(p[0], &c, 1) != 0) return 13;
    dft_finalize();
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(DescriptorTable, SharedTableStillWorksWhereUnshareIsNotWanted) {
  std::string dir = temp_dir("fdtable");
  int status = in_child([&] {
    setenv("DFTRACER_PRIVATE_FDS", "0", 1);
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 10;
    std::string trace = dft_trace_path();
    if (targets_of("/proc/self/fd").count(trace) != 1) return 11;  // shared: the program sees it
    for (int i = 0; i < 100; ++i) emit("e", i);
    pid_t child = fork();  // the child closes its copy and writes its own file
    if (child == 0) {
      emit("in_child", 0);
      exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 12;
    dft_finalize();
    auto files = files_in(dir, ".pfw.gz");
    if (files.size() != 2) return 13;
    for (auto& f : files) {
      size_t n = 0;
      if (!finalized_trace_error(read_all(f), &n).empty()) return 14;
    }
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(DescriptorTable, ProgramClosingItsStdoutPipeGivesItsReaderEofAtOnce) {
  SKIP_WITHOUT_PRIVATE_TABLES();
  // A daemon started with captured output closes (or redirects) its stdout:
  // the starter reads to EOF. A copy of the pipe in our threads' tables
  // would keep it waiting until the traced program exits.
  std::string dir = temp_dir("fdtable");
  int status = in_child([&] {
    int p[2];
    if (pipe(p) != 0) return 10;
    if (dup2(p[1], 1) != 1) return 11;
    close(p[1]);
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 12;
    emit("e", 0);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);  // what a daemon does with its stdout
    close(devnull);
    pollfd pf{p[0], POLLIN, 0};
    if (poll(&pf, 1, 2000) != 1) return 13;
    char c;
    if (read(p[0], &c, 1) != 0) return 14;
    dft_finalize();
    return 0;
  });
  EXPECT_EQ(status, 0);
}

// 32 threads on a pool of 16 chunks: the writer warns once about drops.
static void record_until_the_writer_warns() {
  std::atomic<int> holding{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 32; ++t)
    ts.emplace_back([&] {
      emit("e", 0);  // takes a chunk, if one is left
      holding.fetch_add(1);
      while (holding.load() < 32) std::this_thread::yield();
      for (int i = 1; i < 50; ++i) emit("e", i);
    });
  for (auto& t : ts) t.join();
}

TEST(DescriptorTable, WriterWarningsReachTheProgramsStderrOfTheMoment) {
  SKIP_WITHOUT_PRIVATE_TABLES();
  // The writer's one warning about dropped events, after the program moved
  // its stderr to a file (dup2, which the I/O hooks report as
  // dft_stderr_replaced; this program has no hooks, so it says so itself):
  // the warning is in that file.
  std::string dir = temp_dir("fdtable");
  const std::string log = dir + "/stderr.txt";
  int status = in_child([&] {
    setenv("DFTRACER_BUFFER_SIZE", "64K", 1);
    setenv("DFTRACER_CHUNK_SIZE", "4K", 1);  // 16 chunks for 32 threads: some drop
    if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 10;
    int f = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f < 0 || dup2(f, 2) != 2) return 11;
    dft_stderr_replaced();
    close(f);
    record_until_the_writer_warns();
    dft_finalize();
    return 0;
  });
  ASSERT_EQ(status, 0);
  EXPECT_NE(read_bytes(log).find("dropping events"), std::string::npos) << read_bytes(log);
}

TEST(DescriptorTable, WarningsNeverLandInADataFileThatTookDescriptorTwo) {
  // A program that closed 0-2 and then opened its data files gets them as
  // 0-2: the tracer's warnings (the writer's, and one from the program's own
  // thread) must not be written into them. Both with the writer in a table
  // of its own and sharing the program's.
  for (const char* private_fds : {"1", "0"}) {
    std::string dir = temp_dir("fdtable");
    int status = in_child([&] {
      setenv("DFTRACER_PRIVATE_FDS", private_fds, 1);
      setenv("DFTRACER_BUFFER_SIZE", "64K", 1);
      setenv("DFTRACER_CHUNK_SIZE", "4K", 1);
      if (dft_init_opt_in((dir + "/t").c_str(), nullptr, -1) != 0) return 10;
      for (int fd = 0; fd <= 2; ++fd) close(fd);
      for (int i = 0; i <= 2; ++i) {
        int fd = open((dir + "/data" + std::to_string(i) + ".txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd != i) return 11 + i;
        if (write(fd, "data\n", 5) != 5) return 14;
      }
      record_until_the_writer_warns();
      dft_warn("a warning from the program's thread");
      dft_finalize();
      return 0;
    });
    ASSERT_EQ(status, 0) << "DFTRACER_PRIVATE_FDS=" << private_fds;
    for (int i = 0; i <= 2; ++i)
      EXPECT_EQ(read_bytes(dir + "/data" + std::to_string(i) + ".txt"), "data\n")
          << "DFTRACER_PRIVATE_FDS=" << private_fds << ", data" << i;
  }
}
