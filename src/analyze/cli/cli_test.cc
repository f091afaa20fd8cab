// The command end to end: exit statuses, the one-line stderr summary, formats.
#include <gtest/gtest.h>

#include "cli_run.hpp"

namespace dftracer::analyze::testing {
namespace {

CliRun run(const TempDir& d, const std::string& args) { return run_cli(d, args); }

TEST(Cli, SummaryFormatsAndExitStatuses) {
  TempDir d;
  write_file(d.file("t.pfw"), pfw_text({op_event(1, "function.mm", 10, 4), op_event(2, "function.mm", 20, 6),
                                        "not json", op_event(3, "function.add", 30, 1)}));
  CliRun ok = run(d, "summary --no-progress --format csv " + d.file("t.pfw"));
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("function.mm,2,10,10,5,"), std::string::npos) << ok.out;
  // One line on stderr about the skipped line.
  EXPECT_EQ(std::count(ok.err.begin(), ok.err.end(), '\n'), 1) << ok.err;
  EXPECT_NE(ok.err.find("skipped 1 malformed or partial line"), std::string::npos) << ok.err;

  CliRun js = run(d, "summary --format json --by phase,module " + d.file("t.pfw"));
  EXPECT_EQ(js.status, 0);
  EXPECT_NE(js.out.find("\"group_by\":[\"phase\",\"module\"]"), std::string::npos) << js.out;

  CliRun missing = run(d, "summary " + d.file("missing.pfw"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no such file or directory"), std::string::npos) << missing.err;

  write_file(d.file("empty.pfw"), "");
  CliRun empty = run(d, "summary " + d.file("empty.pfw"));
  EXPECT_EQ(empty.status, 1);
  EXPECT_NE(empty.err.find("1 empty file"), std::string::npos) << empty.err;

  CliRun both = run(d, "summary " + d.file("empty.pfw") + " " + d.file("t.pfw"));
  EXPECT_EQ(both.status, 0);

  CliRun bad = run(d, "summary --by colour " + d.file("t.pfw"));
  EXPECT_EQ(bad.status, 2);
  CliRun nocmd = run(d, "frobnicate x");
  EXPECT_EQ(nocmd.status, 2);
}

TEST(Cli, SummaryByAnyArgsKey) {
  TempDir d;
  write_file(d.file("t.pfw"),
             pfw_text({op_event(1, "function.mm", 10, 4, "forward", "m", -1, -1, 1, 2, "\"step\":0,\"rank\":3"),
                       op_event(2, "function.mm", 20, 6, "forward", "m", -1, -1, 1, 2, "\"step\":1,\"rank\":3"),
                       op_event(3, "function.add", 30, 1, "forward", "m", -1, -1, 1, 2, "\"step\":1")}));
  CliRun csv = run(d, "summary --format csv --by args.step,args.rank " + d.file("t.pfw"));
  EXPECT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out,
            "args.step,args.rank,count,self_us,total_us,mean_us,min_us,p50_us,p95_us,max_us,share,gflops,gbps\n"
            "1,3,1,6,6,6,6,6,6,6,0.54545454545454541,,\n"
            "0,3,1,4,4,4,4,4,4,4,0.36363636363636365,,\n"
            "1,(none),1,1,1,1,1,1,1,1,0.090909090909090912,,\n");
  // A bad key: exit 2 and one line naming it and what is accepted (plus the --help hint).
  CliRun bad = run(d, "summary --by args.flops " + d.file("t.pfw"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err.find("dftracer-analyze: --by: cannot group by 'args.flops'"), 0u) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 2) << bad.err;
  CliRun unknown = run(d, "summary --by colour " + d.file("missing.pfw"));
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown group key 'colour' (use name, cat, ph, pid, tid, phase, module"),
            std::string::npos) << unknown.err;
}

TEST(Cli, MergeAndReportWriteFiles) {
  TempDir d;
  write_file(d.file("t.pfw"), pfw_text({op_event(1, "function.mm", 10, 4)}));
  CliRun m = run(d, "merge -o " + d.file("out.json") + " " + d.file("t.pfw"));
  EXPECT_EQ(m.status, 0) << m.err;
  EXPECT_NE(read_file(d.file("out.json")).find("\"traceEvents\""), std::string::npos);
  CliRun r = run(d, "report -o " + d.file("r.html") + " " + d.file("t.pfw"));
  EXPECT_EQ(r.status, 0) << r.err;
  std::string html = read_file(d.file("r.html"));
  EXPECT_NE(html.find("function.mm"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no network reference but the SVG namespace
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

}  // namespace
}  // namespace dftracer::analyze::testing
