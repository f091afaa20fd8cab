// diff on hand-made traces: a trace against itself is all zeros; a pair with
// known self and total times gives exactly the expected deltas, in impact
// order, with one-sided groups as 0 on the other side; the CLI's JSON carries
// the same numbers and bad input is a one-line usage error.
#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace dftracer::analyze::testing
