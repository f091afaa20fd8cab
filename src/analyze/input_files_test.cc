// Inputs are regular files: a FIFO or a device in place of a trace or of its
// .idx never blocks the reader or makes it read without end.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.hpp"
#include "merge.hpp"

namespace dftracer::analyze::testing {
namespace {

// Kills the test (a failure) instead of letting a hang run into ctest's timeout.
struct HangGuard {
  HangGuard() { ::alarm(120); }
  ~HangGuard() { ::alarm(0); }
};

std::string gz_with_fifty_events(const TempDir& d, std::multiset<std::string>* names) {
  std::vector<std::string> evs;
  for (int i = 0; i < 50; ++i) {
    evs.push_back(op_event(i, "e" + std::to_string(i), 1000 + i, 1));
    names->insert("e" + std::to_string(i));
  }
  std::string p = d.file("t.pfw.gz");
  write_gz(p, pfw_text(evs), 5, /*index=*/false);
  return p;
}

TEST(InputFiles, IndexThatIsAFifoIsScannedInstead) {
  HangGuard guard;
  TempDir d;
  std::multiset<std::string> want;
  std::string gz = gz_with_fifty_events(d, &want);
  ASSERT_EQ(::mkfifo((gz + ".idx").c_str(), 0600), 0);
  Collected c = collect({gz}, 2);  // used to block forever opening the FIFO
  EXPECT_EQ(c.names, want);
  EXPECT_EQ(c.stats.bad_indexes, 1u);
  CliRun r = run_cli(d, "summary " + gz);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("1 mismatched .idx sidecar (scanned instead)"), std::string::npos) << r.err;
}

TEST(InputFiles, IndexLinkedToDevZeroIsScannedInstead) {
  HangGuard guard;
  TempDir d;
  std::multiset<std::string> want;
  std::string gz = gz_with_fifty_events(d, &want);
  ASSERT_EQ(::symlink("/dev/zero", (gz + ".idx").c_str()), 0);
  Collected c = collect({gz}, 2);  // used to read /dev/zero into one line until 4 GB
  EXPECT_EQ(c.names, want);
  EXPECT_EQ(c.stats.bad_indexes, 1u);
}

TEST(InputFiles, IndexLargerThanAnyIndexOfItsTraceIsScannedInstead) {
  TempDir d;
  std::multiset<std::string> want;
  std::string gz = gz_with_fifty_events(d, &want);
  std::string idx = "0 " + std::to_string(read_file(gz).size()) + " 0 0\n";  // one member: wrong, but parsable
  idx += std::string(read_file(gz).size() * 6 + 8192, '\n');                 // then blank lines past the bound
  write_file(gz + ".idx", idx);
  Collected c = collect({gz}, 2);
  EXPECT_EQ(c.names, want);
  EXPECT_EQ(c.stats.bad_indexes, 1u);
}

TEST(InputFiles, TraceThatIsNotARegularFileIsAnErrorNotAHang) {
  HangGuard guard;
  TempDir d;
  std::string fifo = d.file("t.pfw");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Past expansion (a path swapped after it was listed): the reader itself refuses.
  NameCollector nc;
  try {
    read_traces({fifo}, {&nc});
    ADD_FAILURE() << "a FIFO was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file: " + fifo), std::string::npos) << e.what();
  }
  EXPECT_THROW(merge_traces({fifo}, d.file("m.json"), 1), InputError);
  // Named on the command line: one line, exit 2.
  CliRun r = run_cli(d, "summary " + fifo);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, "dftracer-analyze: error: not a regular file: " + fifo + "\n");
  CliRun dev = run_cli(d, "summary /dev/zero");
  EXPECT_EQ(dev.status, 2) << dev.err;
  EXPECT_EQ(dev.err, "dftracer-analyze: error: not a regular file: /dev/zero\n");
}

}  // namespace
}  // namespace dftracer::analyze::testing
