// Inputs are regular files: a FIFO or a device in place of a trace or of its
// .idx never blocks the reader or makes it read without end.
#include <gtest/gtest.h>
#include <fstream>
#include <atomic>
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


// How many of this process's memory maps are of files under `dir`.
size_t maps_under(const std::string& dir) {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find(dir) != std::string::npos) ++n;
  return n;
}

// Counts the maps of the trace directory each time a piece begins.
class MapCounter : public LineConsumer {
 public:
  explicit MapCounter(std::string dir) : dir_(std::move(dir)) {}
  void begin_piece(size_t) override {
    size_t n = maps_under(dir_);
    size_t seen = max_maps.load();
    while (n > seen && !max_maps.compare_exchange_weak(seen, n)) {}
  }
  DecodeStatus consume(std::string_view, size_t) override {
    events.fetch_add(1);
    return DecodeStatus::Ok;
  }
  static std::atomic<size_t> max_maps, events;

 private:
  std::string dir_;
};
std::atomic<size_t> MapCounter::max_maps{0}, MapCounter::events{0};

// Thousands of files are read a few at a time: every file used to be mapped
// up front and held to the end (a run over more files than
// vm.max_map_count, 65,530, failed to map).
TEST(InputFiles, FilesAreMappedOnlyWhileTheirPiecesAreRead) {
  TempDir d;
  const int nfiles = 300;
  std::vector<std::string> paths;
  for (int i = 0; i < nfiles; ++i) {
    paths.push_back(d.file("t" + std::to_string(i) + (i % 2 ? ".pfw.gz" : ".pfw")));
    std::string text = pfw_text({op_event(0, "a", 1000, 1), op_event(1, "b", 1002, 1)});
    if (i % 2) write_gz(paths.back(), text, 1, /*index=*/true);
    else write_file(paths.back(), text);
  }
  // The same files named twice over (a directory and the list) are read once.
  std::vector<std::string> inputs = paths;
  inputs.push_back(d.path().string());
  std::vector<std::string> files = expand_inputs(inputs);
  ASSERT_EQ(files.size(), static_cast<size_t>(nfiles));
  MapCounter a(d.path().string()), b(d.path().string());
  ReadOptions opt;
  read_traces(files, {&a, &b}, opt);
  EXPECT_EQ(MapCounter::events.load(), 2u * nfiles);
  EXPECT_LE(MapCounter::max_maps.load(), 2u) << "maps held at once";
  EXPECT_EQ(maps_under(d.path().string()), 0u) << "maps left after reading";
}

}  // namespace
}  // namespace dftracer::analyze::testing
