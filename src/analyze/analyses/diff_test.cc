// diff on hand-made traces: a trace against itself is all zeros; a pair with
// known self and total times gives exactly the expected deltas, in impact
// order, with one-sided groups as 0 on the other side; the CLI's JSON carries
// the same numbers and bad input is a one-line usage error.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <simdjson.h>

#include "cli_run.hpp"
#include "diff.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

// A: fwd [0,100) > mm [10,20), mm [30,40), add [50,55), relu [60,63): fwd self 72.
std::string run_a() {
  return pfw_text({op_event(1, "fwd", 0, 100, "forward", ""), op_event(2, "mm", 10, 10), op_event(3, "mm", 30, 10),
                   op_event(4, "add", 50, 5), op_event(5, "relu", 60, 3)});
}
// B: fwd [0,200) > mm [10,40), mm [50,80), add [90,95), softmax [100,107): fwd self 128.
std::string run_b() {
  return pfw_text({op_event(1, "fwd", 0, 200, "forward", ""), op_event(2, "mm", 10, 30), op_event(3, "mm", 50, 30),
                   op_event(4, "add", 90, 5), op_event(5, "softmax", 100, 7)});
}

TEST(Diff, TraceAgainstItselfIsAllZeros) {
  TempDir d;
  write_file(d.file("a.pfw"), run_a());
  Diff r = diff_traces({d.file("a.pfw")}, {d.file("a.pfw")}, parse_group_keys("name"), 0, 2);
  ASSERT_EQ(r.rows.size(), 4u);
  for (const DiffRow& row : r.rows) {
    EXPECT_EQ(row.count_delta(), 0) << row.key[0];
    EXPECT_EQ(row.self_delta_us(), 0) << row.key[0];
    EXPECT_EQ(row.total_delta_us(), 0) << row.key[0];
    EXPECT_EQ(delta_pct(row.self_a_us, row.self_b_us), 0) << row.key[0];
    EXPECT_GT(row.self_a_us, 0) << row.key[0];
  }
  EXPECT_EQ(r.traced_a_us, 100);
  EXPECT_EQ(r.traced_b_us, 100);
}

TEST(Diff, KnownDeltasInImpactOrder) {
  TempDir d;
  write_file(d.file("a.pfw"), run_a());
  write_file(d.file("b.pfw"), run_b());
  Diff r = diff_traces({d.file("a.pfw")}, {d.file("b.pfw")}, parse_group_keys("name"), 0, 1);
  ASSERT_EQ(r.rows.size(), 5u);
  // |self delta|: fwd 56, mm 40, softmax 7, relu 3, add 0.
  const char* order[] = {"fwd", "mm", "softmax", "relu", "add"};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(r.rows[i].key[0], order[i]);
  const DiffRow& fwd = r.rows[0];
  EXPECT_EQ(fwd.self_a_us, 72);
  EXPECT_EQ(fwd.self_b_us, 128);
  EXPECT_EQ(fwd.total_delta_us(), 100);
  const DiffRow& mm = r.rows[1];
  EXPECT_EQ(mm.count_a, 2u);
  EXPECT_EQ(mm.count_b, 2u);
  EXPECT_EQ(mm.self_delta_us(), 40);
  EXPECT_EQ(delta_pct(mm.self_a_us, mm.self_b_us), 200);
  const DiffRow& softmax = r.rows[2];  // only in B: A's side is 0, the % undefined
  EXPECT_EQ(softmax.count_a, 0u);
  EXPECT_EQ(softmax.self_b_us, 7);
  EXPECT_TRUE(std::isnan(delta_pct(softmax.self_a_us, softmax.self_b_us)));
  const DiffRow& relu = r.rows[3];  // only in A
  EXPECT_EQ(relu.count_b, 0u);
  EXPECT_EQ(relu.self_delta_us(), -3);
  EXPECT_EQ(delta_pct(relu.self_a_us, relu.self_b_us), -100);
  EXPECT_EQ(r.traced_a_us, 100);
  EXPECT_EQ(r.traced_b_us, 200);

  Diff top = diff_summaries(summarize({d.file("a.pfw")}, parse_group_keys("name"), 0, 1),
                            summarize({d.file("b.pfw")}, parse_group_keys("name"), 0, 1), 2);
  ASSERT_EQ(top.rows.size(), 2u);
  EXPECT_EQ(top.groups, 5u);
  EXPECT_EQ(top.rows[1].key[0], "mm");
}

TEST(Diff, CliJsonCsvTableAndErrors) {
  TempDir d;
  write_file(d.file("a.pfw"), run_a());
  write_file(d.file("b.pfw"), run_b());
  CliRun r = run_cli(d, "diff " + d.file("a.pfw") + " " + d.file("b.pfw") + " --format json --no-progress");
  ASSERT_EQ(r.status, 0) << r.err;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(r.out);
  EXPECT_EQ(double(doc["a"]["traced_us"]), 100);
  EXPECT_EQ(double(doc["b"]["traced_us"]), 200);
  EXPECT_EQ(double(doc["traced_delta_pct"]), 100);
  simdjson::dom::array rows = doc["rows"];
  ASSERT_EQ(rows.size(), 5u);
  simdjson::dom::element mm = rows.at(1);
  EXPECT_EQ(std::string_view(mm["name"]), "mm");
  EXPECT_EQ(double(mm["self_delta_us"]), 40);
  EXPECT_EQ(double(mm["self_delta_pct"]), 200);
  EXPECT_EQ(int64_t(mm["count_delta"]), 0);
  EXPECT_TRUE(rows.at(2)["self_delta_pct"].is_null());  // softmax: new in B

  r = run_cli(d, "diff " + d.file("a.pfw") + " " + d.file("b.pfw") + " --by module --format csv --top 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "module,count_a,count_b,count_delta,self_a_us,self_b_us,self_delta_us,self_delta_pct,total_a_us,"
            "total_b_us,total_delta_us,total_delta_pct");
  EXPECT_NE(r.out.find("\n(none),1,1,0,72,128,56,"), std::string::npos) << r.out;

  r = run_cli(d, "diff " + d.file("a.pfw") + " " + d.file("b.pfw"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "A: 100.000 us traced (5 events), B: 200.000 us traced (5 events), delta +100.000 us (+100.0%)");

  // Bad input: one line, exit 2.
  for (const std::string& args : {"diff " + d.file("a.pfw"), "diff " + d.file("a.pfw") + " " + d.file("nope.pfw"),
                                  "diff " + d.file("a.pfw") + " " + d.file("b.pfw") + " --by nokey",
                                  "summary " + d.file("a.pfw") + " --tree"}) {
    r = run_cli(d, args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find("dftracer-analyze: "), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}


// Four steps (args.step) of fwd > mm, add, back to back; fwd lasts 100, 110,
// 90, 100 us: a step spread (sample sd / mean) of 8.165 %.
std::string stepped_run(double mm_us, double add_us) {
  std::vector<std::string> evs;
  const double fwd[] = {100, 110, 90, 100};
  int id = 0;
  double t = 0;
  for (int k = 0; k < 4; t += fwd[k], ++k) {
    const std::string step = "\"step\":" + std::to_string(k);
    evs.push_back(op_event(++id, "fwd", t, fwd[k], "forward", "", -1, -1, 4242, 4242, step));
    evs.push_back(op_event(++id, "mm", t + 10, mm_us, "forward", "m", -1, -1, 4242, 4242, step));
    evs.push_back(op_event(++id, "add", t + 40, add_us, "forward", "m", -1, -1, 4242, 4242, step));
  }
  return pfw_text(evs);
}

// Each run's step spread is shown, and a row whose self time changed by no
// more than it is marked as noise: mm +5 % within +-8.2 %, add +100 % not.
TEST(Diff, DeltasWithinTheRunsStepSpreadAreMarkedAsNoise) {
  TempDir d;
  write_file(d.file("a.pfw"), stepped_run(10, 10));
  write_file(d.file("b.pfw"), stepped_run(10.5, 20));
  StepReport sa = analyze_steps({d.file("a.pfw")}, 2);
  StepSpread a = step_spread(sa);
  EXPECT_EQ(a.steps, 4u);
  EXPECT_EQ(a.median_us, 100);
  EXPECT_NEAR(a.spread_pct, 8.165, 1e-3);
  Diff r = diff_traces({d.file("a.pfw")}, {d.file("b.pfw")}, parse_group_keys("name"), 0, 1);
  mark_noise(r, a, step_spread(analyze_steps({d.file("b.pfw")}, 2)));
  EXPECT_NEAR(r.noise_pct, 8.165, 1e-3);
  for (const DiffRow& row : r.rows) {
    SCOPED_TRACE(row.key[0]);
    EXPECT_EQ(row.within_noise, row.key[0] == "mm");  // fwd's self: -12 %, add +100 %
  }

  CliRun t = run_cli(d, "diff " + d.file("a.pfw") + " " + d.file("b.pfw"));
  ASSERT_EQ(t.status, 0) << t.err;
  std::istringstream lines(t.out);
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);
  EXPECT_EQ(line,
            "A: 4 steps, median 100.000 us, spread ±8.2%; B: 4 steps, median 100.000 us, spread ±8.2%; "
            "deltas within ±8.2% are marked ~ (noise)");
  EXPECT_NE(t.out.find("+5.0% ~"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("+100.0% "), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("+100.0% ~"), std::string::npos) << t.out;
  CliRun j = run_cli(d, "diff --format json " + d.file("a.pfw") + " " + d.file("b.pfw"));
  ASSERT_EQ(j.status, 0) << j.err;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(j.out);
  EXPECT_NEAR(double(doc["noise_pct"]), 8.165, 1e-3);
  EXPECT_EQ(uint64_t(doc["a"]["steps"]), 4u);
  for (simdjson::dom::element row : doc["rows"].get_array())
    EXPECT_EQ(bool(row["within_noise"]), std::string_view(row["name"]) == "mm");

  // Identical runs: every delta is 0, within any spread.
  CliRun same = run_cli(d, "diff " + d.file("a.pfw") + " " + d.file("a.pfw"));
  EXPECT_NE(same.out.find("0.0% ~"), std::string::npos) << same.out;
  // Without steps there is no estimate, and nothing is marked.
  write_file(d.file("c.pfw"), run_a());
  CliRun none = run_cli(d, "diff " + d.file("c.pfw") + " " + d.file("c.pfw"));
  EXPECT_NE(none.out.find("A: 0 steps; B: 0 steps; no noise estimate"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find(" ~"), std::string::npos) << none.out;
}

}  // namespace
}  // namespace dftracer::analyze::testing
