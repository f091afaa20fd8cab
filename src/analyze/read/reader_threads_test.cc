// --threads / threads=: one rule (1..1024, clamped to the cores and the work),
// and an exception on a reader thread reaches the caller instead of aborting.
#include <gtest/gtest.h>

#include <stdexcept>

#include "cli_run.hpp"
#include "reader_threads.hpp"

namespace dftracer::analyze::testing {
namespace {

TEST(ReaderThreads, CliRejectsNonsenseThreadCounts) {
  TempDir d;
  write_file(d.file("t.pfw"), pfw_text({op_event(1, "function.mm", 10, 4)}));
  // 4294967297 used to wrap to 1 and run; 10^6 tried to start a million threads.
  for (const char* v : {"0", "-1", "1025", "1000000", "4294967297", "99999999999999999999", "abc", "2x", "''"}) {
    CliRun r = run_cli(d, std::string("summary --threads ") + v + " " + d.file("t.pfw"));
    EXPECT_EQ(r.status, 2) << v << "\n" << r.err;
    EXPECT_EQ(r.err.find("dftracer-analyze: --threads needs an integer from 1 to 1024, not '"), 0u) << v << "\n"
                                                                                                    << r.err;
  }
  EXPECT_EQ(run_cli(d, "summary --threads 1024 " + d.file("t.pfw")).status, 0);
}

TEST(ReaderThreads, ThreadsBeyondTheWorkCostNoMemory) {
  TempDir d;
  write_file(d.file("t.pfw.gz"), gzip_member(pfw_text({op_event(1, "function.mm", 10, 4)})));
  // Each reader thread used to allocate its 1 MiB inflate window up front:
  // --threads 1024 on one small file took over 1 GiB.
  CliRun r = run_cli(d, "summary --threads 1024 " + d.file("t.pfw.gz"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("function.mm"), std::string::npos) << r.out;
  EXPECT_LT(children_max_rss_kib(), 256 * 1024) << "KiB";
}

TEST(ReaderThreads, UsefulThreadsFollowTheCoresAndTheWork) {
  TempDir d;
  write_file(d.file("a.pfw"), pfw_text({op_event(1, "a", 10, 4)}));
  write_file(d.file("b.pfw"), pfw_text({op_event(1, "b", 10, 4)}));
  write_file(d.file("c.pfw"), pfw_text({op_event(1, "c", 10, 4)}));
  ReadOptions opt;
  EXPECT_EQ(useful_threads({d.file("a.pfw")}, 1000, opt), 1u);  // one small file is one piece
  const std::vector<std::string> three = {d.file("a.pfw"), d.file("b.pfw"), d.file("c.pfw")};
  EXPECT_EQ(useful_threads(three, 1, opt), 1u);
  EXPECT_EQ(useful_threads(three, 1000, opt), std::min(3u, default_threads()));
  opt.min_piece_bytes = 16;  // many pieces: then the cores bound it
  EXPECT_EQ(useful_threads(three, 1000, opt), default_threads());
  EXPECT_GE(default_threads(), 1u);
  EXPECT_LE(default_threads(), static_cast<unsigned>(kMaxThreads));
  EXPECT_EQ(checked_threads(1), 1u);
  EXPECT_EQ(checked_threads(kMaxThreads), static_cast<unsigned>(kMaxThreads));
  for (long long bad : {0LL, -1LL, kMaxThreads + 1, 4294967297LL}) EXPECT_THROW(checked_threads(bad), std::invalid_argument);
}

// A consumer that fails on its first line, as merge's does on a write error.
class ThrowingConsumer : public LineConsumer {
 public:
  DecodeStatus consume(std::string_view, size_t) override { throw std::runtime_error("consumer failed"); }
};

TEST(ReaderThreads, ExceptionOnAReaderThreadIsRethrownOnTheCaller) {
  TempDir d;
  std::vector<std::string> files;
  for (const char* n : {"a.pfw", "b.pfw", "c.pfw", "d.pfw"}) {
    write_file(d.file(n), pfw_text({op_event(1, "x", 10, 4), op_event(2, "y", 20, 4)}));
    files.push_back(d.file(n));
  }
  ReadOptions opt;
  opt.min_piece_bytes = 16;
  for (size_t threads : {1u, 2u, 4u}) {
    std::vector<ThrowingConsumer> cs(threads);
    std::vector<LineConsumer*> ptrs;
    for (auto& c : cs) ptrs.push_back(&c);
    try {
      read_traces(files, ptrs, opt);
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "consumer failed");
    }
  }
}

}  // namespace
}  // namespace dftracer::analyze::testing
