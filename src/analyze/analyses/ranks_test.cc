// Cross-rank analysis on hand-made rank files whose arrivals and clock
// offsets are known: exact waits, transfers and stragglers, p2p matching,
// missing and cut-short ranks, unknown offsets, the same whatever the reader
// threads; and the `ranks` / `summary --by rank` commands end to end.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "rank_trace_files.hpp"
#include "ranks.hpp"

namespace dftracer::analyze::testing {
namespace {

const Collective& find(const RankReport& r, const std::string& name, long long seq) {
  for (const Collective& c : r.collectives)
    if (c.name == name && c.seq == seq) return c;
  ADD_FAILURE() << "no collective " << name << " " << seq;
  static Collective none;
  return none;
}

void expect_two_rank_numbers(const RankReport& r) {
  ASSERT_EQ(r.processes.size(), 2u);
  EXPECT_EQ(r.processes[0].rank, 0);
  EXPECT_EQ(r.processes[1].rank, 1);
  EXPECT_TRUE(r.missing_ranks.empty());
  EXPECT_TRUE(r.incomplete_ranks.empty());
  EXPECT_EQ(r.max_uncertainty_ns, 3000);
  ASSERT_EQ(r.collectives.size(), 4u);  // 3 all_reduce + 1 send/recv

  const Collective& s0 = find(r, "all_reduce", 0);
  ASSERT_EQ(s0.ranks.size(), 2u);
  EXPECT_EQ(s0.step, 0);
  EXPECT_EQ(r.processes[s0.ranks[s0.last].process].rank, 1);
  EXPECT_EQ(s0.ranks[0].wait_ns, 20'000);
  EXPECT_EQ(s0.ranks[0].transfer_ns, 30'000);  // end (150) - last arrival (120)
  EXPECT_EQ(s0.ranks[1].wait_ns, 0);
  EXPECT_EQ(s0.ranks[1].transfer_ns, 30'000);
  EXPECT_EQ(s0.spread_ns, 20'000);

  const Collective& s1 = find(r, "all_reduce", 1);
  EXPECT_EQ(r.processes[s1.ranks[s1.last].process].rank, 0);
  EXPECT_EQ(s1.ranks[1].wait_ns, 10'000);
  EXPECT_EQ(s1.ranks[1].transfer_ns, 30'000);

  const Collective& s2 = find(r, "all_reduce", 2);
  EXPECT_EQ(s2.step, 2);
  EXPECT_EQ(r.processes[s2.ranks[s2.last].process].rank, 1);
  EXPECT_EQ(s2.ranks[0].wait_ns, 200'000'000);
  EXPECT_EQ(s2.ranks[0].transfer_ns, 50'000);

  const Collective& p2p = find(r, "send/recv", 0);
  EXPECT_EQ(p2p.src, 0);
  EXPECT_EQ(p2p.dst, 1);
  ASSERT_EQ(p2p.ranks.size(), 2u);
  EXPECT_EQ(p2p.ranks[0].wait_ns, 10'000);  // the sender waited for the receiver

  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].straggler, 1);
  EXPECT_EQ(r.steps[0].caused_wait_ns, 30'000);  // all_reduce 0 and the recv
  EXPECT_EQ(r.steps[1].straggler, 0);
  EXPECT_EQ(r.steps[2].straggler, 1);
  EXPECT_EQ(r.steps[2].caused_wait_ns, 200'000'000);
  EXPECT_EQ(r.steps[2].max_wait_ns, 200'000'000);

  // Per step and rank: time in collectives = wait + transfer.
  for (const StepRankRow& row : r.step_rows) EXPECT_EQ(row.comm_ns, row.wait_ns + row.transfer_ns);
  const RankProcess& r0 = r.processes[0];
  EXPECT_EQ(r0.wait_ns, 20'000 + 200'000'000 + 10'000);
  EXPECT_EQ(r0.comm_ns, 50'000 + 30'000 + 200'050'000 + 40'000);
  EXPECT_EQ(r0.last_arrivals, 1u);
  EXPECT_EQ(r.processes[1].last_arrivals, 3u);  // all_reduce 0 and 2, and the recv
  // Self time: the collectives nest in train_step on the main thread.
  EXPECT_EQ(r0.total_ns, 3 * 900'000'000LL + r0.comm_ns);
  EXPECT_EQ(r0.self_ns, 3 * 900'000'000LL);
}

TEST(Ranks, ExactWaitsTransfersAndStragglersWithClockOffsets) {
  TempDir d;
  expect_two_rank_numbers(analyze_ranks(write_ranks(d, two_ranks()), 1));
}

TEST(Ranks, SameNumbersWhateverTheReaderThreadsAndPieces) {
  TempDir d;
  ReadOptions ro;
  ro.min_piece_bytes = 256;  // many pieces per file
  expect_two_rank_numbers(analyze_ranks(write_ranks(d, two_ranks()), 3, ro));
}

// DDP launches its gradient buckets as async all-reduces back to back: a
// rank that is on time waits for the late rank at all of them at once. Its
// time waiting is the union of those waits (wall time), not their sum: summed,
// one 0.2 s straggler counted 0.6 s over 3 buckets (seen on a real torchrun job).
TEST(Ranks, OverlappingAsyncCollectivesCountWallTimeOnce) {
  TempDir d;
  std::vector<RankFile> f(2);
  for (int r = 0; r < 2; ++r) {
    f[r].rank = r;
    f[r].pid = 100 + r;
    f[r].add("train_step", "app", 0, 900'000);
  }
  // Rank 0 launches buckets 0..2 at 100, 110, 120 us; each completes at 200,300 us.
  // Rank 1 arrives 200 ms later and each of its buckets takes 100 us.
  for (int b = 0; b < 3; ++b) {
    f[0].collective("all_reduce", b, 100 + 10 * b, 200'200 - 10 * b, 2, ",\"async_op\":1");
    f[1].collective("all_reduce", b, 200'100 + 10 * b, 100, 2, ",\"async_op\":1");
  }
  RankReport r = analyze_ranks(write_ranks(d, f), 1);
  ASSERT_EQ(r.collectives.size(), 3u);
  for (const Collective& c : r.collectives) EXPECT_EQ(c.ranks[0].wait_ns, 200'000'000);  // each, alone
  const RankProcess& r0 = r.processes[0];
  EXPECT_EQ(r0.wait_ns, 200'020'000);  // [100, 200100) u [110, 200110) u [120, 200120) us
  EXPECT_EQ(r0.comm_ns, 200'200'000);  // [100, 200300) us
  EXPECT_EQ(r0.transfer_ns, r0.comm_ns - r0.wait_ns);
  ASSERT_EQ(r.step_rows.size(), 2u);
  EXPECT_EQ(r.step_rows[0].wait_ns, 200'020'000);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].straggler, 1);
  EXPECT_EQ(r.steps[0].caused_wait_ns, 200'020'000);  // rank 0's wall time waiting for it
  EXPECT_EQ(r.processes[1].caused_wait_ns, 200'020'000);
}

TEST(Ranks, WithoutOffsetsTheWaitsShiftAndTheOutputSaysAlignmentIsUnknown) {
  TempDir d;
  auto fs = two_ranks();
  for (auto& f : fs) f.offset = false;  // rank 1's events written 5 ms "late" is now its real clock
  fs[1].events.clear();
  fs[1].collective("all_reduce", 0, 120, 30);
  fs[1].add("train_step", "app", 0, 900'000);
  RankReport r = analyze_ranks(write_ranks(d, fs), 1);
  EXPECT_EQ(r.offsets_unknown, (std::vector<int64_t>{0, 1}));
  EXPECT_NE(alignment_note(r).find("alignment unknown"), std::string::npos) << alignment_note(r);
  const Collective& c = find(r, "all_reduce", 0);
  EXPECT_EQ(c.ranks[0].wait_ns, 20'000);
  EXPECT_EQ(r.partial_collectives, 3u);  // all_reduce 1 and 2 and the send: only on rank 0
}

TEST(Ranks, MissingRankIsReportedAndItsCollectivesArePartial) {
  TempDir d;
  std::vector<RankFile> fs(3);
  const int ranks[3] = {0, 1, 3};  // rank 2 never wrote a file
  for (int i = 0; i < 3; ++i) {
    fs[i].rank = ranks[i];
    fs[i].pid = 200 + i;
    fs[i].world = 4;
    fs[i].collective("all_reduce", 0, 100 + 10 * i, 100, 4);
  }
  RankReport r = analyze_ranks(write_ranks(d, fs), 2);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.missing_ranks, (std::vector<int64_t>{2}));
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_FALSE(r.collectives[0].complete());
  EXPECT_EQ(r.partial_collectives, 1u);
  EXPECT_EQ(r.processes[r.collectives[0].ranks[r.collectives[0].last].process].rank, 3);
  EXPECT_NE(rank_problems_line(r).find("missing rank(s) 2 of world size 4"), std::string::npos);
}

// Sizes and offsets no run can have: a world_size of 10^12 in a 2 KB file
// drove the missing-ranks list to 16.8 GB, an offset of 9e18 ns overflowed
// every aligned timestamp. Each is ignored, in one line naming its file.
TEST(Ranks, ImplausibleWorldSizeAndClockOffsetAreIgnoredNamingTheFile) {
  TempDir d;
  auto fs = two_ranks();
  fs[0].world = 2'000'000;  // above kMaxWorldSize (the old code listed 2 million missing ranks)
  fs[1].offset_ns = 9'000'000'000'000'000'000;
  fs[1].uncertainty_ns = 9'000'000'000'000'000'000;
  auto paths = write_ranks(d, fs);
  RankReport r = analyze_ranks(paths, 2);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_TRUE(r.missing_ranks.empty());
  EXPECT_EQ(r.offsets_unknown, (std::vector<int64_t>{1}));
  EXPECT_EQ(r.max_uncertainty_ns, 0);
  const std::string line = rank_problems_line(r);
  EXPECT_NE(line.find("world_size 2000000 in " + paths[0] + " ignored"), std::string::npos) << line;
  EXPECT_NE(line.find("clock_offset_ns 9000000000000000000 in " + paths[1]), std::string::npos) << line;
  for (const std::string& cmd : std::vector<std::string>{"summary --by rank", "merge -o " + d.file("m.json")}) {
    CliRun c = run_cli(d, cmd + " " + paths[0] + " " + paths[1]);
    ASSERT_EQ(c.status, 0) << cmd << ": " << c.err;
    EXPECT_NE(c.err.find("clock_offset_ns 9000000000000000000 in " + paths[1]), std::string::npos) << cmd << c.err;
    EXPECT_LT(c.err.size(), 2000u) << cmd;
  }
}

TEST(Ranks, FileCutShortIsAnIncompleteRank) {
  TempDir d;
  auto fs = two_ranks();
  fs[1].finalized = false;  // killed: no end event, no "]"
  RankReport r = analyze_ranks(write_ranks(d, fs), 1);
  EXPECT_EQ(r.incomplete_ranks, (std::vector<int64_t>{1}));
  EXPECT_NE(rank_problems_line(r).find("incomplete rank(s) 1"), std::string::npos);
}

TEST(Ranks, CliJsonCsvAndTextCarryTheSameNumbers) {
  TempDir d;
  auto paths = write_ranks(d, two_ranks());
  const std::string in = paths[0] + " " + paths[1];
  CliRun json = run_cli(d, "ranks --format json " + in);
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("\"stragglers\":{\"columns\":[\"step\",\"straggler\",\"caused_wait_us\""), std::string::npos);
  EXPECT_NE(json.out.find("\n[2,1,200000,200000,\"1\""), std::string::npos) << json.out;
  CliRun csv = run_cli(d, "ranks --format csv --table stragglers " + in);
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_NE(csv.out.find("\n2,1,200000,200000,1,"), std::string::npos) << csv.out;
  CliRun text = run_cli(d, "ranks " + in);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("clocks aligned to rank 0's within +-3.000 us"), std::string::npos) << text.out;
  CliRun bad = run_cli(d, "ranks --format csv --table nope " + in);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--table must be"), std::string::npos);
  CliRun sum = run_cli(d, "summary --by rank --format csv " + in);
  ASSERT_EQ(sum.status, 0) << sum.err;
  EXPECT_EQ(sum.out.substr(0, sum.out.find('\n')),
            "rank,local_rank,group_rank,world_size,hostname,pid,file,complete,count,self_us,total_us,share,comm_us,"
            "wait_us,transfer_us,comm_calls,last_arrivals,caused_wait_us,clock_offset_ns,clock_offset_uncertainty_ns,"
            "gpu,gpu_of");
  EXPECT_NE(sum.out.find("\n0,0,,2,node-a,100,"), std::string::npos) << sum.out;
}

TEST(Ranks, CliNamesMissingRankOnStderr) {
  TempDir d;
  auto fs = two_ranks();
  fs[0].world = fs[1].world = 3;
  auto paths = write_ranks(d, fs);
  CliRun r = run_cli(d, "summary --by rank " + paths[0] + " " + paths[1]);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("missing rank(s) 2 of world size 3"), std::string::npos) << r.err;
}


// A run without torchrun: one line saying there are no ranks (and how many
// processes), exit 0, not "0 ranks ...; one rank: no clock alignment needed"
// above empty tables; JSON: one object saying so.
TEST(Ranks, CliWithoutRankMetadataSaysSoInOneLine) {
  TempDir d;
  write_file(d.file("a.pfw"), pfw_text({op_event(1, "mm", 1000, 10, "forward", "m", -1, -1, 11, 11)}));
  write_file(d.file("b.pfw"), pfw_text({op_event(1, "mm", 1000, 10, "forward", "m", -1, -1, 12, 12),
                                        op_event(2, "mm", 2000, 10, "forward", "m", -1, -1, 13, 13)}));
  const std::string in = d.file("a.pfw") + " " + d.file("b.pfw");
  CliRun text = run_cli(d, "ranks " + in);
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.out,
            "no ranks: these traces carry no rank metadata (not a torchrun/torch.distributed job); 3 processes\n");
  CliRun json = run_cli(d, "ranks --format json " + in);
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(json.out.rfind("{\"ranks\":0,\"processes\":3,\"note\":\"no ranks: ", 0), 0u) << json.out;
  EXPECT_NE(json.out.find("\"events\":3,"), std::string::npos) << json.out;
}

}  // namespace
}  // namespace dftracer::analyze::testing
