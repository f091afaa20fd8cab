// A real program (io_image_end_program.c) under LD_PRELOAD ends its image
// without exit() -- _exit, _Exit, exec, a failed exec, a forked child's
// _exit -- or changes its credentials: every trace file it leaves is
// finalized and holds the writes made before, none is left empty, and the
// program sees what it would see untraced. The sanitizer build runs this
// suite too (exit_hooks.c and cred_hooks.c under ASan+UBSan).
#include <gtest/gtest.h>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "trace_file.h"

namespace {

using dftracer_test::Event;

struct Run {
  int status = -1;
  std::vector<std::string> files;           // trace files left
  std::vector<std::vector<Event>> events;   // each file's events, when finalized
  std::vector<std::string> errors;          // each file's finalization error, "" when finalized
};

Run run(const std::string& dir, const std::vector<std::string>& args) {
  const std::string in = dir + "/in";
  std::vector<std::string> envs = {"DFTRACER_LOG_FILE=" + dir + "/traces/t", "DFTRACER_DATA_DIR=" + in,
                                   "DFTRACER_ENABLE=1", "DFTRACER_INIT=PRELOAD", "LD_PRELOAD=" DFTIO_PRELOAD_LIB,
                                   "PATH=/usr/bin:/bin"};
  for (const char* keep : {"UBSAN_OPTIONS", "TSAN_OPTIONS"})
    if (const char* v = getenv(keep)) envs.push_back(std::string(keep) + "=" + v);
  // In the ASan build the preload library comes before the program's ASan
  // runtime in the load order, which ASan refuses by default; the runtime
  // is still the one the program links.
  const char* asan = getenv("ASAN_OPTIONS");
  envs.push_back(std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") + "verify_asan_link_order=0");
  Run r;
  r.status = dftracer_test::run_program(DFTIO_IMAGE_END_PROGRAM, args, envs);
  for (const std::string& f : dftracer_test::files_in(dir + "/traces", ".pfw.gz")) {
    r.files.push_back(f);
    std::string text = dftracer_test::read_all(f);
    size_t n = 0;
    r.errors.push_back(dftracer_test::finalized_trace_error(text, &n));
    r.events.push_back(dftracer_test::parse_events(dftracer_test::event_lines(text)));
  }
  return r;
}

// The names of the files written (open + write under IN) in one trace.
std::multiset<std::string> written(const std::vector<Event>& events, const std::string& in) {
  std::multiset<std::string> out;
  std::map<std::string, std::string> names;  // fhash -> path
  for (const Event& e : events)
    if (e.ph == "M" && e.name == "FH") names[dftracer_test::str_arg(e, "value")] = dftracer_test::str_arg(e, "name");
  for (const Event& e : events) {
    if (e.ph != "X" || e.name != "write") continue;
    std::string path = names[dftracer_test::str_arg(e, "fhash")];
    if (path.rfind(in + "/", 0) == 0) out.insert(path.substr(in.size() + 1));
  }
  return out;
}

// Runs the program in `mode` (and `extra` args); returns the written-file
// sets of its traces, each of which must be finalized.
std::vector<std::multiset<std::string>> traced(const std::string& mode, std::vector<std::string> extra = {}) {
  std::string dir = dftracer_test::temp_dir("image_end");
  EXPECT_EQ(system(("mkdir -p " + dir + "/in " + dir + "/traces").c_str()), 0);
  std::vector<std::string> args = {mode, dir + "/in"};
  args.insert(args.end(), extra.begin(), extra.end());
  Run r = run(dir, args);
  EXPECT_EQ(r.status, 0) << mode;
  std::vector<std::multiset<std::string>> out;
  for (size_t i = 0; i < r.files.size(); ++i) {
    EXPECT_EQ(r.errors[i], "") << r.files[i];
    out.push_back(written(r.events[i], dir + "/in"));
  }
  std::sort(out.begin(), out.end());
  return out;
}

using Sets = std::vector<std::multiset<std::string>>;

TEST(ImageEnd, ExitAndUnderscoreExitFinalizeWithTheirEvents) {
  EXPECT_EQ(traced("_exit"), Sets({{"exit.bin"}}));
  EXPECT_EQ(traced("_Exit"), Sets({{"Exit.bin"}}));
}

TEST(ImageEnd, ExecFinalizesTheOldImageAndTheNewOneTracesItself) {
  EXPECT_EQ(traced("exec", {DFTIO_IMAGE_END_PROGRAM}), Sets({{"after.bin"}, {"exec.bin"}}));
  EXPECT_EQ(traced("execl", {DFTIO_IMAGE_END_PROGRAM}), Sets({{"after.bin"}, {"execl.bin"}}));
}

TEST(ImageEnd, AFailedExecTracesOnInAFileOfItsOwn) {
  // The file finalized before the exec stays complete; tracing starts again
  // in a second file of the same process.
  EXPECT_EQ(traced("execfail"), Sets({{"again.bin"}, {"execfail.bin"}}));
}

TEST(ImageEnd, AForkedChildEndingInExitKeepsItsOwnFile) {
  EXPECT_EQ(traced("forkexit"), Sets({{"child.bin"}, {"forkexit.bin"}}));
}

TEST(ImageEnd, ACredentialChangeFinalizesAndRunsOnUntracedSingleThreaded) {
  EXPECT_EQ(traced("setuid"), Sets({{"setuid.bin"}}));
  EXPECT_EQ(traced("unshare"), Sets({{"unshare.bin"}}));
}

}  // namespace
