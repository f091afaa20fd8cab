// `merge` output is strict JSON with every event, numbers unquoted, and a name
// for every process and thread.
#include <gtest/gtest.h>

#include <set>

#include "merge.hpp"
#include "summary.hpp"
#include "trace_files.hpp"
#include "trace_window.hpp"

namespace dftracer::analyze::testing {
namespace {

struct Parsed {
  size_t x = 0, m = 0;
  std::set<int64_t> named_pids, pids;
  bool numbers_ok = true;
};

Parsed parse_merged(const std::string& text) {
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  auto err = p.parse(simdjson::padded_string(text)).get(doc);
  EXPECT_EQ(err, simdjson::SUCCESS) << "merge output is not strict JSON";
  Parsed r;
  if (err) return r;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    std::string_view ph = e["ph"];
    int64_t pid = 0;
    if (e["pid"].get_int64().get(pid)) r.numbers_ok = false;
    if (ph == "X") {
      ++r.x;
      r.pids.insert(pid);
      if (!e["ts"].is_number() || !e["dur"].is_number()) r.numbers_ok = false;
    } else if (ph == "M") {
      ++r.m;
      if (std::string_view(e["name"]) == "process_name") r.named_pids.insert(pid);
    }
  }
  return r;
}

std::string gunzip(const std::string& gz) {
  z_stream zs{};
  inflateInit2(&zs, 16 + MAX_WBITS);
  std::string out;
  char buf[1 << 16];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&zs);
  EXPECT_EQ(rc, Z_STREAM_END);
  return out;
}

TEST(Merge, ManyFilesIntoOneStrictJsonTrace) {
  TempDir d;
  std::vector<std::string> a, b;
  for (int i = 0; i < 300; ++i) a.push_back(op_event(i, "function.mm", 1e15 + i, 1.5, "forward", "m", 10, 20, 100, 101));
  // Names with quotes, backslashes and newlines must stay escaped.
  b.push_back(R"({"id":1,"name":"we\"ird\\name\n","cat":"x","pid":"200","tid":"201","ts":"5","dur":"2","ph":"X","args":{"fname":"/a\"b"}})");
  b.push_back(R"({"name":"thread_name","ph":"M","pid":200,"tid":201,"args":{"name":"worker"}})");
  write_file(d.file("a.pfw"), pfw_text(a, false));  // cut short: no "]"
  write_gz(d.file("b.pfw.gz"), pfw_text(b), 1, false);
  write_file(d.file("c.pfw"), "[\n{\"name\":\"bad\",\"ph\":\"X\",\"args\":{\"v\":tru}},\n");  // invalid literal
  for (const char* out : {"merged.json", "merged.json.gz"}) {
    MergeResult r = merge_traces({d.file("a.pfw"), d.file("b.pfw.gz"), d.file("c.pfw")}, d.file(out), 2);
    std::string text = read_file(d.file(out));
    if (std::string(out).size() > 5 && std::string(out).substr(std::string(out).size() - 3) == ".gz") text = gunzip(text);
    Parsed p = parse_merged(text);
    EXPECT_EQ(p.x, 301u) << out;
    EXPECT_TRUE(p.numbers_ok) << out;
    EXPECT_EQ(p.pids, (std::set<int64_t>{100, 200}));
    EXPECT_EQ(p.named_pids, (std::set<int64_t>{100, 200})) << "every process gets a process_name";
    EXPECT_EQ(r.stats.malformed, 1u);  // the invalid literal is not copied
    // pid 100 had no thread_name: one added; 200/201 had one already.
    EXPECT_EQ(r.names_added, 3u);
    EXPECT_NE(text.find(R"(we\"ird\\name\n)"), std::string::npos);
  }
}

TEST(Merge, DftracerSamplesMergeToStrictJson) {
  std::string dir = DFTRACER_SAMPLES_DIR;
  ASSERT_TRUE(fs::exists(dir)) << dir;
  TempDir d;
  MergeResult r = merge_traces(expand_inputs({dir}), d.file("m.json"), 2);
  Parsed p = parse_merged(read_file(d.file("m.json")));
  EXPECT_EQ(p.x, 8082u + 1012u);  // complete events of both samples (see samples_test.cc)
  EXPECT_TRUE(p.numbers_ok);      // v1's quoted pid/ts/dur are numbers now
  EXPECT_FALSE(r.stats.any_problem()) << r.stats.problems_line();
}

// DFTracer v1 quotes its numbers, so merge unquotes them; only strings that
// are JSON numbers by JSON's grammar, or the output is not JSON ("007",
// "1.", "-.5" used to be written bare). A file name that is not UTF-8 goes
// into the process_name it labels as U+FFFD, not as raw bytes.
TEST(Merge, OnlyJsonNumbersAreUnquotedAndFileNamesStayUtf8) {
  TempDir d;
  std::vector<std::string> evs;
  const char* odd[] = {"007", "1.", "-.5", "0x1f", "+3", "1e", ".5", "-", "1.5e+3"};
  for (int i = 0; i < 9; ++i)
    evs.push_back(std::string(R"({"name":"e","cat":"x","pid":"12","tid":"12","ts":")") + odd[i] +
                  R"(","dur":")" + odd[i] + R"(","ph":"X"})");
  std::string bad_name = d.file("t\xff\xfe.pfw");  // Linux file names are bytes
  write_file(bad_name, pfw_text(evs));
  MergeResult r = merge_traces({bad_name}, d.file("m.json"), 1, ReadOptions{}, /*epoch_ts=*/true);
  std::string text = read_file(d.file("m.json"));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(simdjson::padded_string(text)).get(doc), simdjson::SUCCESS) << text;
  size_t numbers = 0, strings = 0;
  std::string label;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    if (std::string_view(e["ph"]) == "M") {
      if (std::string_view(e["name"]) == "process_name") label = std::string(std::string_view(e["args"]["name"]));
      continue;
    }
    (e["ts"].is_number() ? numbers : strings) += 1;
  }
  EXPECT_EQ(numbers, 1u);  // 1.5e+3 only
  EXPECT_EQ(strings, 8u);
  EXPECT_NE(label.find("t\xef\xbf\xbd\xef\xbf\xbd.pfw"), std::string::npos) << label;
  EXPECT_EQ(r.events_written, 9u + 2u);  // + process_name, thread_name
}

// Viewers parse ts into doubles (0.25 us apart at epoch microseconds), so the
// outer > inner (a sub-microsecond end apart at epoch scale), then late; inner's ts quoted (DFTracer v1).
std::string nested_epoch_trace() {
  return "[\n"
         R"({"id":1,"name":"outer","cat":"c","pid":7,"tid":7,"ts":1795280406425524.831,"dur":2.573,"ph":"X"},)" "\n"
         R"({"id":2,"name":"inner","cat":"c","pid":7,"tid":7,"ts":"1795280406425527.134","dur":0.07,"ph":"X"},)" "\n"
         R"({"id":3,"name":"late","cat":"c","pid":7,"tid":7,"ts":1795280406425600,"dur":1,"ph":"X"})" "\n]\n";
}

// merge re-bases every ts on one whole-second base, keeping the fraction
// digits exactly; --epoch-ts keeps the input's values.
TEST(Merge, TimestampsAreRebasedExactlyUnlessEpochIsAsked) {
  TempDir d;
  write_file(d.file("a.pfw"), nested_epoch_trace());
  EXPECT_EQ(earliest_leading_ts_us({d.file("a.pfw")}), 1795280406425524);
  MergeResult r = merge_traces({d.file("a.pfw")}, d.file("m.json"), 1);
  const int64_t base = (1795280406 - 3600) * int64_t{1000000};
  EXPECT_EQ(r.ts_base_us, base);
  std::string text = read_file(d.file("m.json"));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(simdjson::padded_string(text)).get(doc), simdjson::SUCCESS);
  int64_t got_base = -1;
  ASSERT_FALSE(doc["otherData"]["ts_base_us"].get(got_base));
  EXPECT_EQ(got_base, base);
  const int64_t rel = 1795280406425524 - base;  // 3600425524
  EXPECT_NE(text.find("\"ts\":" + std::to_string(rel) + ".831"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":" + std::to_string(rel + 3) + ".134"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":" + std::to_string(rel + 76) + ","), std::string::npos) << text;
  // The inner event now nests inside the outer one even in double arithmetic.
  double outer_end = static_cast<double>(rel) + 0.831 + 2.573, inner_end = static_cast<double>(rel + 3) + 0.134 + 0.07;
  EXPECT_LT(inner_end, outer_end);

  MergeResult e = merge_traces({d.file("a.pfw")}, d.file("e.json"), 1, {}, /*epoch_ts=*/true);
  EXPECT_EQ(e.ts_base_us, 0);
  EXPECT_NE(read_file(d.file("e.json")).find("\"ts\":1795280406425524.831"), std::string::npos);
}

// The exponent form is rebased too (it used to be copied unrebased, and
// taken for "1" when finding the base), and a negative fractional ts is
// rebased exactly: -5.25 - base, not -5 - base + 0.25.
TEST(Merge, ExponentAndNegativeFractionalTimestampsAreRebased) {
  TempDir d;
  write_file(d.file("a.pfw"),
             "[\n"
             R"({"name":"a","cat":"c","pid":7,"tid":7,"ts":1.79528040642553e15,"dur":1,"ph":"X"})" "\n"
             R"({"name":"b","cat":"c","pid":7,"tid":7,"ts":1795280406425524,"dur":1,"ph":"X"})" "\n"
             R"({"name":"c","cat":"c","pid":7,"tid":7,"ts":-5.25,"dur":1,"ph":"X"})" "\n]\n");
  EXPECT_EQ(earliest_leading_ts_us({d.file("a.pfw")}), 1795280406425524);
  MergeResult r = merge_traces({d.file("a.pfw")}, d.file("m.json"), 1);
  const int64_t base = (1795280406 - 3600) * int64_t{1000000};
  ASSERT_EQ(r.ts_base_us, base);
  std::string text = read_file(d.file("m.json"));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(simdjson::padded_string(text)).get(doc), simdjson::SUCCESS) << text;
  const int64_t rel = 1795280406425524 - base;
  EXPECT_NE(text.find("\"ts\":" + std::to_string(rel + 6) + ".000"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":" + std::to_string(rel) + ","), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":-" + std::to_string(base + 5) + ".25,"), std::string::npos) << text;
}

TEST(Merge, UnwritableOutputIsAnError) {
  TempDir d;
  write_file(d.file("a.pfw"), pfw_text({op_event(1, "x", 1, 1)}));
  EXPECT_THROW(merge_traces({d.file("a.pfw")}, d.file("no/such/dir/out.json"), 1), InputError);
}


// A merged file read by name is on the clock of the traces it came from (its
// otherData.ts_base_us added back to every ts): the same times, span and
// window as its inputs, whole or cut short. It used to be read as epoch
// microseconds, an hour after 1970, and mixed with its inputs gave a 57-year span.
TEST(Merge, MergedFileReadByNameIsOnItsInputsClock) {
  TempDir d;
  write_file(d.file("a.pfw"), nested_epoch_trace());
  write_file(d.file("b.pfw"),
             "[\n" R"({"id":1,"name":"other","cat":"c","pid":8,"tid":8,"ts":1795280407000000.5,"dur":3,"ph":"X"})" "\n]\n");
  const std::vector<std::string> inputs{d.file("a.pfw"), d.file("b.pfw")};
  MergeResult r = merge_traces(inputs, d.file("m.json.gz"), 2);
  ASSERT_NE(r.ts_base_us, 0);
  const std::string text = gunzip(read_file(d.file("m.json.gz")));
  EXPECT_STREQ(own_output_kind(text.substr(0, 64)), "merge output");  // known from its first bytes
  EXPECT_EQ(merged_ts_base_us(text.substr(0, kOwnOutputHeadBytes)), r.ts_base_us);
  write_file(d.file("m.json"), text);
  write_file(d.file("cut.json"), text.substr(0, text.find("\"late\"")));  // cut short: salvaged event by event

  const TraceTimeRange want = trace_time_range(inputs, 2);
  for (const char* merged : {"m.json.gz", "m.json", "cut.json"}) {
    SCOPED_TRACE(merged);
    const TraceTimeRange got = trace_time_range({d.file(merged)}, 2);
    EXPECT_EQ(got.first_ns, want.first_ns);  // 1795280406425524831, exactly
    if (std::string(merged) != "cut.json") EXPECT_EQ(got.last_end_ns, want.last_end_ns);
    EXPECT_EQ(earliest_leading_ts_us({d.file(merged)}), 1795280406425524);  // merging it again: the same base
  }
  Summary a = summarize(inputs, parse_group_keys("name"), 0, 2);
  Summary m = summarize({d.file("m.json.gz")}, parse_group_keys("name"), 0, 2);
  EXPECT_EQ(m.span_us, a.span_us);
  EXPECT_EQ(m.complete_events, a.complete_events);
  ASSERT_EQ(m.rows.size(), a.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(m.rows[i].key, a.rows[i].key);
    EXPECT_EQ(m.rows[i].self_us, a.rows[i].self_us) << a.rows[i].key[0];
  }
  // An epoch window picks the same events from the merged file as from its inputs.
  ReadOptions ro;
  ro.from_ns = 1795280406425527000;
  ro.to_ns = 1795280406425601000;
  Summary aw = summarize(inputs, parse_group_keys("name"), 0, 2, ro);
  Summary mw = summarize({d.file("m.json")}, parse_group_keys("name"), 0, 2, ro);
  EXPECT_EQ(aw.complete_events, 2u);
  EXPECT_EQ(mw.complete_events, aw.complete_events);
}

}  // namespace
}  // namespace dftracer::analyze::testing
