// PRELOAD mode end to end: a real C program (io_scripted_program.c) run
// under LD_PRELOAD=libdftracer_preload.so, its trace file read back and
// parsed as JSON with tests/support. Checks every call of the script
// appears once with its size, ret, offset and fhash, inside the program's
// own region, that errno survives the hooks, and that paths outside
// DFTRACER_DATA_DIR, DFTRACER_DISABLE_IO=1 and an untraced run record nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trace_file.h"

namespace {

using dftracer_test::Event;

struct ProgramRun {
  int status = -1;
  std::vector<std::vector<Event>> files;  // one per trace file written
};

ProgramRun run_program(const std::string& dir, const std::vector<std::string>& args, const std::vector<std::string>& env,
                       std::string prog = DFTIO_SCRIPTED_PROGRAM) {
  std::vector<std::string> envs = {"DFTRACER_LOG_FILE=" + dir + "/trace", "DFTRACER_TIME_RESOLUTION=ns",
                                   "PATH=/usr/bin:/bin"};
  // Our preload library unless `env` names another (the first LD_PRELOAD wins).
  bool preload_named = false;
  for (const std::string& e : env) preload_named |= e.rfind("LD_PRELOAD=", 0) == 0;
  if (!preload_named) envs.push_back("LD_PRELOAD=" DFTIO_PRELOAD_LIB);
  envs.insert(envs.end(), env.begin(), env.end());
  ProgramRun r;
  r.status = dftracer_test::run_program(prog, args, envs);
  for (const char* suffix : {".pfw", ".pfw.gz"})
    for (const std::string& f : dftracer_test::files_in(dir, suffix))
      r.files.push_back(dftracer_test::parse_events(dftracer_test::event_lines(dftracer_test::read_all(f))));
  return r;
}

const std::vector<std::string> kTraced = {"LD_PRELOAD=" DFTIO_PRELOAD_LIB, "DFTRACER_ENABLE=1", "DFTRACER_INIT=PRELOAD"};

std::vector<std::string> with(std::vector<std::string> env, const std::vector<std::string>& more) {
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

bool is_io(const Event& e) { return e.ph == "X" && (e.cat == "POSIX" || e.cat == "STDIO"); }

std::vector<Event> io_events(const std::vector<Event>& all) {
  std::vector<Event> out;
  for (const Event& e : all)
    if (is_io(e)) out.push_back(e);
  return out;
}

// path -> fhash from the FH metadata records of paths under `dir` (the
// preamble names the working directory with an FH record too).
std::map<std::string, std::string> file_hashes(const std::vector<Event>& all, const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const Event& e : all)
    if (e.ph == "M" && e.name == "FH" && str_arg(e, "name").rfind(dir + "/", 0) == 0)
      out[str_arg(e, "name")] = str_arg(e, "value");
  return out;
}

struct Expected {
  const char* name;
  const char* cat;
  const char* file;  // key into the FH map
  int64_t size;      // -1: no size arg
  int64_t ret;       // -2: any value >= 0
  int64_t offset;    // -1: no offset arg
};

// The scripted sequence of io_scripted_program.c, call by call.
void check_scripted_sequence(const std::string& program) {
  std::string dir = dftracer_test::temp_dir("io_preload");
  std::string in = dir + "/in", out = dir + "/out";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"script", in, out}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}), program);
  ASSERT_EQ(r.status, 0) << "the program failed (3: a hook changed errno)";
  ASSERT_EQ(r.files.size(), 1u);
  const std::vector<Event>& all = r.files[0];
  std::map<std::string, std::string> fh = file_hashes(all, in);
  const std::string a = in + "/a.bin", b = in + "/b.txt";
  const Expected want[] = {
      {"open", "POSIX", "a.bin", -1, -2, -1},     {"write", "POSIX", "a.bin", 4096, 4096, -1},
      {"pwrite", "POSIX", "a.bin", 100, 100, 8192}, {"fsync", "POSIX", "a.bin", -1, 0, -1},
      {"close", "POSIX", "a.bin", -1, 0, -1},     {"stat", "POSIX", "a.bin", -1, 0, -1},
      {"open", "POSIX", "a.bin", -1, -2, -1},     {"read", "POSIX", "a.bin", 1000, 1000, -1},
      {"lseek", "POSIX", "a.bin", -1, 0, 0},      {"pread", "POSIX", "a.bin", 50, 50, 10},
      {"close", "POSIX", "a.bin", -1, 0, -1},     {"fopen", "STDIO", "b.txt", -1, 0, -1},
      {"fwrite", "STDIO", "b.txt", 300, 300, -1}, {"fputs", "STDIO", "b.txt", 6, -2, -1},
      {"fclose", "STDIO", "b.txt", -1, 0, -1},    {"fopen", "STDIO", "b.txt", -1, 0, -1},
      {"fread", "STDIO", "b.txt", 50, 50, -1},    {"fclose", "STDIO", "b.txt", -1, 0, -1},
      {"open", "POSIX", "missing", -1, -1, -1},   {"mkdir", "POSIX", "d", -1, 0, -1},
      {"rmdir", "POSIX", "d", -1, 0, -1},         {"unlink", "POSIX", "b.txt", -1, 0, -1},
  };
  std::vector<Event> io = io_events(all);
  ASSERT_EQ(io.size(), std::size(want)) << "one event per call of the script, none for the file outside DATA_DIR";
  const Event* region = nullptr;
  for (const Event& e : all)
    if (e.name == "script") region = &e;
  ASSERT_NE(region, nullptr);
  for (size_t i = 0; i < io.size(); ++i) {
    const Event& e = io[i];
    const Expected& w = want[i];
    SCOPED_TRACE("call " + std::to_string(i) + ": " + w.name);
    EXPECT_EQ(e.name, w.name);
    EXPECT_EQ(e.cat, w.cat);
    std::string path = in + "/" + w.file;
    ASSERT_TRUE(fh.count(path)) << "no FH record for " << path;
    EXPECT_EQ(str_arg(e, "fhash"), fh[path]);
    EXPECT_EQ(int_arg(e, "size"), w.size);
    if (w.ret == -2) EXPECT_GE(int_arg(e, "ret"), 0);
    else EXPECT_EQ(int_arg(e, "ret"), w.ret);
    EXPECT_EQ(int_arg(e, "offset"), w.offset);
    // Nested in the program's own region, in call order.
    EXPECT_GE(e.ts, region->ts);
    EXPECT_LE(e.ts + e.dur, region->ts + region->dur);
    // Epoch microseconds as doubles hold quarter microseconds: back-to-back
    // calls on a quiet machine can round to an overlap of up to 0.5 us.
    if (i > 0) EXPECT_GE(e.ts + 0.5, io[i - 1].ts + io[i - 1].dur);
  }
  // Descriptors: the data calls carry the descriptor their open returned.
  EXPECT_EQ(int_arg(io[1], "fd"), int_arg(io[0], "ret"));
  EXPECT_EQ(int_arg(io[7], "fd"), int_arg(io[6], "ret"));
  // Every path named once; nothing of the directory outside DATA_DIR.
  std::multiset<std::string> named;
  for (const Event& e : all)
    if (e.name == "FH") named.insert(str_arg(e, "name"));
  for (const std::string& p : named) {
    EXPECT_EQ(named.count(p), 1u) << p;
    EXPECT_EQ(p.rfind(out, 0), std::string::npos) << "outside DFTRACER_DATA_DIR: " << p;
  }
}

TEST(Preload, ScriptedSequenceEveryCallOnceWithItsArgs) { check_scripted_sequence(DFTIO_SCRIPTED_PROGRAM); }

// Built with _FORTIFY_SOURCE=2 (as distributions build programs), the same
// calls reach glibc as __read_chk, __pread_chk, __fread_chk and __open_2:
// the same events, under the plain names.
TEST(Preload, FortifiedProgramSameEvents) { check_scripted_sequence(DFTIO_FORTIFIED_PROGRAM); }

TEST(Preload, DisableIoRecordsNoIoButStillTraces) {
  std::string dir = dftracer_test::temp_dir("io_disable");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"script", in, in}, with(kTraced, {"DFTRACER_DISABLE_IO=1"}));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_TRUE(io_events(r.files[0]).empty());
  bool region = false;
  for (const Event& e : r.files[0]) region |= e.name == "script";
  EXPECT_TRUE(region) << "the program's own events are still recorded";
}

TEST(Preload, UntracedRunPassesStraightThrough) {
  std::string dir = dftracer_test::temp_dir("io_untraced");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  // Preloaded, but tracing not enabled: the hooks are the real calls.
  ProgramRun r = run_program(dir, {"script", in, in}, {"DFTRACER_INIT=PRELOAD"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.files.empty());
}

TEST(Preload, ForkedChildWritesItsOwnReadsToItsOwnFile) {
  std::string dir = dftracer_test::temp_dir("io_fork");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"fork", in}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 2u);
  std::set<std::string> seen;
  for (const std::vector<Event>& f : r.files) {
    std::map<std::string, std::string> fh = file_hashes(f, in);
    ASSERT_EQ(fh.size(), 1u) << "each process names only the file it used";
    const std::string mine = fh.begin()->first;
    seen.insert(mine.substr(mine.rfind('/') + 1));
    int64_t want = mine.find("child") != std::string::npos ? 333 : 222;
    int reads = 0;
    for (const Event& e : io_events(f)) {
      EXPECT_EQ(str_arg(e, "fhash"), fh.begin()->second);
      if (e.name == "pread") {
        ++reads;
        EXPECT_EQ(int_arg(e, "ret"), want);
      }
    }
    EXPECT_EQ(reads, 1);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"child.bin", "parent.bin"}));
}

// glibc's pre-2.33 stat entry points (old binaries, prebuilt libraries)
// under DFTracer's names, and munmap of a traced mapping (tied to its file
// through the address mmap returned); an anonymous mapping is no event.
TEST(Preload, XstatFamilyAndMunmapOfATracedMapping) {
  std::string dir = dftracer_test::temp_dir("io_legacy");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"legacy", in}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0) << "the program failed (3: a hook changed errno)";
  ASSERT_EQ(r.files.size(), 1u);
  std::map<std::string, std::string> fh = file_hashes(r.files[0], in);
  ASSERT_EQ(fh.size(), 1u);
  const std::string hash = fh[in + "/m.bin"];
  const std::vector<std::string> want = {"open",       "write",      "__xstat",   "__xstat64",    "__lxstat",
                                         "__lxstat64", "__fxstat",   "__fxstat64", "__fxstatat", "__fxstatat64",
                                         "mmap",       "munmap",     "close"};
  std::vector<Event> io = io_events(r.files[0]);
  std::vector<std::string> names;
  for (const Event& e : io) names.push_back(e.name);
  ASSERT_EQ(names, want);
  for (const Event& e : io) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(str_arg(e, "fhash"), hash);
    if (e.name != "open" && e.name != "write" && e.name != "mmap") EXPECT_EQ(int_arg(e, "ret"), 0);
  }
  EXPECT_EQ(int_arg(io[6], "fd"), int_arg(io[0], "ret")) << "__fxstat carries its descriptor";
  EXPECT_EQ(int_arg(io[10], "size"), 8192);
  EXPECT_EQ(int_arg(io[11], "size"), 8192) << "munmap: the bytes unmapped";
}

// Descriptors past the static table: dup2 to each of `fds`, then write,
// pread and close there; every call carries the file's fhash. Exit 77: the
// hard RLIMIT_NOFILE is too low for the highest descriptor (skip).
void check_high_descriptors(const char* tag, const std::string& preload, const std::vector<std::string>& fds) {
  std::string dir = dftracer_test::temp_dir(tag);
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  std::vector<std::string> args = {"highfd", in};
  args.insert(args.end(), fds.begin(), fds.end());
  std::vector<std::string> env = {"LD_PRELOAD=" + preload, "DFTRACER_ENABLE=1", "DFTRACER_INIT=PRELOAD",
                                  "DFTRACER_DATA_DIR=" + in};
  ProgramRun r = run_program(dir, args, env);
  if (r.status == 77) GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is below descriptor " << fds.back();
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 1u);
  std::map<std::string, std::string> fh = file_hashes(r.files[0], in);
  ASSERT_EQ(fh.size(), 1u);
  std::map<int64_t, std::map<std::string, int>> calls;  // fd -> call -> count
  for (const Event& e : io_events(r.files[0])) {
    EXPECT_EQ(str_arg(e, "fhash"), fh.begin()->second) << e.name;
    if (e.name != "open" && e.name != "dup2") calls[int_arg(e, "fd")][e.name]++;
  }
  for (const std::string& fd : fds) {
    SCOPED_TRACE("fd " + fd);
    for (const char* c : {"write", "pread", "close"}) EXPECT_EQ(calls[std::stoll(fd)][c], 1) << c;
  }
}

TEST(Preload, DescriptorAbove65535IsTraced) { check_high_descriptors("io_highfd", DFTIO_PRELOAD_LIB, {"70000"}); }

// The same code path on any machine: a build whose static table holds
// 1024 descriptors, so 5000 and 3000 land in two pages of fd_table.c.
TEST(Preload, DescriptorsPastTheStaticTableAreTracedThroughPages) {
  check_high_descriptors("io_highfd_small", DFTIO_PRELOAD_SMALLFD_LIB, {"5000", "3000", "1023"});
}

// Relative paths after chdir, fchdir and a relative chdir resolve
// against the directory of the moment: the program starts outside
// DFTRACER_DATA_DIR, so without following chdir none of its writes (all
// through relative names) would be traced, and their FH names and fhash
// would be those of the start directory.
TEST(Preload, RelativePathsFollowChdirAndFchdir) {
  std::string dir = dftracer_test::temp_dir("io_chdir");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"chdir", in}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 1u);
  const std::map<std::string, int64_t> want = {{in + "/sub/x.bin", 10}, {in + "/y.bin", 20}, {in + "/sub/w.bin", 30}};
  std::map<std::string, std::string> path_of;  // fhash -> path, from every FH record
  for (const Event& e : r.files[0])
    if (e.ph == "M" && e.name == "FH") path_of[str_arg(e, "value")] = str_arg(e, "name");
  std::map<std::string, int64_t> written;
  std::map<std::string, int> changes;
  for (const Event& e : io_events(r.files[0])) {
    if (e.name == "write") written[path_of[str_arg(e, "fhash")]] += int_arg(e, "ret");
    if (e.name == "chdir" || e.name == "fchdir") changes[path_of[str_arg(e, "fhash")]]++;
  }
  EXPECT_EQ(written, want);
  EXPECT_EQ(changes, (std::map<std::string, int>{{in + "/sub", 2}, {in, 1}}));
}

// A directory opened through a symlink below DFTRACER_DATA_DIR (IN/link ->
// OUT, outside it) keeps the name it was opened by: openat on its
// descriptor and a relative open after fchdir to it are traced as
// IN/link/..., where the kernel's names (/proc/self/fd, getcwd) would give
// OUT/... and nothing would be traced.
TEST(Preload, ADirectoryDescriptorKeepsTheNameItWasOpenedBy) {
  std::string dir = dftracer_test::temp_dir("io_dirlink");
  std::string in = dir + "/in", out = dir + "/out";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"dirlink", in, out}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 1u);
  std::map<std::string, std::string> path_of;  // fhash -> path
  for (const Event& e : r.files[0])
    if (e.ph == "M" && e.name == "FH") path_of[str_arg(e, "value")] = str_arg(e, "name");
  std::map<std::string, int64_t> written;
  std::map<std::string, int> calls;
  for (const Event& e : io_events(r.files[0])) {
    if (e.name == "write") written[path_of[str_arg(e, "fhash")]] += int_arg(e, "ret");
    calls[e.name + " " + path_of[str_arg(e, "fhash")]]++;
  }
  EXPECT_EQ(written, (std::map<std::string, int64_t>{{in + "/link/a.bin", 40}, {in + "/link/b.bin", 50}}));
  EXPECT_EQ(calls["opendir " + in + "/link"], 1);
  EXPECT_EQ(calls["fchdir " + in + "/link"], 1);
  EXPECT_EQ(calls["closedir " + in + "/link"], 1);
}

// Failing calls fail as untraced, with the same errno, and crash nothing: a
// NULL path (glibc's __nonnull once let the compiler drop the hook's check),
// an unreadable iovec array (read after the failed call); a failed dup2 or
// dup3 onto a traced descriptor leaves it traced (it was forgotten before the
// call). The program checks each errno itself (exit status: the first check
// that did not hold).
TEST(Preload, FailingCallsFailAsUntracedAndKeepTheDescriptorTraced) {
  std::string dir = dftracer_test::temp_dir("io_failing");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ProgramRun untraced = run_program(dir, {"failing", in}, {"LD_PRELOAD="});
  ASSERT_EQ(untraced.status, 0);
  ProgramRun r = run_program(dir, {"failing", in}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0) << "exit status: the first check that failed (io_scripted_program.c, failing_calls)";
  ASSERT_EQ(r.files.size(), 1u);
  std::map<std::string, std::string> fh = file_hashes(r.files[0], in);
  const std::string h = fh[in + "/edges.bin"];
  ASSERT_FALSE(h.empty());
  std::vector<std::string> calls;
  for (const Event& e : io_events(r.files[0]))
    if (str_arg(e, "fhash") == h)
      calls.push_back(e.name == "open" ? "open" : e.name + " " + std::to_string(int_arg(e, "ret")));
  // The failed dup3 (its source is the file; dup2's, 9999, is not traced),
  // then the pread, the failed readv (size 0: the array was not readable) and
  // the close: the descriptor stayed traced.
  EXPECT_EQ(calls, (std::vector<std::string>{"open", "write 100", "dup3 -1", "pread 100", "readv -1", "close 0"}));
  for (const Event& e : io_events(r.files[0]))
    if (e.name == "readv") EXPECT_EQ(int_arg(e, "size"), 0);
}

// close_range and closefrom forget what they close: the outside file and the
// pipe that get the numbers next are not recorded as the closed files.
TEST(Preload, DescriptorsClosedByCloseRangeOrClosefromAreForgotten) {
  std::string dir = dftracer_test::temp_dir("io_closerange");
  std::string in = dir + "/in", out = dir + "/out";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"closerange", in, out}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0) << "exit status: the first check that failed (io_scripted_program.c, closed_in_bulk)";
  ASSERT_EQ(r.files.size(), 1u);
  std::map<std::string, std::string> path_of;  // fhash -> path
  for (auto& [path, hash] : file_hashes(r.files[0], in)) path_of[hash] = path;
  std::map<std::string, std::vector<std::string>> by_path;  // path -> "call ret"
  for (const Event& e : io_events(r.files[0])) {
    auto it = path_of.find(str_arg(e, "fhash"));
    by_path[it != path_of.end() ? it->second : "?"].push_back(
        e.name == "open" ? "open" : e.name + " " + std::to_string(int_arg(e, "ret")));
  }
  using V = std::vector<std::string>;
  EXPECT_EQ(by_path[in + "/a.bin"], (V{"open", "write 10"})) << "b.bin's write and close are not a.bin's";
  EXPECT_EQ(by_path[in + "/c.bin"], (V{"open", "write 30"})) << "the pipe's calls are not c.bin's";
  EXPECT_EQ(by_path[in + "/d.bin"], (V{"open", "write 50", "close 0"})) << "CLOSE_RANGE_CLOEXEC closes nothing";
  EXPECT_EQ(by_path.count("?"), 0u);
}

// A descriptor the child inherited open is named in the child's own file:
// its pread's fhash has an FH record there, naming the file.
TEST(Preload, AForkedChildNamesTheDescriptorsItInherited) {
  std::string dir = dftracer_test::temp_dir("io_inherit");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"inherit", in}, with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 2u);
  int children = 0;
  for (const std::vector<Event>& file : r.files) {
    std::vector<Event> preads;
    for (const Event& e : io_events(file))
      if (e.name == "pread") preads.push_back(e);
    if (preads.empty()) continue;  // the parent's file
    ++children;
    ASSERT_EQ(preads.size(), 1u);
    EXPECT_EQ(int_arg(preads[0], "ret"), 60);
    std::map<std::string, std::string> fh = file_hashes(file, in);
    ASSERT_EQ(fh.count(in + "/inherited.bin"), 1u) << "the child's file names the inherited descriptor";
    EXPECT_EQ(fh[in + "/inherited.bin"], str_arg(preads[0], "fhash"));
  }
  EXPECT_EQ(children, 1);
}

// Run by the ThreadSanitizer step too: eight threads doing I/O at once.
TEST(Preload, EightThreadsEachEventOnceWithItsOwnFile) {
  std::string dir = dftracer_test::temp_dir("io_threads");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  const int kThreads = 8, kRounds = static_cast<int>(dftracer_test::scaled(200));
  ProgramRun r = run_program(dir, {"threads", in, std::to_string(kThreads), std::to_string(kRounds)},
                      with(kTraced, {"DFTRACER_DATA_DIR=" + in}));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 1u);
  std::map<std::string, std::string> fh = file_hashes(r.files[0], in);
  EXPECT_EQ(fh.size(), static_cast<size_t>(kThreads));
  std::map<std::string, std::map<std::string, int>> per_hash;  // fhash -> call -> count
  std::map<std::string, std::set<int64_t>> tids;
  for (const Event& e : io_events(r.files[0])) {
    per_hash[str_arg(e, "fhash")][e.name]++;
    tids[str_arg(e, "fhash")].insert(e.tid);
  }
  ASSERT_EQ(per_hash.size(), static_cast<size_t>(kThreads));
  for (auto& [hash, calls] : per_hash) {
    for (const char* call : {"open", "write", "pread", "close"}) EXPECT_EQ(calls[call], kRounds) << hash << " " << call;
    EXPECT_EQ(tids[hash].size(), 1u) << "one thread per file";
  }
}

}  // namespace

namespace {

// DFTRACER_DATA_DIR=all traces every path, but never a trace file (nor its
// .idx): a forked child opens its own file while the hooks are live, and a
// traced write of it would feed events back into the file being written.
TEST(Preload, OwnTraceFileNeverTracedUnderAll) {
  std::string dir = dftracer_test::temp_dir("io_all");
  std::string in = dir + "/in";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  ProgramRun r = run_program(dir, {"fork", in}, with(kTraced, {"DFTRACER_DATA_DIR=all"}));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.files.size(), 2u);
  size_t named = 0;
  for (const std::vector<Event>& f : r.files) {
    for (const Event& e : f) {
      if (e.ph != "M" || e.name != "FH") continue;
      EXPECT_EQ(str_arg(e, "name").find(".pfw"), std::string::npos) << str_arg(e, "name");
      named += str_arg(e, "name").rfind(in + "/", 0) == 0;
    }
  }
  EXPECT_EQ(named, 2u) << "each process's own data file is traced under all";
}

}  // namespace

namespace {

// The object (file name) of the mapping holding `addr`, from a copy of
// /proc/<pid>/maps.
std::string object_at(const std::string& maps, unsigned long addr) {
  std::istringstream in(maps);
  std::string line;
  while (std::getline(in, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || addr < lo || addr >= hi) continue;
    const size_t slash = line.rfind('/');
    return slash == std::string::npos ? "?" : line.substr(slash + 1);
  }
  return "?";
}

struct TracedSyscall {
  std::string call;    // "open" (the openat system call) or "close"
  std::string file;    // basename of the path (a close: of the path its descriptor was opened with)
  std::string object;  // where the system call instruction is: libc.so.6 or libdftracer_preload.so
};

// The openat and close system calls on files under `dir`, in order, from
// `strace -f -i` output (one line per call; a call another thread's line
// interrupts shows as "<unfinished ...>" with its address, its result on a
// later "<... openat resumed>" line).
std::vector<TracedSyscall> syscalls_under(const std::string& straced, const std::string& maps, const std::string& dir) {
  std::vector<TracedSyscall> out;
  std::map<std::pair<long, long>, std::string> fd_path;  // (pid, fd) -> basename
  std::map<long, std::string> pending_open;                // pid -> basename of its unfinished openat
  std::istringstream in(straced);
  std::string line;
  while (std::getline(in, line)) {
    long pid = 0;
    unsigned long ip = 0;
    char call[16] = {0};
    int used = 0;
    if (std::sscanf(line.c_str(), "%ld [%lx] <... %15[a-z] resumed>%n", &pid, &ip, call, &used) == 3) {
      // The end of a call another thread's line interrupted: its result.
      auto it = pending_open.find(pid);
      if (std::string(call) != "openat" || it == pending_open.end()) continue;
      const size_t eq = line.rfind(") = ");
      const long ret = eq == std::string::npos ? -1 : std::atol(line.c_str() + eq + 4);
      if (ret >= 0) fd_path[{pid, ret}] = it->second;
      pending_open.erase(it);
      continue;
    }
    if (std::sscanf(line.c_str(), "%ld [%lx] %15[a-z](%n", &pid, &ip, call, &used) != 3) continue;
    const std::string rest = line.substr(static_cast<size_t>(used));
    const size_t eq = rest.rfind(") = ");
    const long ret = eq == std::string::npos ? -1 : std::atol(rest.c_str() + eq + 4);
    if (std::string(call) == "openat") {
      const size_t q = rest.find('"'), q2 = rest.find('"', q + 1);
      if (q == std::string::npos || q2 == std::string::npos) continue;
      const std::string path = rest.substr(q + 1, q2 - q - 1);
      if (path.rfind(dir + "/", 0) != 0) continue;
      const std::string base = path.substr(dir.size() + 1);
      out.push_back({"open", base, object_at(maps, ip)});
      if (rest.find("<unfinished ...>") != std::string::npos) pending_open[pid] = base;
      else if (ret >= 0) fd_path[{pid, ret}] = base;
    } else if (std::string(call) == "close") {
      auto it = fd_path.find({pid, std::atol(rest.c_str())});
      if (it == fd_path.end()) continue;
      out.push_back({"close", it->second, object_at(maps, ip)});
      fd_path.erase(it);
    }
  }
  return out;
}

// The traced open and close of a regular file issue the system call
// themselves (direct_syscall.h) -- but never for a FIFO, never before the
// path's kind is known, and never again once the program called
// pthread_cancel; and a thread blocked in a traced open of a FIFO can still
// be cancelled. strace -i shows the address of each system call.
TEST(Preload, DirectSystemCallOnlyOnPlainFilesAndUntilPthreadCancel) {
  if (access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/strace (scripts/setup.sh installs it)";
  std::string dir = dftracer_test::temp_dir("io_direct");
  std::string in = dir + "/in", maps_file = dir + "/maps", strace_file = dir + "/strace", stdout_file = dir + "/stdout";
  ASSERT_EQ(mkdir(in.c_str(), 0755), 0);
  std::vector<std::string> args = {"/usr/bin/strace", "-f", "-i", "-qq", "-o", strace_file, "-e", "trace=openat,close",
                                   "-E", "LD_PRELOAD=" DFTIO_PRELOAD_LIB, "-E", "DFTRACER_ENABLE=1",
                                   "-E", "DFTRACER_INIT=PRELOAD", "-E", "DFTRACER_DATA_DIR=" + in,
                                   "-E", "DFTRACER_LOG_FILE=" + dir + "/trace", "-E", "DFTRACER_TIME_RESOLUTION=ns",
                                   DFTIO_DIRECT_PROGRAM, in, maps_file};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string path_env = "PATH=/usr/bin:/bin";
  char* envp[] = {path_env.data(), nullptr};
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execve(argv[0], argv.data(), envp);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  const std::string printed = dftracer_test::read_all(stdout_file);
  if (printed.find("Operation not permitted") != std::string::npos)
    GTEST_SKIP() << "strace cannot trace here (ptrace refused): " << printed;
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << printed;
  EXPECT_NE(printed.find("cancelled 1"), std::string::npos) << "a thread blocked in a traced FIFO open must be cancellable\n"
                                                            << printed;
#if (defined(__x86_64__) || defined(__aarch64__))
  EXPECT_NE(printed.find("direct 3\ncancelled 1\ndirect 0\n"), std::string::npos) << printed;
  const std::string ours = "libdftracer_preload.so", libc = "libc.so.6";
#else
  const std::string ours = "libc.so.6", libc = "libc.so.6";  // no direct calls on this architecture
#endif
  const std::vector<TracedSyscall> want = {
      {"open", "plain.bin", libc},  // first sight: the kind is learned from what it opened
      {"close", "plain.bin", ours}, {"open", "plain.bin", ours}, {"close", "plain.bin", ours},
      {"open", "plain.bin", ours},  {"close", "plain.bin", ours}, {"open", "plain.bin", ours},
      {"close", "plain.bin", ours}, {"open", "plain.bin", ours},  {"close", "plain.bin", ours},  // openat
      {"open", "fifo", libc},       {"close", "fifo", libc},      {"open", "fifo", libc},
      {"close", "fifo", libc},      {"open", "fifo", libc},  // the thread that is cancelled while blocked
      {"open", "plain.bin", libc},  {"close", "plain.bin", libc},  // after pthread_cancel
  };
  const std::vector<TracedSyscall> got =
      syscalls_under(dftracer_test::read_all(strace_file), dftracer_test::read_all(maps_file), in);
  ASSERT_EQ(got.size(), want.size()) << dftracer_test::read_all(strace_file);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].call, want[i].call) << i;
    EXPECT_EQ(got[i].file, want[i].file) << i;
    EXPECT_EQ(got[i].object, want[i].object) << i << ": " << got[i].call << " " << got[i].file;
  }
  // Every one of them is still an event, with its descriptor and result.
  std::vector<std::vector<Event>> files;
  for (const char* suffix : {".pfw", ".pfw.gz"})
    for (const std::string& f : dftracer_test::files_in(dir, suffix))
      files.push_back(dftracer_test::parse_events(dftracer_test::event_lines(dftracer_test::read_all(f))));
  ASSERT_EQ(files.size(), 1u);
  const std::map<std::string, std::string> fh = file_hashes(files[0], in);
  ASSERT_EQ(fh.count(in + "/plain.bin"), 1u);
  int opens = 0, closes = 0;
  for (const Event& e : io_events(files[0])) {
    if (str_arg(e, "fhash") != fh.at(in + "/plain.bin")) continue;
    if (e.name == "open" || e.name == "openat") {
      ++opens;
      EXPECT_GE(int_arg(e, "ret"), 0);
      EXPECT_EQ(int_arg(e, "ret"), int_arg(e, "fd"));
    } else if (e.name == "close") {
      ++closes;
      EXPECT_EQ(int_arg(e, "ret"), 0);
    }
  }
  EXPECT_EQ(opens, 6);
  EXPECT_EQ(closes, 6);
}

}  // namespace
