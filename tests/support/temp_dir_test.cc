// temp_dir(): the helper every C++ suite uses must not leave directories
// behind, and a forked child must not delete its parent's.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "trace_file.h"

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Runs `child` in a forked process that then exits normally (exit(), so
// static destructors run, as at the end of a test binary) and returns what
// the child wrote to the pipe.
template <typename F>
std::string in_child_that_exits_normally(F child) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out = child();
    if (write(fds[1], out.data(), out.size()) != static_cast<ssize_t>(out.size())) _exit(3);
    close(fds[1]);
    exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return out;
}

TEST(TempDir, RemovedWithItsFilesWhenTheProcessExits) {
  std::string dir = in_child_that_exits_normally([] {
    std::string d = dftracer_test::temp_dir("exit");
    std::ofstream(d + "/trace.pfw") << "[\n";
    return d;
  });
  ASSERT_FALSE(dir.empty());
  EXPECT_FALSE(exists(dir)) << dir << " was left behind";
}

TEST(TempDir, AForkedChildDoesNotRemoveItsParentsDirectories) {
  std::string dir = dftracer_test::temp_dir("parent");
  in_child_that_exits_normally([] { return std::string(); });
  EXPECT_TRUE(exists(dir));
}

}  // namespace
