// The memory capture's analysis on hand-written traces: the summary's memory
// columns from the ops' args, the counter track's peaks per process and per
// step, and bad input (samples without a value, out of order, a cut file).
#include "memory.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>
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

// A per-block event of the memory capture ("alloc" / "free").
std::string block(bool alloc, long long ts, unsigned long long addr, long long size, long long total,
                  const std::string& op_name = "", int tid = 7) {
  std::string a = "\"addr\":" + std::to_string(addr) + ",\"size\":" + std::to_string(size) +
                  ",\"total\":" + std::to_string(total);
  if (!op_name.empty()) a += ",\"op\":\"" + op_name + "\"";
  return std::string("{\"name\":\"") + (alloc ? "alloc" : "free") + "\",\"cat\":\"memory\",\"pid\":7,\"tid\":" +
         std::to_string(tid) + ",\"ts\":" + std::to_string(1'000'000 + ts) + ",\"ph\":\"i\",\"s\":\"t\",\"args\":{" +
         a + "}}";
}

std::string module_op(const std::string& name, long long ts, long long dur, const std::string& module, int tid = 7) {
  return "{\"name\":\"" + name + "\",\"cat\":\"dynamo\",\"pid\":7,\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + std::to_string(1'000'000 + ts) + ",\"dur\":" + std::to_string(dur) +
         ",\"ph\":\"X\",\"args\":{\"module\":\"" + module + "\",\"phase\":\"forward\"}}";
}

const PeakHolder* row(const std::vector<PeakHolder>& rows, const std::string& key) {
  for (const PeakHolder& h : rows)
    if (h.key == key) return &h;
  return nullptr;
}

// The blocks live at the peak event (the highest total), by op, module,
// phase and step, plus what was live before the trace, sum to the peak. A
// block freed on another thread is freed; an event in the same microsecond
// after the peak on the peak's thread is after it.
TEST(Memory, TheBlocksLiveAtThePeakSumToIt) {
  TempDir d;
  const std::string f = d.file("t.pfw");
  // 500 B live before the trace (the first total is 1500 for 1000 B).
  testing::write_file(f, testing::pfw_text({
      region(0, 90), block(true, 10, 1, 1000, 1500, "aten::cat"), sample(10, "1500"),
      region(100, 90),
      block(true, 112, 2, 4096, 5596, "aten::mm"), block(true, 114, 3, 2048, 7644, "aten::mm"),
      block(false, 116, 3, 2048, 5596, "", 8),  // freed on another thread
      module_op("function.mm", 110, 10, "encoder.0"),
      block(true, 130, 4, 3000, 8596, "aten::add", 8), sample(130, "8596"),  // the peak
      block(false, 130, 1, 1000, 7596, "", 8),  // the same microsecond, after the peak on its thread
      block(false, 140, 2, 4096, 3500, "", 8),
      block(true, 150, 5, 64, 3564, "aten::relu")}));
  MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.peaks.size(), 1u);
  const PeakComposition& c = m.peaks[0];
  EXPECT_EQ(c.peak, 8596);
  EXPECT_EQ(c.traced, 1000 + 4096 + 3000);
  EXPECT_EQ(c.before_trace, 500);
  EXPECT_EQ(c.blocks, 3u);
  ASSERT_NE(row(c.by_op, "aten::mm"), nullptr);
  EXPECT_EQ(row(c.by_op, "aten::mm")->bytes, 4096);
  EXPECT_EQ(row(c.by_op, "aten::add")->bytes, 3000);
  EXPECT_EQ(row(c.by_op, "aten::cat")->bytes, 1000);
  EXPECT_EQ(row(c.by_module, "encoder.0")->bytes, 4096);
  EXPECT_EQ(row(c.by_module, "")->bytes, 4000);
  EXPECT_EQ(row(c.by_phase, "forward")->bytes, 4096);
  EXPECT_EQ(row(c.by_step, "step 0 (train_step)")->bytes, 1000);
  EXPECT_EQ(row(c.by_step, "step 1 (train_step)")->bytes, 4096 + 3000);
  EXPECT_EQ(m.blocks.never_freed, 2u);  // blocks 4 and 5
  EXPECT_EQ(m.blocks.free_without_alloc + m.blocks.alloc_over_live + m.blocks.late + m.blocks.bad, 0u);
  EXPECT_EQ(memory_problems_line(m), "");
}

// A free as the capture writes it: its address alone (older traces: block(false, ...) with size and total).
std::string free_block(long long ts, unsigned long long addr, int tid = 7) {
  return "{\"name\":\"free\",\"cat\":\"memory\",\"pid\":7,\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + std::to_string(1'000'000 + ts) + ",\"ph\":\"i\",\"s\":\"t\",\"args\":{\"addr\":" +
         std::to_string(addr) + "}}";
}

// The same peak, blocks and rows of what holds it.
void expect_same_composition(const PeakComposition& c, const PeakComposition& old) {
  EXPECT_EQ(std::tie(c.peak, c.peak_ts_ns, c.traced, c.before_trace, c.blocks),
            std::tie(old.peak, old.peak_ts_ns, old.traced, old.before_trace, old.blocks));
  for (const PeakHolderList& l : kPeakHolderLists) {
    ASSERT_EQ((c.*l.rows).size(), (old.*l.rows).size()) << l.title;
    for (size_t i = 0; i < (c.*l.rows).size(); ++i)
      EXPECT_EQ(std::tie((c.*l.rows)[i].key, (c.*l.rows)[i].bytes), std::tie((old.*l.rows)[i].key, (old.*l.rows)[i].bytes));
  }
}

// Frees written with their address alone replay as frees with their size
// and total (older traces) did: the same peak and what holds it, in one
// file of each kind and in one mixing both. A series of such frees alone
// has no peak event (no total) but its frees are still counted.
TEST(Memory, FreesWithTheirAddressAloneReadAsFreesWithSizeAndTotal) {
  TempDir d;
  auto trace = [](bool old_frees, bool mixed) {
    auto fr = [&](long long ts, unsigned long long addr, long long size, long long total, int tid) {
      return old_frees || (mixed && addr == 3) ? block(false, ts, addr, size, total, "", tid) : free_block(ts, addr, tid);
    };
    return testing::pfw_text({
        region(0, 90), block(true, 10, 1, 1000, 1500, "aten::cat"), sample(10, "1500"),
        region(100, 90),
        block(true, 112, 2, 4096, 5596, "aten::mm"), block(true, 114, 3, 2048, 7644, "aten::mm"),
        fr(116, 3, 2048, 5596, 8),
        module_op("function.mm", 110, 10, "encoder.0"),
        block(true, 130, 4, 3000, 8596, "aten::add", 8), sample(130, "8596"),
        fr(130, 1, 1000, 7596, 8), fr(140, 2, 4096, 3500, 8),
        block(true, 150, 5, 64, 3564, "aten::relu")});
  };
  std::vector<MemoryPeaks> runs;
  for (auto [old_frees, mixed] : {std::pair{true, false}, {false, false}, {false, true}}) {
    const std::string f = d.file(std::string("t") + std::to_string(runs.size()) + ".pfw");
    testing::write_file(f, trace(old_frees, mixed));
    runs.push_back(memory_peaks({f}));
  }
  ASSERT_EQ(runs[0].peaks.size(), 1u);
  EXPECT_EQ(runs[0].peaks[0].peak, 8596);  // TheBlocksLiveAtThePeakSumToIt's trace, older frees
  EXPECT_EQ(runs[0].peaks[0].traced, 1000 + 4096 + 3000);
  for (const MemoryPeaks& m : runs) {
    ASSERT_EQ(m.peaks.size(), 1u);
    expect_same_composition(m.peaks[0], runs[0].peaks[0]);
    EXPECT_EQ(m.blocks.never_freed, 2u);
    EXPECT_EQ(m.blocks.free_without_alloc + m.blocks.alloc_over_live + m.blocks.late + m.blocks.bad, 0u);
  }

  // Frees alone: no composition, each counted; a free without a numeric address, an
  // allocation without its size, and one with a total that is not a number, are bad.
  const std::string f = d.file("frees.pfw");
  testing::write_file(
      f, testing::pfw_text({sample(1, "0"), free_block(5, 77), free_block(6, 78),
                            "{\"name\":\"free\",\"cat\":\"memory\",\"pid\":7,\"tid\":7,\"ts\":1000007,\"ph\":\"i\","
                            "\"args\":{\"addr\":\"x\"}}",
                            "{\"name\":\"alloc\",\"cat\":\"memory\",\"pid\":7,\"tid\":7,\"ts\":1000008,\"ph\":\"i\","
                            "\"args\":{\"addr\":9,\"total\":8}}",
                            "{\"name\":\"alloc\",\"cat\":\"memory\",\"pid\":7,\"tid\":7,\"ts\":1000009,\"ph\":\"i\","
                            "\"args\":{\"addr\":10,\"size\":8,\"total\":\"x\"}}"}));
  MemoryPeaks m = memory_peaks({f});
  EXPECT_TRUE(m.peaks.empty());
  EXPECT_EQ(m.blocks.free_without_alloc, 2u);
  EXPECT_EQ(m.blocks.bad, 3u);
}

// A block event as the capture writes it: no "id", no "s", and an
// allocation's total only when it is a new high for its thread (-1: none).
std::string compact_block(bool alloc, long long ts, unsigned long long addr, long long size, long long total,
                          const std::string& op_name, int tid) {
  std::string a = "\"addr\":" + std::to_string(addr);
  if (alloc) a += ",\"size\":" + std::to_string(size);
  if (alloc && total >= 0) a += ",\"total\":" + std::to_string(total);
  if (!op_name.empty()) a += ",\"op\":\"" + op_name + "\"";
  return std::string("{\"name\":\"") + (alloc ? "alloc" : "free") + "\",\"cat\":\"memory\",\"pid\":7,\"tid\":" +
         std::to_string(tid) + ",\"ts\":" + std::to_string(1'000'000 + ts) + ",\"ph\":\"i\",\"args\":{" + a + "}}";
}

// Allocations that carry their total only when it is higher than every
// total their thread wrote before read as allocations that all carry it
// (older traces): the same peak event (also when a later allocation ties
// it), the same blocks at it and the same counts.
TEST(Memory, AllocationsWithoutTheirTotalReadAsWithIt) {
  TempDir d;
  auto trace = [](bool compact) {
    std::map<int, long long> high;  // per thread: the highest total written
    auto b = [&](bool alloc, long long ts, unsigned long long addr, long long size, long long total,
                 const std::string& op_name = "", int tid = 7) {
      if (!compact) return block(alloc, ts, addr, size, total, op_name, tid);
      long long written = -1;
      if (alloc && (!high.count(tid) || total > high[tid])) written = high[tid] = total;
      return compact_block(alloc, ts, addr, size, written, op_name, tid);
    };
    return testing::pfw_text({
        region(0, 90), b(true, 10, 1, 1000, 1500, "aten::cat"), sample(10, "1500"),
        region(100, 90),
        b(true, 112, 2, 4096, 5596, "aten::mm"), b(true, 114, 3, 2048, 7644, "aten::mm"),
        b(false, 116, 3, 2048, 5596, "", 8),
        module_op("function.mm", 110, 10, "encoder.0"),
        b(true, 120, 6, 512, 6108, "aten::view"),  // below thread 7's high: no total
        b(true, 130, 4, 3000, 9108, "aten::add", 8), sample(130, "9108"),  // the peak
        b(false, 130, 1, 1000, 8108, "", 8),
        b(false, 140, 2, 4096, 4012, "", 8),
        b(true, 150, 5, 64, 4076, "aten::relu"),      // no total
        b(true, 160, 7, 5032, 9108, "aten::tie")});  // ties the peak, later: a new high for thread 7
  };
  std::vector<MemoryPeaks> runs;
  for (bool compact : {false, true}) {
    const std::string f = d.file(compact ? "compact.pfw" : "old.pfw");
    const std::string text = trace(compact);
    EXPECT_EQ(text.find("\"total\":6108") == std::string::npos, compact);
    EXPECT_EQ(text.find("\"total\":4076") == std::string::npos, compact);
    testing::write_file(f, text);
    runs.push_back(memory_peaks({f}));
  }
  const MemoryPeaks &old = runs[0], &m = runs[1];
  ASSERT_EQ(old.peaks.size(), 1u);
  ASSERT_EQ(m.peaks.size(), 1u);
  const PeakComposition& o = old.peaks[0];
  EXPECT_EQ(o.peak, 9108);
  EXPECT_EQ(o.peak_ts_ns, (1'000'000 + 130) * 1000LL);  // the earlier of the two equal totals
  EXPECT_EQ(o.traced, 1000 + 4096 + 512 + 3000);
  expect_same_composition(m.peaks[0], o);
  EXPECT_EQ(std::tie(m.blocks.never_freed, m.blocks.free_without_alloc, m.blocks.alloc_over_live, m.blocks.late,
                     m.blocks.bad),
            std::tie(old.blocks.never_freed, old.blocks.free_without_alloc, old.blocks.alloc_over_live,
                     old.blocks.late, old.blocks.bad));
  EXPECT_EQ(m.blocks.bad, 0u);
  EXPECT_EQ(memory_problems_line(m), "");
}

// The peak on a thread in the same microsecond as later events of its own
// thread: its thread's order decides, not the time.
TEST(Memory, EventsInThePeaksMicrosecondAfterItOnItsThreadAreAfterIt) {
  TempDir d;
  const std::string f = d.file("t.pfw");
  testing::write_file(f, testing::pfw_text({sample(5, "0"), block(true, 10, 1, 100, 100, "aten::a"),
                                            block(true, 10, 2, 200, 300, "aten::b"), block(false, 10, 1, 100, 200),
                                            block(false, 10, 2, 200, 0)}));
  MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.peaks.size(), 1u);
  EXPECT_EQ(m.peaks[0].peak, 300);
  EXPECT_EQ(m.peaks[0].traced, 300);
  EXPECT_EQ(m.peaks[0].blocks, 2u);
  EXPECT_EQ(m.peaks[0].before_trace, 0);
}

// More ops than rows: the top 10 and one "(rest)" row, summing to the traced bytes.
TEST(Memory, TheCompositionKeepsTheTopRowsAndTheRest) {
  TempDir d;
  const std::string f = d.file("t.pfw");
  std::vector<std::string> lines = {sample(1, "0")};
  long long total = 0;
  for (int i = 0; i < 14; ++i) {
    total += 100 + i;
    lines.push_back(block(true, 10 + i, 1000 + i, 100 + i, total, "aten::op" + std::to_string(i)));
  }
  testing::write_file(f, testing::pfw_text(lines));
  MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.peaks.size(), 1u);
  const auto& rows = m.peaks[0].by_op;
  ASSERT_EQ(rows.size(), kPeakHolderRows + 1);
  EXPECT_EQ(rows[0].key, "aten::op13");
  EXPECT_TRUE(rows.back().rest);
  EXPECT_EQ(rows.back().blocks, 4u);
  EXPECT_EQ(rows.back().bytes, 100 + 101 + 102 + 103);
  double sum = 0;
  for (const PeakHolder& h : rows) sum += h.bytes;
  EXPECT_EQ(sum, m.peaks[0].peak);
}

// Bad block events: a free whose allocation is not in the trace, a free
// written before its allocation (another thread's chunk: used by time), a
// block event without a number, and a record cut mid-way: counted in one
// line, and the peak's composition still exact for what was read.
TEST(Memory, BadBlockEventsAreCountedInOneLine) {
  TempDir d;
  const std::string f = d.file("t.pfw");
  std::string text = testing::pfw_text(
      {sample(1, "0"), block(false, 5, 77, 64, 0),                      // no allocation of 77 in the trace
       block(false, 30, 2, 200, 100, "", 8),                             // block 2's free, read before its allocation
       block(true, 10, 1, 100, 100, "aten::a"), block(true, 20, 2, 200, 300, "aten::b"),
       "{\"name\":\"alloc\",\"cat\":\"memory\",\"pid\":7,\"tid\":7,\"ts\":1000040,\"ph\":\"i\",\"args\":{\"addr\":\"x\"}}"},
      /*finalized=*/false);
  text += block(true, 60, 3, 50, 150, "aten::c").substr(0, 60);
  testing::write_file(f, text);
  MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.peaks.size(), 1u);
  EXPECT_EQ(m.peaks[0].peak, 300);
  EXPECT_EQ(m.peaks[0].traced, 300);
  EXPECT_EQ(m.blocks.free_without_alloc, 1u);
  EXPECT_EQ(m.blocks.late, 1u);
  EXPECT_EQ(m.blocks.bad, 1u);
  EXPECT_EQ(m.blocks.never_freed, 1u);  // block 1
  EXPECT_EQ(m.stats.malformed, 1u);
  EXPECT_EQ(memory_problems_line(m),
            "1 memory block event without a numeric addr, size or total (skipped); 1 free without an allocation in "
            "the trace (skipped); 1 block event earlier than one before it at its address (used by time)");
  auto r = testing::run_cli(d, "memory " + f);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("1 free without an allocation in the trace (skipped)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("is held by 2 blocks"), std::string::npos) << r.out;
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
                                               block(true, 25, 1, 4096, 5096, "aten::mm"), sample(40, "5096"),
                                               region(100, 90), sample(150, "2000")}));
  testing::write_file(without, testing::pfw_text({region(0, 90), op("aten::mm", 20, 10, 0, 0)}));
  auto r = testing::run_cli(d, "report " + with + " -o " + d.file("with.html"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = testing::read_file(d.file("with.html"));
  EXPECT_NE(page.find("<div id=\"memory-section\">"), std::string::npos);
  EXPECT_NE(page.find("Memory peak per step"), std::string::npos);
  EXPECT_NE(page.find("What holds the peak of pid 7, cpu"), std::string::npos);
  EXPECT_NE(page.find("<td>aten::mm</td><td>1</td><td>4.00 KiB</td>"), std::string::npos);
  r = testing::run_cli(d, "report " + without + " -o " + d.file("without.html"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(testing::read_file(d.file("without.html")).find("memory-section"), std::string::npos);
}

// A memory counter sample of thread `tid`.
std::string sample_on(long long ts, const std::string& value, int tid) {
  return "{\"name\":\"memory\",\"cat\":\"memory\",\"pid\":7,\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + std::to_string(1'000'000 + ts) + ",\"ph\":\"C\",\"args\":{\"cpu\":" + value + "}}";
}

// In a time window the alloc that reached the window's peak can carry no
// total (its thread wrote a higher one before the window): the counter
// track's highest sample (thread 7 at 110) points to it, and of thread 7's
// events in that microsecond the alloc after which they stand highest is
// the peak. The composition equals the one of a trace whose every alloc
// carries its total, not the lower event of thread 8 that has one.
TEST(Memory, APeakInAWindowWithoutItsTotalIsFoundThroughTheTrack) {
  TempDir d;
  auto trace = [](bool compact) {
    auto b = [&](long long ts, unsigned long long addr, long long size, long long total, bool written,
                 const std::string& op_name, int tid) {
      return compact_block(true, ts, addr, size, compact && !written ? -1 : total, op_name, tid);
    };
    return testing::pfw_text({
        b(10, 1, 100, 100, true, "aten::cat", 7), sample_on(10, "100", 7),
        free_block(20, 1), sample_on(20, "0", 7),
        // the window [100, ..): thread 7's high (100) lies before it
        b(110, 2, 40, 40, false, "aten::view", 7), b(110, 3, 50, 90, false, "aten::mm", 7), free_block(110, 3),
        module_op("function.mm", 105, 10, "encoder.0"), sample_on(110, "90", 7),
        free_block(120, 2), sample_on(120, "0", 7),
        b(130, 4, 50, 50, true, "aten::add", 8), sample_on(130, "50", 8),
        free_block(140, 4, 8), sample_on(140, "0", 8)});
  };
  ReadOptions window;
  window.from_ns = (1'000'000 + 100) * 1000LL;
  std::vector<MemoryPeaks> runs;
  for (bool compact : {false, true}) {
    const std::string f = d.file(compact ? "compact.pfw" : "old.pfw");
    testing::write_file(f, trace(compact));
    runs.push_back(memory_peaks({f}, window));
  }
  for (const MemoryPeaks& m : runs) {
    ASSERT_EQ(m.peaks.size(), 1u);
    const PeakComposition& c = m.peaks[0];
    EXPECT_EQ(c.peak, 90);
    EXPECT_EQ(c.peak_ts_ns, (1'000'000 + 110) * 1000LL);
    EXPECT_EQ(c.traced, 90);
    EXPECT_EQ(c.blocks, 2u);
    ASSERT_NE(row(c.by_op, "aten::mm"), nullptr);
    EXPECT_EQ(row(c.by_op, "aten::mm")->bytes, 50);
    ASSERT_NE(row(c.by_op, "aten::view"), nullptr);
    EXPECT_EQ(row(c.by_op, "aten::view")->bytes, 40);
    ASSERT_NE(row(c.by_module, "encoder.0"), nullptr);
    EXPECT_EQ(row(c.by_module, "encoder.0")->bytes, 90);
  }
  expect_same_composition(runs[1].peaks[0], runs[0].peaks[0]);
  auto r = testing::run_cli(d, "memory --from 1000100 " + d.file("compact.pfw"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("the peak 90 B at 1000110.000 us is held by 2 blocks"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("aten::add"), std::string::npos) << r.out;
}

// Where the writer dropped events, a dropped record-high alloc leaves the
// thread's later allocs below it without a total: the track's peak still
// points to its alloc (found, thread 7 at 40), and when that alloc is the
// one dropped, one line says what holds the peak cannot be given (never
// the composition of a lower event).
// JSON allows whitespace around a colon, and writers other than ours (Python's
// json) put a space after each: a trace written that way reads as the compact
// one, its counter track and its block events both.
TEST(Memory, ATraceWithSpacesAfterItsColonsReadsAsTheCompactOne) {
  TempDir d;
  const std::vector<std::string> lines = {
      compact_block(true, 10, 1, 100, 100, "aten::cat", 7), sample_on(10, "100", 7),
      compact_block(true, 20, 2, 150, 250, "aten::mm", 7), sample_on(20, "250", 7),
      free_block(30, 1), sample_on(30, "150", 7)};
  std::vector<std::string> spaced;
  for (std::string l : lines) {
    std::string o;
    bool in_string = false;
    for (char c : l) {
      o += c;
      if (c == '"') in_string = !in_string;  // no escapes in these lines
      if (!in_string && (c == ':' || c == ',')) o += ' ';
    }
    spaced.push_back(o);
  }
  const std::string compact = d.file("compact.pfw"), wide = d.file("spaced.pfw");
  testing::write_file(compact, testing::pfw_text(lines));
  testing::write_file(wide, testing::pfw_text(spaced));
  const MemoryPeaks a = memory_peaks({compact}), b = memory_peaks({wide});
  ASSERT_EQ(b.series.size(), 1u);
  EXPECT_EQ(b.series[0].peak, a.series[0].peak);
  EXPECT_EQ(b.series[0].samples, 3u);
  ASSERT_EQ(a.peaks.size(), 1u);
  ASSERT_EQ(b.peaks.size(), 1u);
  expect_same_composition(b.peaks[0], a.peaks[0]);
  EXPECT_EQ(b.peaks[0].peak, 250);
  ASSERT_NE(row(b.peaks[0].by_op, "aten::mm"), nullptr);
}

TEST(Memory, APeakWhoseAllocationWasDroppedIsFoundOrSaidSo) {
  TempDir d;
  auto trace = [](bool keep_peak_alloc) {
    std::vector<std::string> lines = {
        compact_block(true, 10, 1, 100, 100, "aten::cat", 7), sample_on(10, "100", 7),
        // dropped: the alloc of block 2 (150 B, total 250, a new high) and its sample
        free_block(35, 2), sample_on(35, "100", 7)};
    if (keep_peak_alloc) lines.push_back(compact_block(true, 40, 3, 140, -1, "aten::mm", 7));  // 240 < 250: no total
    lines.push_back(sample_on(40, "240", 7));
    lines.push_back(free_block(50, 3));
    return testing::pfw_text(lines);
  };
  const std::string found = d.file("found.pfw"), lost = d.file("lost.pfw");
  testing::write_file(found, trace(true));
  testing::write_file(lost, trace(false));
  MemoryPeaks m = memory_peaks({found});
  ASSERT_EQ(m.peaks.size(), 1u);
  EXPECT_TRUE(m.unheld.empty());
  EXPECT_EQ(m.peaks[0].peak, 240);
  EXPECT_EQ(m.peaks[0].traced, 240);
  ASSERT_NE(row(m.peaks[0].by_op, "aten::mm"), nullptr);
  EXPECT_EQ(row(m.peaks[0].by_op, "aten::mm")->bytes, 140);

  m = memory_peaks({lost});
  EXPECT_TRUE(m.peaks.empty());
  ASSERT_EQ(m.unheld.size(), 1u);
  EXPECT_EQ(m.unheld[0].peak, 240);
  auto r = testing::run_cli(d, "memory " + lost);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("pid 7, cpu: the peak 240 B at 1000040.000 us: what holds it cannot be given"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("is held by"), std::string::npos) << r.out;
  r = testing::run_cli(d, "memory --format json " + lost);
  EXPECT_NE(r.out.find("\"peaks_without_composition\":[{\"pid\":\"7\",\"device\":\"cpu\",\"peak_ts_us\":1000040.000,"
                       "\"peak_bytes\":240}]"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dftracer::analyze
