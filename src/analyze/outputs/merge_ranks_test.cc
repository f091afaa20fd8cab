// `merge` of N rank files: one process per rank named "rank R (pid P)" and
// sorted by rank, clock offsets applied, pids shared by two hosts kept apart,
// and a missing or cut-short rank reported (stderr and otherData) while the
// merge still succeeds.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "rank_trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

struct Merged {
  CliRun run;
  std::string text;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
};

void merge(const TempDir& d, const std::vector<std::string>& paths, Merged& m) {
  std::string in;
  for (auto& p : paths) in += " " + p;
  m.run = run_cli(d, "merge -o " + d.file("merged.json") + in);
  ASSERT_EQ(m.run.status, 0) << m.run.err;
  m.text = read_file(d.file("merged.json"));
  ASSERT_EQ(m.parser.parse(simdjson::padded_string(m.text)).get(m.doc), simdjson::SUCCESS);
}

// pid -> process_name, pid -> sort index, and the ts of each (pid, name, seq) comm event.
struct Seen {
  std::map<int64_t, std::string> names;
  std::map<int64_t, int64_t> sort;
  std::map<std::string, double> comm_ts;
  std::map<int64_t, int> x_events;
};

Seen look(Merged& m) {
  Seen s;
  for (simdjson::dom::element e : m.doc["traceEvents"].get_array()) {
    std::string_view name = e["name"].get_string().value();
    std::string_view ph = e["ph"].get_string().value();
    int64_t pid = e["pid"].get_int64().value();
    if (ph == "M" && name == "process_name") s.names[pid] = std::string(e["args"]["name"].get_string().value());
    if (ph == "M" && name == "process_sort_index") s.sort[pid] = e["args"]["sort_index"].get_int64().value();
    if (ph == "X") ++s.x_events[pid];
    std::string_view cat;
    if (ph == "X" && !e["cat"].get_string().get(cat) && cat == "comm" && name == "all_reduce")
      s.comm_ts[std::to_string(pid) + ":" + std::to_string(e["args"]["seq"].get_int64().value())] =
          e["ts"].get_double().value();
  }
  return s;
}

TEST(RankMerge, OneProcessPerRankNamedAndSortedWithOffsetsApplied) {
  TempDir d;
  Merged m;
  merge(d, write_ranks(d, two_ranks()), m);
  Seen s = look(m);
  EXPECT_EQ(s.names[100], "rank 0 (pid 100)");
  EXPECT_EQ(s.names[101], "rank 1 (pid 101)");
  EXPECT_EQ(s.sort[100], 0);
  EXPECT_EQ(s.sort[101], 1);
  EXPECT_EQ(s.names.size(), 2u);  // the inputs' own names are replaced, not added to
  // On rank 0's clock rank 1 arrived 20 us after rank 0 at all_reduce 0
  // (its file says 4980 us before: its clock runs 5 ms behind).
  EXPECT_DOUBLE_EQ(s.comm_ts["101:0"] - s.comm_ts["100:0"], 20.0);
  EXPECT_DOUBLE_EQ(s.comm_ts["101:2"] - s.comm_ts["100:2"], 200000.0);
  double unc = -1;
  ASSERT_FALSE(m.doc["otherData"]["ranks"]["max_clock_uncertainty_us"].get(unc));
  EXPECT_EQ(unc, 3.0);
  EXPECT_NE(m.run.err.find("2 ranks merged; clocks aligned to rank 0's within +-3.000 us"), std::string::npos)
      << m.run.err;
}

// An offset that is not whole microseconds moves ts to the nanosecond: the
// merged ts gets three decimals even where the input had none.
TEST(RankMerge, SubMicrosecondOffsetIsAppliedExactly) {
  TempDir d;
  auto fs = two_ranks();
  fs[1].offset_ns = 5'000'123;  // RankFile writes ts - 5000 us: on rank 0's clock, 123 ns later
  fs[1].events.clear();
  fs[1].collective("all_reduce", 0, 120, 30);
  Merged m;
  merge(d, write_ranks(d, fs), m);
  Seen s = look(m);
  EXPECT_NEAR(s.comm_ts["101:0"] - s.comm_ts["100:0"], 20.123, 1e-6);
  EXPECT_NE(m.text.find(".123,\"dur\":30"), std::string::npos) << m.text;
}

TEST(RankMerge, SamePidOnTwoHostsStaysTwoProcesses) {
  TempDir d;
  auto fs = two_ranks();
  fs[1].pid = 100;  // the same pid on another host
  fs[1].host = "node-b";
  fs[1].events.clear();
  fs[1].collective("all_reduce", 0, 120, 30);
  Merged m;
  merge(d, write_ranks(d, fs), m);
  Seen s = look(m);
  ASSERT_EQ(s.names.size(), 2u);
  ASSERT_EQ(s.x_events.size(), 2u);
  EXPECT_EQ(s.names[100], "rank 0 (pid 100)");
  int64_t other = s.x_events.rbegin()->first;
  EXPECT_NE(other, 100);
  EXPECT_EQ(s.names[other], "rank 1 (pid 100)");
  EXPECT_EQ(s.x_events[other], 2);  // its all_reduce and end event
  EXPECT_EQ(s.x_events[100], 8);    // 3 all_reduce, send, 3 steps, end
}

TEST(RankMerge, MissingAndCutShortRanksAreReportedNotFatal) {
  TempDir d;
  auto fs = two_ranks();
  fs[0].world = fs[1].world = 3;  // rank 2 left no file
  fs[1].finalized = false;        // rank 1 was killed
  Merged m;
  merge(d, write_ranks(d, fs), m);
  EXPECT_NE(m.run.err.find("missing rank(s) 2 of world size 3"), std::string::npos) << m.run.err;
  EXPECT_NE(m.run.err.find("incomplete rank(s) 1"), std::string::npos) << m.run.err;
  simdjson::dom::array missing, incomplete;
  ASSERT_FALSE(m.doc["otherData"]["ranks"]["missing_ranks"].get(missing));
  ASSERT_FALSE(m.doc["otherData"]["ranks"]["incomplete_ranks"].get(incomplete));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing.at(0).get_int64().value(), 2);
  ASSERT_EQ(incomplete.size(), 1u);
  EXPECT_EQ(incomplete.at(0).get_int64().value(), 1);
  EXPECT_EQ(look(m).names.size(), 2u);
}

}  // namespace
}  // namespace dftracer::analyze::testing
