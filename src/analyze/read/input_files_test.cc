// Inputs are regular files: a FIFO or a device in place of a trace or of its
// .idx never blocks the reader or makes it read without end.
#include <gtest/gtest.h>
#include <fstream>
#include <atomic>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include "calibration.hpp"
#include "cli_run.hpp"
#include "merge.hpp"
#include "output_file.hpp"

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

// A NUL inside a path: every system call would stop at it and read (or
// write) another file. Refused, as Python's open() refuses it.
TEST(InputFiles, PathWithANulByteIsRefusedNotTruncated) {
  TempDir d;
  std::multiset<std::string> names;
  std::string gz = gz_with_fifty_events(d, &names);
  const std::string with_nul = gz + std::string("\0junk", 5);
  try {
    expand_inputs({with_nul});
    ADD_FAILURE() << "read " << gz << " for a path with a NUL byte in it";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("embedded null byte in path: " + gz + "\\0junk"), std::string::npos)
        << e.what();
  }
  const std::string out = d.file("out.json");
  EXPECT_THROW(OutputFile(out + std::string("\0x", 2)), std::invalid_argument);
  EXPECT_FALSE(std::ifstream(out).good());
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


// Our own outputs in a trace directory: merge's file and the calibration are
// left out of a directory or a glob, with one line on stderr saying so (they
// used to be read: "skipped 1 event with wrongly typed fields", every event
// twice), and read when named.
TEST(InputFiles, OwnOutputsAreLeftOutOfDirectoriesAndGlobsButReadWhenNamed) {
  TempDir d;
  const std::string dir = d.path().string();
  std::vector<std::string> evs;
  for (int i = 0; i < 20; ++i) evs.push_back(op_event(i, "e" + std::to_string(i % 4), 1795280406425524.0 + i * 1000, 10));
  write_file(d.file("t.pfw"), pfw_text(evs));
  Calibration cal;
  cal.peak_gflops = 10;
  cal.peak_gbps = 5;
  cal.threads = 1;
  write_calibration(d.file(kCalibrationFileName), cal);  // as `calibrate DIR` writes it

  CliRun m = run_cli(d, "merge -o " + d.file("m.json.gz") + " " + dir + "/");
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.err.find("dftracer-analyze: left out the analyzer's own output: " + dir + "/" + kCalibrationFileName +
                       " (calibration file)\n"),
            std::string::npos)
      << m.err;
  EXPECT_EQ(m.err.find("skipped"), std::string::npos) << m.err;

  std::vector<LeftOutInput> left;
  EXPECT_EQ(expand_inputs({dir}, &left), std::vector<std::string>{d.file("t.pfw")});
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].path, d.file(kCalibrationFileName));
  EXPECT_STREQ(left[0].what, "calibration file");
  EXPECT_EQ(left[1].path, d.file("m.json.gz"));
  EXPECT_STREQ(left[1].what, "merge output");
  left.clear();
  EXPECT_EQ(expand_inputs({d.file("*.*")}, &left), std::vector<std::string>{d.file("t.pfw")});  // a glob too
  EXPECT_EQ(left.size(), 2u);
  // Named, a file is read, and not said to be left out even when its directory is named too.
  left.clear();
  EXPECT_EQ(expand_inputs({dir, d.file("m.json.gz")}, &left),
            (std::vector<std::string>{d.file("t.pfw"), d.file("m.json.gz")}));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_STREQ(left[0].what, "calibration file");

  auto summary_json = [&](const std::string& args, CliRun* run) {
    *run = run_cli(d, "summary --format json " + args);
    EXPECT_EQ(run->status, 0) << run->err;
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    EXPECT_EQ(p.parse(simdjson::padded_string(run->out)).get(doc), simdjson::SUCCESS) << run->out;
    return std::make_pair(uint64_t(doc["complete_events"]), double(doc["span_us"]));
  };
  CliRun s;
  auto whole = summary_json(dir, &s);
  EXPECT_EQ(whole.first, 20u);  // not 40: the merged copy is not read again
  EXPECT_DOUBLE_EQ(whole.second, 19010);
  EXPECT_EQ(s.err,
            "dftracer-analyze: left out the analyzer's own outputs: " + d.file(kCalibrationFileName) +
                " (calibration file), " + d.file("m.json.gz") + " (merge output; name it to read it)\n");
  // The merged file named: its own events, on its inputs' clock (not a 57-year span).
  auto merged = summary_json(d.file("m.json.gz"), &s);
  EXPECT_EQ(merged.first, 20u);
  EXPECT_DOUBLE_EQ(merged.second, 19010);
  EXPECT_TRUE(s.err.empty()) << s.err;
}

TEST(InputFiles, OwnOutputsAreKnownByTheirFirstBytesOnly) {
  EXPECT_STREQ(own_output_kind("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dftracer_merge\":1,\"ts_base_us\":5},"
                               "\"traceEvents\":["),
               "merge output");
  // merge's opening before it carried the marker.
  EXPECT_STREQ(own_output_kind("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"ts_base_us\":1795280406000000},"
                               "\"traceEvents\":[\n{"),
               "merge output");
  EXPECT_STREQ(own_output_kind("\xEF\xBB\xBF {\"dftracer_calibration\":1,\"peak_gflops\":2"), "calibration file");
  for (const char* trace : {"[\n{\"id\":0,\"name\":\"start\"", "{\"schemaVersion\": 1,\n\"traceEvents\": [",
                            "{\"traceEvents\":[{\"name\":\"dftracer_merge\",\"ph\":\"M\"}]}", "", "garbage"}) {
    SCOPED_TRACE(trace);
    EXPECT_EQ(own_output_kind(trace), nullptr);
  }
  EXPECT_EQ(merged_ts_base_us("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dftracer_merge\":1,\"ts_base_us\":"
                              "1795280406000000},\"traceEvents\":["),
            1795280406000000);
  EXPECT_EQ(merged_ts_base_us("{\"traceEvents\":[{\"otherData\":{\"ts_base_us\":5}}]}"), 0);
}

}  // namespace
}  // namespace dftracer::analyze::testing
