// Summaries of traces with known content: exact counts, totals, min/max, and
// quantiles within the histogram's documented relative error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>

#include "summary.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

const SummaryRow* find_row(const Summary& s, std::vector<std::string> key) {
  for (auto& r : s.rows)
    if (r.key == key) return &r;
  return nullptr;
}

class KnownTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    // mm: 100 forward events of 10..109 us, 1e6 flops and 4000 bytes each;
    // add: 50 backward events of 2.5 us in module model.fc, 200 bytes each;
    // relu: 10 inference events of exactly 1 us, no flops/bytes; plus metadata.
    std::vector<std::string> evs;
    evs.push_back(R"({"id":0,"name":"process_name","cat":"dftracer","pid":4242,"tid":4242,"ph":"M","args":{"name":"train.py"}})");
    int id = 1;
    for (int i = 0; i < 100; ++i)
      evs.push_back(op_event(id++, "function.mm", 1000.0 + i * 200, 10 + i, "forward", "model.layer1", 1e6, 4000));
    for (int i = 0; i < 50; ++i)
      evs.push_back(op_event(id++, "function.add", 30000.0 + i * 10, 2.5, "backward", "model.fc", -1, 200, 4242, 9));
    for (int i = 0; i < 10; ++i)
      evs.push_back(op_event(id++, "function.relu", 40000.0 + i * 10, 1.0, "inference", "model.act"));
    // Split over a .pfw and a .pfw.gz: both files' events add up.
    std::vector<std::string> a(evs.begin(), evs.begin() + 80), b(evs.begin() + 80, evs.end());
    write_file(dir.file("a.pfw"), pfw_text(a));
    write_gz(dir.file("b.pfw.gz"), pfw_text(b), 7, true);
    files = {dir.file("a.pfw"), dir.file("b.pfw.gz")};
  }
  TempDir dir;
  std::vector<std::string> files;
};

TEST_F(KnownTrace, ByNameExactCountsAndTotals) {
  Summary s = summarize(files, parse_group_keys("name"), 0, 2);
  EXPECT_EQ(s.complete_events, 160u);
  EXPECT_EQ(s.metadata_events, 1u);
  ASSERT_EQ(s.rows.size(), 3u);
  const SummaryRow* mm = find_row(s, {"function.mm"});
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->count, 100u);
  EXPECT_DOUBLE_EQ(mm->total_us, 5950.0);  // sum of 10..109
  EXPECT_DOUBLE_EQ(mm->mean_us, 59.5);
  EXPECT_DOUBLE_EQ(mm->min_us, 10.0);
  EXPECT_DOUBLE_EQ(mm->max_us, 109.0);
  // Nearest rank: p50 is the 50th smallest (59), p95 the 95th (104).
  EXPECT_NEAR(mm->p50_us, 59.0, 59.0 * LogHistogram::kMaxRelativeError);
  EXPECT_NEAR(mm->p95_us, 104.0, 104.0 * LogHistogram::kMaxRelativeError);
  // 1e8 flops in 5950 us: 1e8 / 5950e-6 s = 16.807 GFLOP/s; 4e5 bytes: 0.0672 GB/s.
  EXPECT_NEAR(mm->gflops, 1e8 / 5950e-6 / 1e9, 1e-9);
  EXPECT_NEAR(mm->gbps, 4e5 / 5950e-6 / 1e9, 1e-9);
  const SummaryRow* add = find_row(s, {"function.add"});
  ASSERT_TRUE(add);
  EXPECT_EQ(add->count, 50u);
  EXPECT_DOUBLE_EQ(add->total_us, 125.0);
  EXPECT_DOUBLE_EQ(add->p50_us, 2.5);  // all equal: clamped to the exact min/max
  EXPECT_TRUE(std::isnan(add->gflops));
  const SummaryRow* relu = find_row(s, {"function.relu"});
  ASSERT_TRUE(relu);
  EXPECT_EQ(relu->count, 10u);
  EXPECT_DOUBLE_EQ(relu->total_us, 10.0);
  EXPECT_DOUBLE_EQ(s.total_us, 6085.0);
  EXPECT_NEAR(mm->share, 5950.0 / 6085.0, 1e-12);
  EXPECT_EQ(s.rows[0].key[0], "function.mm");  // sorted by self time (nothing nests here: = total)
}

TEST_F(KnownTrace, ByPhaseModuleTidAndComposite) {
  Summary ph = summarize(files, parse_group_keys("phase"), 0, 2);
  ASSERT_EQ(ph.rows.size(), 3u);
  EXPECT_EQ(find_row(ph, {"forward"})->count, 100u);
  EXPECT_EQ(find_row(ph, {"backward"})->count, 50u);
  EXPECT_EQ(find_row(ph, {"inference"})->count, 10u);
  Summary mod = summarize(files, parse_group_keys("module"), 0, 1);
  EXPECT_DOUBLE_EQ(find_row(mod, {"model.fc"})->total_us, 125.0);
  Summary tid = summarize(files, parse_group_keys("tid"), 0, 2);
  EXPECT_EQ(find_row(tid, {"9"})->count, 50u);
  EXPECT_EQ(find_row(tid, {"4243"})->count, 110u);
  Summary comp = summarize(files, parse_group_keys("module,phase"), 0, 2);
  ASSERT_TRUE(find_row(comp, {"model.layer1", "forward"}));
  EXPECT_EQ(find_row(comp, {"model.layer1", "forward"})->count, 100u);
  Summary top = summarize(files, parse_group_keys("name"), 1, 2);
  ASSERT_EQ(top.rows.size(), 1u);
  EXPECT_EQ(top.groups, 3u);
  EXPECT_THROW(parse_group_keys("name,colour"), std::invalid_argument);
}

TEST_F(KnownTrace, JsonAndCsvOutputs) {
  Summary s = summarize(files, parse_group_keys("name"), 0, 2);
  std::ostringstream js, csv, table;
  write_summary_json(js, s);
  write_summary_csv(csv, s);
  write_summary_table(table, s);
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(simdjson::padded_string(js.str())).get(doc), simdjson::SUCCESS) << js.str();
  EXPECT_EQ(uint64_t(doc["complete_events"]), 160u);
  simdjson::dom::array rows = doc["rows"];
  EXPECT_EQ(rows.size(), 3u);
  EXPECT_EQ(std::string_view(rows.at(0)["name"]), "function.mm");
  EXPECT_EQ(uint64_t(rows.at(0)["count"]), 100u);
  EXPECT_DOUBLE_EQ(double(rows.at(0)["total_us"]), 5950.0);
  EXPECT_DOUBLE_EQ(double(rows.at(0)["self_us"]), 5950.0);  // nothing nested in these ops
  std::string csv_text = csv.str();
  EXPECT_EQ(std::count(csv_text.begin(), csv_text.end(), '\n'), 4);
  EXPECT_EQ(csv_text.rfind("name,count,self_us,total_us", 0), 0u);
  EXPECT_NE(table.str().find("function.mm"), std::string::npos);
  EXPECT_NE(table.str().find("GFLOP/s"), std::string::npos);
}

TEST(LogHistogram, QuantilesWithinDocumentedError) {
  std::mt19937 rng(3);
  std::lognormal_distribution<double> dist(2.0, 2.5);  // ~1 ns to seconds
  std::vector<double> v;
  LogHistogram h;
  for (int i = 0; i < 100000; ++i) {
    double x = dist(rng);
    v.push_back(x);
    h.add(x);
  }
  std::sort(v.begin(), v.end());
  for (double q : {0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0}) {
    size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
    double exact = v[rank - 1];
    double got = h.quantile(q, v.front(), v.back());
    EXPECT_LE(std::fabs(got - exact) / exact, LogHistogram::kMaxRelativeError) << "q=" << q;
  }
  LogHistogram zeros;
  for (int i = 0; i < 10; ++i) zeros.add(0);
  EXPECT_EQ(zeros.quantile(0.5, 0, 0), 0.0);
}

// Regression: times were doubles of microseconds, so at epoch scale (~1.7e15
// us) everything under a quarter microsecond vanished: these events' span came
// out 0 and their ends collapsed. The writer's three decimals are nanoseconds.
TEST(Summary, EpochTimestampsKeepNanoseconds) {
  TempDir d;
  std::vector<std::string> evs;
  const char* line =
      R"({"id":%d,"name":"tiny","cat":"op","pid":1,"tid":2,"ts":1727387307981693.%03d,"dur":0.%03d,"ph":"X"})";
  char buf[256];
  for (int i = 0; i < 3; ++i) {
    std::snprintf(buf, sizeof buf, line, i, 1 + i, 1 + i);
    evs.push_back(buf);
  }
  write_file(d.file("t.pfw"), pfw_text(evs));
  Summary s = summarize({d.file("t.pfw")}, parse_group_keys("name"), 0, 1);
  ASSERT_EQ(s.rows.size(), 1u);
  // First start .001, last end .003 + .003 = .006: a 5 ns span.
  EXPECT_DOUBLE_EQ(s.span_us, 0.005);
  EXPECT_DOUBLE_EQ(s.rows[0].total_us, 0.006);
  EXPECT_DOUBLE_EQ(s.rows[0].min_us, 0.001);
  EXPECT_DOUBLE_EQ(s.rows[0].max_us, 0.003);
}

// Any args key groups: a schema one (step) and one the schema does not know
// (rank, written as numbers and strings; a list value groups by its JSON),
// alone and combined, on the fast path and on simdjson's (quoted numbers).
TEST(Summary, AnyArgsKeyIsAGroupKey) {
  TempDir d;
  std::vector<std::string> evs;
  int id = 0;
  for (int step = 0; step < 3; ++step)
    for (int i = 0; i <= step; ++i)
      evs.push_back(op_event(id++, "function.mm", 100.0 * id, 1 + step, "forward", "m", -1, -1, 1, 2,
                             "\"step\":" + std::to_string(step) + ",\"rank\":" + (i % 2 ? "\"1\"" : "0")));
  evs.push_back(op_event(id++, "function.mm", 1, 5, "forward", "m", -1, -1, 1, 2, "\"rank\":[0, 1]"));
  evs.push_back(R"({"name":"q","ph":"X","pid":"1","tid":"2","ts":"7","dur":"10","args":{"rank":"\u0031","step":"9"}})");
  write_file(d.file("t.pfw"), pfw_text(evs));
  std::vector<std::string> files = {d.file("t.pfw")};

  Summary by_step = summarize(files, parse_group_keys("args.step"), 0, 2);
  ASSERT_EQ(by_step.keys[0].label, "args.step");
  std::map<std::string, std::pair<uint64_t, double>> got;
  for (auto& r : by_step.rows) got[r.key[0]] = {r.count, r.total_us};
  std::map<std::string, std::pair<uint64_t, double>> want = {
      {"0", {1, 1}}, {"1", {2, 4}}, {"2", {3, 9}}, {"9", {1, 10}}, {"(none)", {1, 5}}};
  EXPECT_EQ(got, want);
  // The schema's args also answer to their bare name, with the same groups.
  Summary bare = summarize(files, parse_group_keys("step"), 0, 1);
  EXPECT_EQ(bare.rows.size(), by_step.rows.size());

  Summary by_rank = summarize(files, parse_group_keys("args.rank"), 0, 2);
  got.clear();
  for (auto& r : by_rank.rows) got[r.key[0]] = {r.count, r.total_us};
  want = {{"0", {4, 9}}, {"1", {3, 15}}, {"[0,1]", {1, 5}}};  // "\u0031" is "1" unescaped; an array without spaces
  EXPECT_EQ(got, want);

  Summary both = summarize(files, parse_group_keys("args.rank,args.step,name"), 0, 2);
  const SummaryRow* r = find_row(both, {"1", "9", "q"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->count, 1u);
  r = find_row(both, {"0", "2", "function.mm"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->count, 2u);
}

// The most args keys a reader captures: eight alone; beside the category
// (which reads args.fhash in one more slot) seven, and eight refused with
// the line that says so.
TEST(Summary, EightArgsKeysAloneSevenBesideTheCategory) {
  TempDir d;
  write_file(d.file("t.pfw"),
             pfw_text({R"({"name":"q","cat":"POSIX","ph":"X","pid":1,"tid":1,"ts":7,"dur":10,"args":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"fhash":"aa"}})"}));
  const std::vector<std::string> files = {d.file("t.pfw")};
  Summary eight = summarize(files, parse_group_keys("args.a,args.b,args.c,args.d,args.e,args.f,args.g,args.h"), 0, 1);
  ASSERT_EQ(eight.rows.size(), 1u);
  EXPECT_EQ(eight.rows[0].key, (std::vector<std::string>{"1", "2", "3", "4", "5", "6", "7", "8"}));
  Summary seven = summarize(files, parse_group_keys("args.a,args.b,args.c,args.d,args.e,args.f,args.g,category"), 0, 1);
  ASSERT_EQ(seven.rows.size(), 1u);
  EXPECT_EQ(seven.rows[0].key.back(), "data");
  Summary with_fhash = summarize(files, parse_group_keys("args.a,args.b,args.c,args.d,args.e,args.f,args.g,args.fhash,category"), 0, 1);
  EXPECT_EQ(with_fhash.rows[0].key, (std::vector<std::string>{"1", "2", "3", "4", "5", "6", "7", "aa", "data"}));
  try {
    parse_group_keys("args.a,args.b,args.c,args.d,args.e,args.f,args.g,args.h,category");
    FAIL() << "eight args keys beside the category";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at most 7 beside category"), std::string::npos) << e.what();
  }
}

// A backward graph is compiled inside the first backward call: its compile
// events carry args.phase "backward" (the graph's), but they are compile work,
// not the backward's run time; by phase they are "compile", with the compile
// events that carry no phase.
TEST(Summary, ByPhaseKeepsCompileWorkOutOfThePhaseItCompiles) {
  TempDir d;
  std::vector<std::string> evs = {
      R"({"name":"dynamo.trace","cat":"compile","ph":"X","pid":1,"tid":1,"ts":0,"dur":100})",
      R"({"name":"graph.backward","cat":"dynamo","ph":"X","pid":1,"tid":1,"ts":200,"dur":70,"args":{"phase":"backward"}})",
      R"({"name":"backend_compile","cat":"compile","ph":"X","pid":1,"tid":1,"ts":300,"dur":50,"args":{"phase":"backward"}})",
      R"({"name":"dftracer.instrument","cat":"compile","ph":"X","pid":1,"tid":1,"ts":310,"dur":20,"args":{"phase":"backward"}})",
      R"({"name":"graph.forward","cat":"dynamo","ph":"X","pid":1,"tid":1,"ts":400,"dur":30,"args":{"phase":"forward"}})"};
  write_file(d.file("t.pfw"), pfw_text(evs));
  std::vector<std::string> files = {d.file("t.pfw")};
  for (const char* key : {"phase", "args.phase"}) {
    Summary s = summarize(files, parse_group_keys(key), 0, 1);
    std::map<std::string, std::pair<uint64_t, double>> got;
    for (auto& r : s.rows) got[r.key[0]] = {r.count, r.self_us};
    std::map<std::string, std::pair<uint64_t, double>> want = {
        {"compile", {3, 150}}, {"backward", {1, 70}}, {"forward", {1, 30}}};
    EXPECT_EQ(got, want) << key;
  }
}

// DFTracer 2.x aggregated rows (numeric ph 3), in microseconds and in a
// file that declares nanoseconds: counted as the events they stand for.
TEST(Summary, AggregatedRowsCountAsTheirEvents) {
  TempDir dir;
  const std::string rows =
      "{\"name\":\"step\",\"cat\":\"C\",\"ts\":1000000,\"ph\":3,\"pid\":1,\"tid\":1,\"args\":{\"dur\":5,\"dft_cnt\":1}}\n"
      "{\"name\":\"step\",\"cat\":\"C\",\"ts\":2000000,\"ph\":3,\"pid\":1,\"tid\":1,"
      "\"args\":{\"dur_max\":40,\"dur_min\":10,\"dur_sum\":80,\"dft_cnt\":4}}\n"
      "{\"id\":1,\"name\":\"step\",\"cat\":\"C\",\"ts\":2500000,\"dur\":7,\"ph\":1,\"pid\":1,\"tid\":1}\n";
  write_file(dir.file("us.pfw"), rows);
  std::string ns = "{\"name\":\"CM\",\"cat\":\"dftracer\",\"pid\":1,\"tid\":1,\"ph\":4,"
                   "\"args\":{\"name\":\"time_metric\",\"value\":\"NS\"}}\n";
  std::string scaled = rows;  // every time x1000: the same events in nanoseconds
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"ts\":1000000,", "\"ts\":1000000000,"}, {"\"ts\":2000000,", "\"ts\":2000000000,"},
           {"\"ts\":2500000,", "\"ts\":2500000000,"}, {"\"dur\":5,", "\"dur\":5000,"},
           {"\"dur_max\":40,", "\"dur_max\":40000,"}, {"\"dur_min\":10,", "\"dur_min\":10000,"},
           {"\"dur_sum\":80,", "\"dur_sum\":80000,"}, {"\"dur\":7,", "\"dur\":7000,"}})
    scaled.replace(scaled.find(from), from.size(), to);
  write_file(dir.file("ns.pfw"), ns + scaled);
  for (const char* name : {"us.pfw", "ns.pfw"}) {
    Summary s = summarize({dir.file(name)}, parse_group_keys("name"), 0, 1);
    SCOPED_TRACE(name);
    EXPECT_EQ(s.complete_events, 6u);
    ASSERT_EQ(s.rows.size(), 1u);
    EXPECT_EQ(s.rows[0].count, 6u);
    EXPECT_DOUBLE_EQ(s.rows[0].total_us, 92.0);
    EXPECT_DOUBLE_EQ(s.rows[0].min_us, 5.0);
    EXPECT_DOUBLE_EQ(s.rows[0].max_us, 40.0);
  }
}

}  // namespace
}  // namespace dftracer::analyze::testing
