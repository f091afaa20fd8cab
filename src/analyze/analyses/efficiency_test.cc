// Efficiency on hand-made traces: known FLOPs, bytes and durations give exact
// GFLOP/s, GB/s, arithmetic intensity and fraction of a given peak, per op
// and per module; the calibration is found beside the trace before the
// user's cache, a bad one is one clear error; `calibrate` measures and writes
// a file `summary --efficiency` then reads.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cmath>
#include <cstdlib>

#include "calibration.hpp"
#include "cli_run.hpp"
#include "efficiency.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

Calibration peaks(double gflops, double gbps) {
  Calibration c;
  c.peak_gflops = gflops;
  c.peak_gbps = gbps;
  return c;
}

TEST(Efficiency, FiguresFromSumsAreExact) {
  const Calibration p = peaks(2000, 400);
  // 1e9 FLOPs and 1e7 bytes in 1 ms: 1000 GFLOP/s, 10 GB/s, 100 FLOP/B; the
  // roof at 100 FLOP/B is min(2000, 100 x 400) = 2000: half of it.
  EfficiencyFigures f = efficiency_figures(1e9, 1000000, 1e7, 1000000, &p);
  EXPECT_DOUBLE_EQ(f.gflops, 1000);
  EXPECT_DOUBLE_EQ(f.gbps, 10);
  EXPECT_DOUBLE_EQ(f.ai, 100);
  EXPECT_DOUBLE_EQ(f.attainable_gflops, 2000);
  EXPECT_DOUBLE_EQ(f.peak_frac, 0.5);
  EXPECT_STREQ(f.bound, "compute");
  // Memory bound: 1e6 FLOPs, 1e8 bytes in 1 ms: 1 GFLOP/s at 0.01 FLOP/B,
  // roof 0.01 x 400 = 4 GFLOP/s: a quarter of it.
  f = efficiency_figures(1e6, 1000000, 1e8, 1000000, &p);
  EXPECT_DOUBLE_EQ(f.ai, 0.01);
  EXPECT_DOUBLE_EQ(f.attainable_gflops, 4);
  EXPECT_DOUBLE_EQ(f.peak_frac, 0.25);
  EXPECT_STREQ(f.bound, "memory");
  // Bytes only: 200 GB/s of a 400 GB/s peak.
  f = efficiency_figures(0, 0, 2e8, 1000000, &p);
  EXPECT_TRUE(std::isnan(f.gflops));
  EXPECT_DOUBLE_EQ(f.gbps, 200);
  EXPECT_DOUBLE_EQ(f.peak_frac, 0.5);
  EXPECT_STREQ(f.bound, "memory");
  // FLOPs only: against the compute peak.
  f = efficiency_figures(5e8, 1000000, 0, 0, &p);
  EXPECT_TRUE(std::isnan(f.ai));
  EXPECT_DOUBLE_EQ(f.peak_frac, 0.25);
  // No calibration: achieved rates and intensity, no fraction.
  f = efficiency_figures(1e9, 1000000, 1e7, 1000000, nullptr);
  EXPECT_DOUBLE_EQ(f.gflops, 1000);
  EXPECT_DOUBLE_EQ(f.ai, 100);
  EXPECT_TRUE(std::isnan(f.attainable_gflops));
  EXPECT_TRUE(std::isnan(f.peak_frac));
}

// Two mm events of 100 us with 2e7 FLOPs and 1e6 bytes each (200 GFLOP/s, 10
// GB/s, 20 FLOP/B), one add of 50 us with 1e5 FLOPs and 1.2e6 bytes, and a
// region without either (not a row). Modules: fc holds one mm and the add.
std::string efficiency_trace() {
  return pfw_text({
      op_event(1, "mm", 0, 100, "forward", "model.fc", 2e7, 1e6),
      op_event(2, "mm", 100, 100, "forward", "model.proj", 2e7, 1e6),
      op_event(3, "add", 200, 50, "forward", "model.fc", 1e5, 1.2e6),
      op_event(4, "train_step", 0, 300, "forward", ""),
  });
}

const EfficiencyRow& row(const Efficiency& e, const std::string& key) {
  for (const EfficiencyRow& r : e.rows)
    if (r.key[0] == key) return r;
  throw std::runtime_error("no row " + key);
}

TEST(Efficiency, PerOpAndPerModuleFromATraceWithTheCalibrationBesideIt) {
  TempDir d;
  write_file(d.file("t.pfw"), efficiency_trace());
  write_calibration(d.file(kCalibrationFileName), peaks(400, 100));
  Efficiency e = efficiency({d.file("t.pfw")}, parse_group_keys("name"), 0, 2, {}, "");
  ASSERT_TRUE(e.calibration.valid());
  EXPECT_EQ(e.calibration.path, d.file(kCalibrationFileName));
  ASSERT_EQ(e.rows.size(), 2u);  // the region declared neither
  EXPECT_EQ(e.rows[0].key[0], "mm");  // by self time
  const EfficiencyRow& mm = row(e, "mm");
  EXPECT_EQ(mm.count, 2u);
  EXPECT_DOUBLE_EQ(mm.flops, 4e7);
  EXPECT_DOUBLE_EQ(mm.bytes, 2e6);
  EXPECT_DOUBLE_EQ(mm.f.gflops, 200);
  EXPECT_DOUBLE_EQ(mm.f.gbps, 10);
  EXPECT_DOUBLE_EQ(mm.f.ai, 20);
  EXPECT_DOUBLE_EQ(mm.f.attainable_gflops, 400);  // min(400, 20 x 100)
  EXPECT_DOUBLE_EQ(mm.f.peak_frac, 0.5);
  const EfficiencyRow& add = row(e, "add");  // 2 GFLOP/s at 1/12 FLOP/B: roof 8.33
  EXPECT_DOUBLE_EQ(add.f.gflops, 2);
  EXPECT_DOUBLE_EQ(add.f.gbps, 24);
  EXPECT_DOUBLE_EQ(add.f.peak_frac, 2 / (1e5 / 1.2e6 * 100));
  EXPECT_STREQ(add.f.bound, "memory");

  Efficiency m = efficiency({d.file("t.pfw")}, parse_group_keys("module"), 0, 1, {}, "");
  const EfficiencyRow& fc = row(m, "model.fc");  // mm + add: 2.01e7 FLOPs in 150 us
  EXPECT_DOUBLE_EQ(fc.flops, 2.01e7);
  EXPECT_DOUBLE_EQ(fc.f.gflops, 2.01e7 / 150000);
  EXPECT_DOUBLE_EQ(fc.f.ai, 2.01e7 / 2.2e6);
}

TEST(Efficiency, CalibrationBesideTheTraceWinsOverTheCacheAndABadOneIsOneLine) {
  TempDir d;
  write_file(d.file("t.pfw"), efficiency_trace());
  const std::string cache = d.file("cache");
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  EXPECT_EQ(default_calibration_path(), cache + "/dftracer/calibration.json");
  EXPECT_EQ(find_calibration({d.file("t.pfw")}, ""), "");  // none anywhere
  write_calibration(default_calibration_path(), peaks(1000, 50));  // creates cache/dftracer/
  EXPECT_EQ(find_calibration({d.file("t.pfw")}, ""), default_calibration_path());
  write_calibration(d.file(kCalibrationFileName), peaks(400, 100));
  EXPECT_EQ(find_calibration({d.file("t.pfw")}, ""), d.file(kCalibrationFileName));
  EXPECT_THROW(find_calibration({d.file("t.pfw")}, d.file("missing.json")), InputError);
  write_file(d.file("bad.json"), "{\"peak_gflops\": -1, \"peak_gbps\": 3}");
  try {
    read_calibration(d.file("bad.json"));
    FAIL() << "a negative peak was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(d.file("bad.json")), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  write_file(d.file("garbage.json"), "not json");
  EXPECT_THROW(read_calibration(d.file("garbage.json")), InputError);
  ::unsetenv("XDG_CACHE_HOME");
}

// The command end to end: calibrate measures and writes beside the trace,
// summary --efficiency reads it back (JSON), a bad --calibration is exit 2.
TEST(Efficiency, CalibrateThenSummaryEfficiencyOnTheCommandLine) {
  TempDir d;
  write_file(d.file("t.pfw"), efficiency_trace());
  // --force: a shared test machine is often loaded; --no-torch: our kernels are enough here;
  // a trailing slash: one slash in the path.
  CliRun c = run_cli(d, "calibrate --force --no-torch " + d.path().string() + "/");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("GFLOP/s"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("\nwrote " + d.file(kCalibrationFileName) + "\n"), std::string::npos) << c.out;
  Calibration cal = read_calibration(d.file(kCalibrationFileName));
  EXPECT_GT(cal.peak_gflops, 0.5);  // any CPU of this century
  EXPECT_GT(cal.peak_gbps, 0.5);
  EXPECT_GE(cal.threads, 1u);
  CliRun s = run_cli(d, "summary --efficiency --format json " + d.file("t.pfw"));
  ASSERT_EQ(s.status, 0) << s.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(s.out);
  EXPECT_DOUBLE_EQ(double(doc["calibration"]["peak_gflops"]), cal.peak_gflops);
  simdjson::dom::element first = doc["rows"].at(0);
  EXPECT_EQ(std::string_view(first["name"]), "mm");
  EXPECT_DOUBLE_EQ(double(first["gflops"]), 200);
  EXPECT_DOUBLE_EQ(double(first["peak_frac"]), 200 / std::min(cal.peak_gflops, 20 * cal.peak_gbps));
  CliRun bad = run_cli(d, "summary --efficiency --calibration " + d.file("nope.json") + " " + d.file("t.pfw"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("nope.json"), std::string::npos) << bad.err;
  CliRun wrong = run_cli(d, "summary --by step --efficiency " + d.file("t.pfw"));
  EXPECT_EQ(wrong.status, 2);
}

// A group above its roof is flagged in every format, never a plain figure:
// mm runs at 200 GFLOP/s against a 100 GFLOP/s roof.
TEST(Efficiency, AboveThePeakIsFlaggedAsACalibrationProblem) {
  TempDir d;
  write_file(d.file("t.pfw"), efficiency_trace());
  write_calibration(d.file(kCalibrationFileName), peaks(100, 100));
  Efficiency e = efficiency({d.file("t.pfw")}, parse_group_keys("name"), 0, 1, {}, "");
  EXPECT_TRUE(row(e, "mm").f.above_peak);
  EXPECT_DOUBLE_EQ(row(e, "mm").f.peak_frac, 2);
  EXPECT_FALSE(row(e, "add").f.above_peak);  // 2 of 8.33 GFLOP/s
  EXPECT_EQ(above_peak_rows(e), 1u);
  const std::string table = efficiency_text(e, "table");
  EXPECT_NE(table.find("200.0%!"), std::string::npos) << table;
  EXPECT_EQ(table.find("200.0% "), std::string::npos) << table;
  EXPECT_NE(table.find("1 group ! above 100 % of the peak"), std::string::npos) << table;
  EXPECT_NE(table.find("calibration is too low"), std::string::npos) << table;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(efficiency_text(e, "json"));
  EXPECT_TRUE(bool(doc["rows"].at(0)["above_peak"]));
  EXPECT_FALSE(bool(doc["rows"].at(1)["above_peak"]));
  EXPECT_NE(std::string_view(doc["above_peak"]).find("re-run 'dftracer-analyze calibrate'"), std::string::npos);
  const std::string csv = efficiency_text(e, "csv");
  EXPECT_NE(csv.find(",above_peak,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",true,compute"), std::string::npos) << csv;
}

// The peaks are the best figure at any thread count: a 1-thread figure
// above every N-thread one raises the peak (and says so), torch's kernels
// win where they are faster, and the kernel that gave each peak is named.
TEST(Calibration, PeaksAreTheBestFigureAndNeverBelowTheOneThreadOne) {
  Calibration c;
  c.threads = 2;
  c.figures = {{"ours", 1, 100, 0}, {"ours", 2, 80, 0}, {"torch.mm", 1, 150, 0}, {"torch.mm", 2, 140, 0},
               {"triad", 1, 0, 10}, {"triad", 2, 0, 14}};
  take_peaks(c);
  EXPECT_DOUBLE_EQ(c.peak_gflops, 150);
  EXPECT_EQ(c.gflops_kernel, "torch.mm, 1 thread");
  EXPECT_DOUBLE_EQ(c.gflops_1thread, 150);
  EXPECT_DOUBLE_EQ(c.peak_gbps, 14);
  EXPECT_EQ(c.gbps_kernel, "triad, 2 threads");
  EXPECT_DOUBLE_EQ(c.gbps_1thread, 10);
  EXPECT_NE(c.note.find("GFLOP/s peak is a 1-thread figure"), std::string::npos) << c.note;
  c.figures.push_back({"torch.mm", 2, 0.5, 0});
  c.figures.push_back({"torch.mm 2048", 2, 290, 0});
  take_peaks(c);
  EXPECT_DOUBLE_EQ(c.peak_gflops, 290);
  EXPECT_EQ(c.gflops_kernel, "torch.mm 2048, 2 threads");
  EXPECT_TRUE(c.note.empty()) << c.note;
  // The file keeps them.
  TempDir d;
  c.path = d.file("c.json");
  write_calibration(c.path, c);
  Calibration back = read_calibration(c.path);
  EXPECT_DOUBLE_EQ(back.peak_gflops, 290);
  EXPECT_EQ(back.gflops_kernel, "torch.mm 2048, 2 threads");
}

// The load reader on a fake /proc/loadavg: runnable tasks beyond the CPUs
// calibrate leaves free make the machine loaded; the reader itself is not
// counted.
TEST(Calibration, LoadAboveTheFreeCoresIsSeen) {
  TempDir d;
  write_file(d.file("busy"), "9.50 3.00 2.00 65/400 12345\n");
  write_file(d.file("quiet"), "0.50 0.40 0.30 1/400 12345\n");
  ::setenv("DFTRACER_LOADAVG", d.file("busy").c_str(), 1);
  LoadCheck busy = check_load(1, 2);
  ::setenv("DFTRACER_LOADAVG", d.file("quiet").c_str(), 1);
  LoadCheck quiet = check_load(1, 2);
  ::unsetenv("DFTRACER_LOADAVG");
  EXPECT_TRUE(busy.loaded);
  EXPECT_DOUBLE_EQ(busy.other_runnable, 64);
  EXPECT_DOUBLE_EQ(busy.load1, 9.5);
  EXPECT_NE(busy.line().find("64.0 other runnable tasks"), std::string::npos) << busy.line();
  EXPECT_FALSE(quiet.loaded);
  EXPECT_DOUBLE_EQ(quiet.other_runnable, 0);
}

// A real eager trace (the LibTorch observer's ops, no FLOPs or bytes): the
// empty table says why in its last line.
TEST(Efficiency, AnEagerTraceSaysWhyItHasNoRows) {
  const std::vector<std::string> files = {std::string(DFTRACER_TEST_DATA_DIR) +
                                          "/steps/eager-infmode-equal-spans.pfw.gz"};
  const Efficiency e = efficiency(files, parse_group_keys("name"), 0, 1, ReadOptions{}, "", "self");
  ASSERT_TRUE(e.rows.empty());
  const std::string text = efficiency_text(e, "table");
  EXPECT_NE(text.find("0 groups with FLOPs or bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("an eager op only when traced with FLOPs"), std::string::npos) << text;
}

}  // namespace
}  // namespace dftracer::analyze::testing
