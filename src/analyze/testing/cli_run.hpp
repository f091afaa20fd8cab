// Test helper: runs the built dftracer-analyze command as a user would, in a
// shell, and collects its exit status, output and peak memory.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "trace_files.hpp"

#ifndef DFTRACER_ANALYZE_EXE
#error "DFTRACER_ANALYZE_EXE must name the dftracer-analyze binary"
#endif

namespace dftracer::analyze::testing {

struct CliRun {
  int status = -1;  // exit status; -1 when killed by a signal (e.g. SIGABRT from std::terminate)
  std::string out, err;
};

// `stdout_to`: where the command's standard output goes (default: a file in `d`, read back into `out`).
inline CliRun run_cli(const TempDir& d, const std::string& args, const std::string& stdout_to = "") {
  std::string out = stdout_to.empty() ? d.file("stdout") : stdout_to;
  std::string cmd = std::string(DFTRACER_ANALYZE_EXE) + " " + args + " >" + out + " 2>" + d.file("stderr");
  int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  // The shell reports a child killed by a signal as 128 + signal.
  if (r.status > 128) r.status = -1;
  if (stdout_to.empty()) r.out = read_file(out);
  r.err = read_file(d.file("stderr"));
  return r;
}

// Peak resident set of the largest child waited for so far, in KiB.
inline long children_max_rss_kib() {
  struct rusage ru {};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  return ru.ru_maxrss;
}

}  // namespace dftracer::analyze::testing
