// The memory capture's analysis on hand-written traces: the summary's memory
// columns from the ops' args, the counter track's peaks per process and per
// step, and bad input (samples without a value, out of order, a cut file).
#include "memory.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "summary.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze {
namespace {

using testing::TempDir;

std::string op(const std::string& name, long long ts, long long dur, long long alloc, long long freed) {
  std::string a = "\"phase\":\"forward\"";
  if (alloc) a += ",\"alloc_bytes\":" + std::to_string(alloc);
  if (freed) a += ",\"free_bytes\":" + std::to_string(freed);
  return "{\"name\":\"" + name + "\",\"cat\":\"aten\",\"pid\":7,\"tid\":7,\"ts\":" + std::to_string(1'000'000 + ts) +
         ",\"dur\":" + std::to_string(dur) + ",\"ph\":\"X\",\"args\":{" + a + "}}";
}

std::string sample(long long ts, const std::string& value, const std::string& device = "cpu") {
  return "{\"name\":\"memory\",\"cat\":\"memory\",\"pid\":7,\"tid\":7,\"ts\":" + std::to_string(1'000'000 + ts) +
         ",\"ph\":\"C\",\"args\":{\"" + device + "\":" + value + "}}";
}

std::string region(long long ts, long long dur) {
  return "{\"name\":\"train_step\",\"cat\":\"app\",\"pid\":7,\"tid\":7,\"ts\":" + std::to_string(1'000'000 + ts) +
         ",\"dur\":" + std::to_string(dur) + ",\"ph\":\"X\"}";
}

TEST(Memory, SummaryHasAllocatedFreedAndNetColumnsOnlyWithMemoryArgs) {
  TempDir d;
  const std::string with = d.file("with.pfw"), without = d.file("without.pfw");
  testing::write_file(with, testing::pfw_text({op("aten::mm", 0, 10, 4096, 0), op("aten::mm", 20, 10, 4096, 1024),
                                               op("aten::add", 40, 10, 0, 512)}));
  testing::write_file(without, testing::pfw_text({op("aten::mm", 0, 10, 0, 0)}));
  Summary s = summarize({with}, parse_group_keys("name"), 0, 1);
  ASSERT_TRUE(s.has_memory);
  for (const SummaryRow& r : s.rows) {
    if (r.key[0] == "aten::mm") {
      EXPECT_EQ(r.alloc_bytes, 8192);
      EXPECT_EQ(r.free_bytes, 1024);
    } else {
      EXPECT_EQ(r.alloc_bytes, 0);
      EXPECT_EQ(r.free_bytes, 512);
    }
  }
  std::ostringstream json, table, csv;
  write_summary_json(json, s);
  write_summary_table(table, s);
  write_summary_csv(csv, s);
  EXPECT_NE(json.str().find("\"alloc_bytes\":8192,\"free_bytes\":1024,\"net_bytes\":7168"), std::string::npos);
  EXPECT_NE(table.str().find("8.00 KiB"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("-512 B"), std::string::npos) << table.str();
  EXPECT_EQ(csv.str().substr(0, csv.str().find('\n')),
            "name,count,self_us,total_us,mean_us,min_us,p50_us,p95_us,max_us,share,gflops,gbps,alloc_bytes,free_bytes,"
            "net_bytes");

  Summary n = summarize({without}, parse_group_keys("name"), 0, 1);
  EXPECT_FALSE(n.has_memory);
  std::ostringstream plain;
  write_summary_csv(plain, n);
  EXPECT_EQ(plain.str().find("alloc_bytes"), std::string::npos);
}

TEST(Memory, PeakPerProcessAndPerStep) {
  TempDir d;
  const std::string f = d.file("t.pfw");
  // Three steps of 100 us; the track's samples: the peak of step 1 (9000) at
  // 150; step 2 starts at the 5000 carried from step 1 and peaks at 6000.
  testing::write_file(f, testing::pfw_text({region(0, 90), sample(10, "1000"), sample(50, "3000"),
                                            region(100, 90), sample(120, "4000"), sample(150, "9000"),
                                            sample(180, "5000"), region(200, 90), sample(250, "6000"),
                                            sample(260, "2000", "cuda:0")}));
  MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.series.size(), 2u);
  EXPECT_EQ(m.series[0].device, "cpu");
  EXPECT_EQ(m.series[0].peak, 9000);
  EXPECT_EQ(m.series[0].peak_ts_ns, (1'000'000 + 150) * 1000LL);
  EXPECT_EQ(m.series[0].samples, 6u);
  EXPECT_EQ(m.series[0].first, 1000);
  EXPECT_EQ(m.series[0].last, 6000);
  EXPECT_EQ(m.series[1].device, "cuda:0");
  std::vector<std::pair<double, double>> cpu_steps;  // start, peak
  for (const MemoryStepPeak& s : m.steps)
    if (s.device == "cpu") cpu_steps.emplace_back(s.start_bytes, s.peak);
  EXPECT_EQ(cpu_steps, (std::vector<std::pair<double, double>>{{0, 3000}, {3000, 9000}, {5000, 6000}}));
  EXPECT_EQ(m.bad_samples, 0u);
  EXPECT_EQ(m.out_of_order, 0u);
}

TEST(Memory, WhatTheOpsAddedUpToThePeak) {
  TempDir d;
  const std::string f = d.file("t.pfw");
  // Step 1 (100..190) peaks at 170: mm added 4096 net and add 1024 before it;
  // relu, after the peak, and the op of step 0 are not counted.
  testing::write_file(f, testing::pfw_text({region(0, 90), op("aten::cat", 10, 5, 999, 0), sample(20, "1000"),
                                            region(100, 90), op("aten::mm", 110, 10, 8192, 4096),
                                            op("aten::add", 130, 10, 1024, 0), sample(170, "6120"),
                                            op("aten::relu", 175, 5, 64, 0), sample(185, "6184")}));
  MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.holders.size(), 1u);
  const MemoryPeakBreakdown& b = m.holders[0];
  EXPECT_EQ(b.peak, 6184);  // the last sample is the highest: the window ends there
  EXPECT_EQ(b.from_bytes, 1000);
  ASSERT_EQ(b.by_name.size(), 3u);
  EXPECT_EQ(b.by_name[0].key, "aten::mm");
  EXPECT_EQ(b.by_name[0].net, 4096);
  EXPECT_EQ(b.by_name[1].key, "aten::add");
  EXPECT_EQ(b.by_name[2].key, "aten::relu");
  EXPECT_EQ(b.ops_net, 4096 + 1024 + 64);
}

TEST(Memory, BadSamplesOutOfOrderAndACutFileAreCountedInOneLine) {
  TempDir d;
  const std::string f = d.file("cut.pfw");
  // A sample with a string value, one earlier than the one before it (used by
  // its time), and the file cut in the middle of its last sample.
  std::string text = testing::pfw_text({sample(10, "1000"), sample(30, "\"x\""), sample(50, "7000"),
                                        sample(20, "8000")},
                                       /*finalized=*/false);
  text += sample(60, "9999").substr(0, 40);
  testing::write_file(f, text);
  MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.series.size(), 1u);
  EXPECT_EQ(m.series[0].samples, 3u);
  EXPECT_EQ(m.series[0].peak, 8000);
  EXPECT_EQ(m.series[0].last, 7000);  // by time, not by position
  EXPECT_EQ(m.bad_samples, 1u);
  EXPECT_EQ(m.out_of_order, 1u);
  EXPECT_EQ(m.stats.malformed, 1u);
  EXPECT_EQ(memory_problems_line(m), "skipped 1 memory counter sample without a numeric value");

  auto r = testing::run_cli(d, "memory " + f);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("7.81 KiB"), std::string::npos) << r.out;  // the 8000 B peak
  EXPECT_NE(r.err.find("skipped 1 memory counter sample without a numeric value"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("malformed"), std::string::npos) << r.err;
}

TEST(Memory, TheReportHasAMemorySectionOnlyWithAMemoryTrack) {
  TempDir d;
  const std::string with = d.file("with.pfw"), without = d.file("without.pfw");
  testing::write_file(with, testing::pfw_text({region(0, 90), sample(10, "1000"), op("aten::mm", 20, 10, 4096, 0),
                                               sample(40, "5096"), region(100, 90), sample(150, "2000")}));
  testing::write_file(without, testing::pfw_text({region(0, 90), op("aten::mm", 20, 10, 0, 0)}));
  auto r = testing::run_cli(d, "report " + with + " -o " + d.file("with.html"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = testing::read_file(d.file("with.html"));
  EXPECT_NE(page.find("<div id=\"memory-section\">"), std::string::npos);
  EXPECT_NE(page.find("Memory peak per step"), std::string::npos);
  EXPECT_NE(page.find("<td>aten::mm</td><td>1</td><td>4.00 KiB</td>"), std::string::npos);
  r = testing::run_cli(d, "report " + without + " -o " + d.file("without.html"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(testing::read_file(d.file("without.html")).find("memory-section"), std::string::npos);
}

}  // namespace
}  // namespace dftracer::analyze
