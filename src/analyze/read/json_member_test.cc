// The raw-text prefilters give the same answer whatever whitespace and key
// order a line's JSON has: the unit a DFTracer file declares, a line's ts
// (the --from/--to window), a merge output's marker and base, the earliest ts
// merge re-bases on.
#include "json_member.hpp"

#include <gtest/gtest.h>

#include <string>

#include "event_decoder.hpp"
#include "merge.hpp"
#include "trace_files.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze::testing {
namespace {

TEST(JsonMember, FindsTheValueWhateverTheSpacingAroundTheColon) {
  for (std::string line : {R"({"ts":12,"dur":3})", R"({"ts": 12, "dur": 3})", R"({ "ts" : 12 , "dur" : 3 })",
                           "{\"ts\"\t:\n12}"}) {
    size_t v = member_value_at(line, "\"ts\"");
    ASSERT_NE(v, std::string::npos) << line;
    EXPECT_EQ(line.compare(v, 2, "12"), 0) << line;
  }
  // The key's text as a string value is no member; the next one is found.
  std::string s = R"({"name":"ts", "x":{"ts" :5}})";
  size_t v = member_value_at(s, "\"ts\"");
  ASSERT_NE(v, std::string::npos);
  EXPECT_EQ(s[v], '5');
  EXPECT_EQ(member_value_at(R"({"name":"ts"})", "\"ts\""), std::string::npos);
  EXPECT_EQ(member_value_at(R"({"tsx":1})", "\"ts\""), std::string::npos);
  const std::string m = R"({"name" : "time_metric"})";
  EXPECT_TRUE(is_value_of(m, m.find("\"time_metric\""), "\"name\""));
  EXPECT_FALSE(is_value_of(R"({"x":"time_metric"})", 5, "\"name\""));
}

// What DFTracer writes with DFTRACER_TIME_METRIC=NS, as json.dumps, sorted and
// padded writers write it: nanoseconds in each.
TEST(JsonMember, NanosecondDeclarationFoundInEverySpacing) {
  for (std::string cm : {R"({"name":"CM","ph":4,"args":{"name":"time_metric","value":"NS"}})",
                         R"({"name": "CM", "ph": 4, "args": {"name": "time_metric", "value": "NS"}})",
                         R"({"args":{"name":"time_metric","value":"NS"},"name":"CM","ph":4})",
                         R"({ "name" : "CM", "args" : { "name" : "time_metric", "value" : "NS" } })",
                         R"({"args":{"value":"NS","name":"time_metric"},"name":"CM"})"}) {
    EXPECT_TRUE(declares_ns_times("{\"name\": \"HH\"}\n" + cm + "\n")) << cm;
    std::string us = cm;
    us.replace(us.find("\"NS\""), 4, "\"US\"");
    EXPECT_FALSE(declares_ns_times(us + "\n")) << us;
  }
  EXPECT_FALSE(declares_ns_times(R"({"name": "CM", "args": {"name": "model", "value": "NS"}})"));
  EXPECT_FALSE(declares_ns_times(R"({"name": "CM", "args": {"label": "time_metric", "value": "NS"}})"));
}

TEST(JsonMember, LineTsReadWhateverTheSpacing) {
  for (std::string line : {R"({"name":"a","ts":1795280406425524.831,"dur":2})",
                           R"({"name": "a", "ts": 1795280406425524.831, "dur": 2})",
                           R"({ "name" : "a", "ts" : 1795280406425524.831 })",
                           R"({ "name" : "a", "ts" : "1795280406425524.831" })"}) {
    int64_t ns = 0;
    ASSERT_TRUE(line_ts(line, ns)) << line;
    EXPECT_EQ(ns, 1795280406425524831) << line;
  }
}

// A writer that sorts keys puts args before ts: args.ts, a key text inside a
// string and a nested object's ts are not the event's time.
TEST(JsonMember, LineTsIsTheTopLevelMemberWhateverTheKeyOrder) {
  for (std::string line : {R"({"args":{"ts":5000},"cat":"op","dur":10,"name":"a","ph":"X","ts":1000})",
                           R"({"args": {"ts": 5000}, "name": "a", "ts": 1000})",
                           R"({"args":{"k\"ts":5000},"name":"a","ts":1000})",
                           R"({"name":"x\"ts\":5000","ts":1000})",
                           R"({"args":{"shapes":[[1,2]],"o":{"ts":5000}},"ts":1000})",
                           R"({"name":"{[","ts":1000,"args":{"ts":5000}})"}) {
    int64_t ns = 0;
    ASSERT_TRUE(line_ts(line, ns)) << line;
    EXPECT_EQ(ns, 1000000) << line;
  }
  int64_t ns = 0;
  EXPECT_FALSE(line_ts(R"({"args":{"ts":5000},"name":"a"})", ns));
  EXPECT_EQ(top_member_value_at(R"({"a":"ts","b":1})", "\"ts\""), std::string::npos);
}

// The merge base is the earliest event ts, never an args.ts before it.
TEST(JsonMember, MergeBaseSkipsNestedTs) {
  TempDir d;
  write_file(d.file("a.pfw"), "[\n{\"args\":{\"ts\":5},\"name\":\"a\",\"ph\":\"X\",\"ts\":1795280406425600,\"dur\":1}\n"
                              "{\"name\":\"b\",\"ph\":\"X\",\"ts\":1795280406425700,\"dur\":1,\"args\":{\"ts\":7}}\n");
  EXPECT_EQ(earliest_leading_ts_us({d.file("a.pfw")}), 1795280406425600);
}

TEST(JsonMember, MergeOutputKnownAndItsBaseReadWhateverTheSpacing) {
  for (std::string head : {R"({"displayTimeUnit":"ms","otherData":{"dftracer_merge":1,"ts_base_us":1795276806000000},"traceEvents":[)",
                           R"({"displayTimeUnit": "ms", "otherData": {"dftracer_merge": 1, "ts_base_us": 1795276806000000}, "traceEvents": [)",
                           R"({ "otherData" : { "dftracer_merge" : 1, "ts_base_us" : 1795276806000000 }, "traceEvents" : [ )"}) {
    ASSERT_NE(own_output_kind(head), nullptr) << head;
    EXPECT_STREQ(own_output_kind(head), "merge output");
    EXPECT_EQ(merged_ts_base_us(head), 1795276806000000) << head;
  }
}

TEST(JsonMember, MergeBaseFromSpacedTimestamps) {
  TempDir d;
  write_file(d.file("a.pfw"), "[\n{\"name\": \"late\", \"ph\": \"X\", \"ts\": 1795280406425600, \"dur\": 1}\n"
                              "{ \"name\" : \"early\", \"ph\" : \"X\", \"ts\" : 1795280406425524.831, \"dur\" : 1 }\n");
  EXPECT_EQ(earliest_leading_ts_us({d.file("a.pfw")}), 1795280406425524);
}

// The earliest ts is looked for in a file's first MiB: a ts the MiB's end
// cuts ("ts":1795 of "ts":1795280406425524) is not a time.
TEST(JsonMember, MergeBaseIgnoresATimestampCutByTheReadLimit) {
  TempDir d;
  const std::string line = R"({"name":"a","ph":"X","ts":1795280406425524,"dur":1})";
  std::string text = "[\n";
  while (text.size() + line.size() + 1 < (size_t{1} << 20)) text += line + "\n";
  const std::string cut = R"({"name":"a","ph":"X","ts":1795280406425524)";
  // Pad so the MiB ends four digits into the last line's ts.
  const size_t at = (size_t{1} << 20) - (cut.find("\"ts\":") + 5 + 4);
  text.append(at - text.size(), ' ');
  text += cut + ",\"dur\":1}\n";
  ASSERT_EQ(text.substr((size_t{1} << 20) - 4, 4), "1795");
  write_file(d.file("a.pfw"), text);
  EXPECT_EQ(earliest_leading_ts_us({d.file("a.pfw")}), 1795280406425524);
}

// The same for a ts in exponent form whose exponent the MiB's end cuts
// ("ts":1.79528040642552e1 of ...e15).
TEST(JsonMember, MergeBaseIgnoresAnExponentCutByTheReadLimit) {
  TempDir d;
  const std::string line = R"({"name":"a","ph":"X","ts":1795280406425524,"dur":1})";
  std::string text = "[\n";
  while (text.size() + line.size() + 1 < (size_t{1} << 20)) text += line + "\n";
  const std::string cut = R"({"name":"a","ph":"X","ts":1.79528040642552e1)";
  const size_t at = (size_t{1} << 20) - cut.size();
  text.append(at - text.size(), ' ');
  text += cut + "5,\"dur\":1}\n";
  ASSERT_EQ(text.substr((size_t{1} << 20) - 2, 3), "e15");
  write_file(d.file("a.pfw"), text);
  EXPECT_EQ(earliest_leading_ts_us({d.file("a.pfw")}), 1795280406425524);
}

// An array or object value reads as its compact text, as our writer writes
// it: `--by shapes` and `--by args.<key>` group a spaced trace's events as
// the compact one's. A string's content stays as written.
TEST(JsonMember, ArrayAndObjectValuesReadCompactWhateverTheSpacing) {
  EventDecoder dec;
  ArgCapture c;
  c.keys[c.size++] = "dims";
  c.keys[c.size++] = "label";
  dec.capture_args(c);
  for (std::string s : {R"({"name":"a","ph":"X","args":{"shapes":[[4,64],["a b"]],"dims":{"x":[1,2]},"label":"[1, 2]"}})",
                        R"({"name": "a", "ph": "X", "args": {"shapes": [[4, 64], ["a b"]], "dims": {"x": [1, 2]}, "label": "[1, 2]"}})",
                        "{ \"name\" : \"a\", \"ph\" : \"X\", \"args\" : { \"shapes\" : [ [ 4,\t64 ], [ \"a b\" ] ],"
                        " \"dims\" : {\n\"x\" : [ 1 , 2 ] }, \"label\" : \"[1, 2]\" } }"}) {
    std::string padded = s;
    padded.resize(s.size() + kLinePadding, ' ');
    Event ev;
    ASSERT_EQ(dec.decode(std::string_view(padded.data(), s.size()), padded.size(), ev), DecodeStatus::Ok) << s;
    EXPECT_EQ(ev.shapes, R"([[4,64],["a b"]])") << s;
    EXPECT_EQ(ev.extra_args[0], R"({"x":[1,2]})") << s;
    EXPECT_EQ(ev.extra_args[1], "[1, 2]") << s;
  }
}

}  // namespace
}  // namespace dftracer::analyze::testing
