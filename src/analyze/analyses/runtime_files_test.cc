// I/O on the runtime's own files (imports, the installation's directories)
// is "other" work, I/O on the program's files "data" -- in the steps' thread
// and wall time, the summary's category key and `summary --by category` --
// whichever gzip member, reader thread or file order holds the FH records
// that name the files.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "io_view.hpp"
#include "runtime_files.hpp"
#include "steps.hpp"
#include "summary.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

enum Cat { kCompile, kForward, kBackward, kOptimizer, kComm, kData, kGc, kCheckpoint, kOther };  // kStepCategories
static_assert(kOther == kNumStepCategories - 1 && kCheckpoint == step_category_index("checkpoint"));

std::string x(const std::string& name, const std::string& cat, long long ts, long long dur,
              const std::string& args = "") {
  std::string s = "{\"id\":1,\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":10,\"tid\":10,\"ts\":" +
                  std::to_string(1'000'000 + ts) + ",\"dur\":" + std::to_string(dur) + ",\"ph\":\"X\"";
  if (!args.empty()) s += ",\"args\":{" + args + "}";
  return s + "}\n";
}

std::string fh(const std::string& path, const std::string& value) {
  return "{\"id\":0,\"name\":\"FH\",\"cat\":\"dftracer\",\"pid\":10,\"tid\":10,\"ph\":\"M\",\"args\":{\"name\":\"" +
         path + "\",\"value\":" + value + "}}\n";
}

// Imports before the loop (a module file, the installation's prefix stat'ed
// by the import system: runtime by the prefix its lib/python3.11 names), a
// lazy import in step 1, and a data read in every step. The FH records come
// last, after every event that uses them, as DFTracer numbers them (numeric
// fhash) for the module file and as we write them (hex strings) for the rest.
std::string trace() {
  std::string t;
  t += x("open64", "POSIX", 0, 40, "\"fhash\":1001");                   // /opt/py/lib/.../torch/__init__.py
  t += x("read", "POSIX", 50, 30, "\"fhash\":1001,\"ret\":4096");
  t += x("stat64", "POSIX", 90, 10, "\"fhash\":\"00000000000000cc\"");  // /opt/py itself
  for (int s = 0; s < 3; ++s) {
    const long long at = 200 + 100 * s;
    t += x("aten::mm", "op", at + 5, 30, "\"phase\":\"forward\"");
    t += x("read", "POSIX", at + 40, 20, "\"fhash\":\"00000000000000bb\",\"ret\":65536");  // data
    if (s == 1) t += x("open64", "POSIX", at + 70, 15, "\"fhash\":1001");                  // a lazy import
    t += x("train_step", "app", at, 100);
  }
  t += fh("/opt/py/lib/python3.11/site-packages/torch/__init__.py", "1001");
  t += fh("/opt/py", "\"00000000000000cc\"");
  t += fh("/data/train.bin", "\"00000000000000bb\"");
  return t;
}

// The same trace as one .pfw, and as a .pfw.gz of one member per line read
// by three threads (FH records in members of their own, read by other threads).
struct Inputs {
  TempDir dir;
  std::string pfw = dir.file("t.pfw"), gz = dir.file("t.pfw.gz");
  Inputs() {
    write_file(pfw, trace());
    write_gz(gz, trace(), 1, true);
  }
};

ReadOptions small_pieces() {
  ReadOptions ro;
  ro.min_piece_bytes = 1;
  return ro;
}

void expect_steps(const StepReport& r) {
  ASSERT_EQ(r.rows.size(), 3u);
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(r.rows[s].by_category_us[kData], 20) << "step " << s;
    EXPECT_EQ(r.rows[s].wall_us[kData], 20) << "step " << s;
    EXPECT_EQ(r.rows[s].by_category_us[kForward], 30) << "step " << s;
  }
  // The lazy import is step 1's other time, as its region's own time is.
  EXPECT_EQ(r.rows[1].by_category_us[kOther], 100 - 30 - 20 - 15 + 15);
  EXPECT_EQ(r.rows[0].by_category_us[kOther], 100 - 30 - 20);
  EXPECT_EQ(r.rows[1].wall_us[kOther], 100 - 30 - 20);  // the region holds the import
  // Before the loop: the imports and the prefix's stat, other; no data.
  EXPECT_EQ(r.outside_us[kData], 0);
  EXPECT_EQ(r.outside_us[kOther], 40 + 30 + 10);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].wall_us[kData], 3 * 20);
  EXPECT_EQ(r.runs[0].wall_us[kOther], 40 + 30 + 10 + 3 * (100 - 30 - 20));
  ASSERT_NE(r.runtime_files, nullptr);
  EXPECT_TRUE(r.runtime_files->contains("1001"));
  EXPECT_TRUE(r.runtime_files->contains("00000000000000cc"));
  EXPECT_FALSE(r.runtime_files->contains("00000000000000bb"));
}

TEST(RuntimeFiles, ImportIoIsOtherAndDataIoIsDataInEveryStepAndTheRun) {
  Inputs in;
  expect_steps(analyze_steps({in.pfw}, 1));
  expect_steps(analyze_steps({in.gz}, 3, small_pieces()));
}

TEST(RuntimeFiles, ASetGivenByAnEarlierReadGivesTheSameSteps) {
  Inputs in;
  ReadOptions ro = small_pieces();
  ro.runtime_files = std::make_shared<RuntimeFiles>(scan_file_names({in.gz}, 3, ro));
  expect_steps(analyze_steps({in.gz}, 3, ro));
}

void expect_by_category(const Summary& s) {
  double data = -1, other = -1;
  uint64_t data_n = 0, other_n = 0;
  for (const SummaryRow& r : s.rows) {
    if (r.key[0] == "data") data = r.self_us, data_n = r.count;
    if (r.key[0] == "other") other = r.self_us, other_n = r.count;
  }
  EXPECT_EQ(data, 3 * 20);
  EXPECT_EQ(data_n, 3u);
  EXPECT_EQ(other, 40 + 30 + 10 + 15 + 3 * (100 - 30 - 20) - 15);
  EXPECT_EQ(other_n, 4u + 3u);  // three imports and the stat, three regions
}

TEST(RuntimeFiles, TheSummarysCategoryKeyScansTheFileNamesItself) {
  Inputs in;
  expect_by_category(summarize({in.pfw}, parse_group_keys("category"), 0, 1));
  expect_by_category(summarize({in.gz}, parse_group_keys("category"), 0, 3, small_pieces()));
  // A composite key and args.fhash beside the category read one capture of it.
  Summary s = summarize({in.gz}, parse_group_keys("args.fhash,category"), 0, 2, small_pieces());
  for (const SummaryRow& r : s.rows) {
    if (r.key[0] == "00000000000000bb") EXPECT_EQ(r.key[1], "data");
    if (r.key[0] == "1001" || r.key[0] == "00000000000000cc") EXPECT_EQ(r.key[1], "other");
  }
}

TEST(RuntimeFiles, TheFileNameScanFindsEveryRecordAndTheRuleIsTheIoViews) {
  Inputs in;
  const FileNames names = scan_file_names({in.gz}, 3, small_pieces());
  ASSERT_EQ(names.paths().size(), 3u);
  EXPECT_EQ(names.paths().at("00000000000000cc"), "/opt/py");
  const RuntimeFiles rt(names);
  EXPECT_EQ(rt.fhashes().size(), 2u);
  const IoView v = io_view({in.gz}, IoOptions{}, 3, small_pieces());
  EXPECT_EQ(v.file_kind.at("/opt/py"), IoFileKind::Runtime);
  EXPECT_EQ(v.file_kind.at("/data/train.bin"), IoFileKind::Data);
  EXPECT_EQ(v.data.time_ns, 3 * 20 * 1000);
}

TEST(RuntimeFiles, TheCommandsCompileVsRunPutsImportsInOther) {
  Inputs in;
  TempDir d;
  const CliRun r = run_cli(d, "summary --by category --format csv --threads 3 " + in.gz);
  ASSERT_EQ(r.status, 0) << r.err;
  // category,wall_us,wall_share,thread_us,count
  EXPECT_NE(r.out.find("\ndata,60,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",60,3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nother,230,"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dftracer::analyze::testing
