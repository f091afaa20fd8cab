// Outputs never destroy inputs, and a failed write is one line and exit 2
// (an exception from the library), never an abort or a silent exit 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "cli_run.hpp"
#include "merge.hpp"
#include "output_file.hpp"
#include "report.hpp"

namespace dftracer::analyze::testing {
namespace {

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Events enough that merge hands its output blocks (1 MiB each) to the sink
// from the reader threads, not only at close.
std::string big_trace(int n) {
  std::vector<std::string> evs;
  for (int i = 0; i < n; ++i) evs.push_back(op_event(i, "function.op" + std::to_string(i % 7), 1000 + i, 2));
  return pfw_text(evs);
}

bool have_dev_full() { return ::access("/dev/full", W_OK) == 0; }

TEST(OutputFile, EveryCommandRefusesToOverwriteAnInput) {
  TempDir d;
  const std::string pfw = d.file("t.pfw"), gz = d.file("t.pfw.gz");
  const std::string text = pfw_text({op_event(1, "function.mm", 10, 4), op_event(2, "function.add", 20, 6)});
  write_file(pfw, text);
  write_gz(gz, text, 1, /*index=*/true);
  const std::string gz_bytes = read_file(gz), idx_bytes = read_file(gz + ".idx");
  ASSERT_EQ(::link(pfw.c_str(), d.file("hard.pfw").c_str()), 0);
  ASSERT_EQ(::symlink(gz.c_str(), d.file("soft.pfw.gz").c_str()), 0);
  struct Case {
    std::string args;
  } cases[] = {
      {"merge -o " + pfw + " " + pfw},
      {"merge -o " + d.file("hard.pfw") + " " + pfw},           // another name, same inode
      {"merge -o " + d.file("./t.pfw") + " " + d.path().string()},  // found in a directory
      {"merge -o " + gz + ".idx " + gz},                         // the input's index
      {"report -o " + gz + " " + gz},
      {"report -o " + d.file("soft.pfw.gz") + " " + gz},        // through a symlink
      {"summary -o " + pfw + " " + pfw},
  };
  for (const Case& c : cases) {
    CliRun r = run_cli(d, c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find("refusing to overwrite it"), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(read_file(pfw), text) << c.args;
    EXPECT_EQ(read_file(gz), gz_bytes) << c.args;
    EXPECT_EQ(read_file(gz + ".idx"), idx_bytes) << c.args;
  }
  // The library refuses too (the Python API calls it).
  EXPECT_THROW(merge_traces({pfw}, pfw, 1), InputError);
  EXPECT_THROW(write_report({gz}, gz, 5, 1), InputError);
  EXPECT_EQ(read_file(pfw), text);
  EXPECT_EQ(read_file(gz), gz_bytes);
  // A new file, or an existing one that is not an input, is written as asked.
  write_file(d.file("old.json"), "x");
  EXPECT_EQ(run_cli(d, "merge -o " + d.file("old.json") + " " + pfw).status, 0);
  EXPECT_NE(read_file(d.file("old.json")).find("function.mm"), std::string::npos);
}

TEST(OutputFile, WriteErrorsExitTwoWithOneLine) {
  if (!have_dev_full()) GTEST_SKIP() << "no /dev/full";
  TempDir d;
  // Two files of ~1.6 MB: two pieces, so two reader threads write merge blocks.
  write_file(d.file("a.pfw"), big_trace(4000));
  write_file(d.file("b.pfw"), big_trace(4000));
  const std::string in = d.file("a.pfw") + " " + d.file("b.pfw");
  const std::string full_gz = d.file("full.json.gz");  // gzip output, to the full device
  ASSERT_EQ(::symlink("/dev/full", full_gz.c_str()), 0);
  for (const auto& [args, out] : std::vector<std::pair<std::string, std::string>>{
           {"merge --threads 2 -o /dev/full " + in, "/dev/full"},
           {"merge --threads 2 -o " + full_gz + " " + in, full_gz},
           {"merge --threads 1 -o /dev/full " + in, "/dev/full"},
           {"report --threads 2 -o /dev/full " + in, "/dev/full"},
           {"summary -o /dev/full " + in, "/dev/full"}}) {
    CliRun r = run_cli(d, args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("dftracer-analyze: error: cannot write " + out + ": No space left on device"),
              std::string::npos)
        << args << "\n" << r.err;
  }
  // Standard output that cannot be written.
  CliRun r = run_cli(d, "summary " + in, "/dev/full");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot write to standard output"), std::string::npos) << r.err;
}

TEST(OutputFile, MergeWriteErrorOnReaderThreadsThrowsToTheCaller) {
  if (!have_dev_full()) GTEST_SKIP() << "no /dev/full";
  TempDir d;
  write_file(d.file("a.pfw"), big_trace(4000));
  write_file(d.file("b.pfw"), big_trace(4000));
  ReadOptions small;
  small.min_piece_bytes = 64 << 10;  // many pieces, so every thread has work
  for (unsigned threads : {1u, 2u, 4u}) {
    try {
      merge_traces({d.file("a.pfw"), d.file("b.pfw")}, "/dev/full", threads, small);
      ADD_FAILURE() << "no error for " << threads << " threads";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot write /dev/full"), std::string::npos) << e.what();
    }
  }
}

// Runs the command with the file-size limit at `blocks` (SIGXFSZ ignored, so
// a write past it fails with EFBIG): a write error in the middle of the output.
CliRun run_cli_with_small_fsize(const TempDir& d, const std::string& args, int blocks) {
  const std::string cmd = "trap '' XFSZ; ulimit -f " + std::to_string(blocks) + "; exec " + std::string(DFTRACER_ANALYZE_EXE) + " " + args +
                          " >" + d.file("stdout") + " 2>" + d.file("stderr");
  int rc = std::system(("sh -c \"" + cmd + "\"").c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.err = read_file(d.file("stderr"));
  return r;
}

// A merge (or report, summary -o) that fails midway leaves no
// half-written file claiming to be a trace, and what was at the output's
// name before is kept; no temporary file is left behind either.
TEST(OutputFile, AFailedWriteLeavesNoPartialOutput) {
  TempDir d;
  write_file(d.file("a.pfw"), big_trace(4000));
  write_file(d.file("b.pfw"), big_trace(4000));
  const std::string in = d.file("a.pfw") + " " + d.file("b.pfw");
  write_file(d.file("kept.json"), "old content");
  for (const auto& [args, out] : std::vector<std::pair<std::string, std::string>>{
           {"merge --threads 2 -o " + d.file("new.json") + " " + in, d.file("new.json")},
           {"merge --threads 1 -o " + d.file("new.json.gz") + " " + in + " " + in, d.file("new.json.gz")},
           {"merge --threads 2 -o " + d.file("kept.json") + " " + in, d.file("kept.json")},
           {"report -o " + d.file("r.html") + " " + in, d.file("r.html")}}) {
    // The report's page is smaller than a merge's output: a lower limit.
    CliRun r = run_cli_with_small_fsize(d, args, args.rfind("report", 0) == 0 ? 4 : 200);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("cannot write " + out + ": File too large"), std::string::npos) << args << "\n" << r.err;
    if (out == d.file("kept.json")) EXPECT_EQ(read_file(out), "old content") << args;
    else EXPECT_NE(::access(out.c_str(), F_OK), 0) << args << ": a partial output was left";
  }
  for (const auto& e : std::filesystem::directory_iterator(d.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();

  // A successful merge gives the file the ordinary mode, not mkstemp's 0600.
  ASSERT_EQ(run_cli(d, "merge -o " + d.file("ok.json") + " " + in).status, 0);
  struct stat st {};
  ASSERT_EQ(::stat(d.file("ok.json").c_str(), &st), 0);
  mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(OutputFile, AFifoIsWrittenOnceAReaderComesAndIsAnErrorWhenNoneDoes) {
  TempDir d;
  write_file(d.file("a.pfw"), big_trace(50));
  const std::string fifo = d.file("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader opens the FIFO after the writer started waiting for one
  // (`analyze -o p & cat p`): the summary arrives whole, exit 0.
  std::string got;
  std::thread reader([&] {
    ::usleep(300 * 1000);
    got = read_file(fifo);
  });
  CliRun r = run_cli(d, "summary -o " + fifo + " " + d.file("a.pfw"));
  // Had the run failed before opening the FIFO, the reader would wait for a
  // writer forever: one that opens and closes lets it end (and the compare
  // below fail) instead of hanging the test.
  if (r.status != 0) ::close(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK));
  reader.join();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(got, run_cli(d, "summary " + d.file("a.pfw")).out);
  // No reader ever: one line and exit 2 after the wait, not a hang; the
  // FIFO is left as it was.
  r = run_cli(d, "summary -o " + fifo + " " + d.file("a.pfw"));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot write " + fifo + ": no process opened the FIFO for reading within 10 s"),
            std::string::npos)
      << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

}  // namespace
}  // namespace dftracer::analyze::testing
