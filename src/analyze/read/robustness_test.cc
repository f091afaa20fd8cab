// Bad input is skipped and counted, never a crash; a file cut anywhere keeps
// every complete event before the cut.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

std::vector<std::string> events(int n) {
  std::vector<std::string> evs;
  for (int i = 0; i < n; ++i) evs.push_back(op_event(i, "e" + std::to_string(i), 1000 + i, 1 + i % 3));
  return evs;
}

// The names read must be e0..e{k-1} exactly: a prefix, each once.
size_t prefix_length(const std::multiset<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names.count("e" + std::to_string(i)) != 1) return SIZE_MAX;
  return names.size();
}

TEST(Robustness, GarbageHalfLinesWrongTypesAndEmptyFiles) {
  TempDir d;
  std::string text = "[\n" + op_event(0, "e0", 1, 1) + ",\n" + "garbage that is not json\n" +
                     R"({"name":"e1","ph":"X","ts":"x","dur":2},)" + "\n" + op_event(1, "e1", 2, 1) + ",\n" +
                     "\x01\x02\xff\xfe binary\n" + op_event(2, "e2", 3, 1).substr(0, 40) + "\n";
  write_file(d.file("bad.pfw"), text);
  write_file(d.file("empty.pfw"), "");
  write_file(d.file("empty.pfw.gz"), "");
  write_file(d.file("notgzip.pfw.gz"), "this is not gzip at all\n");
  Collected c = collect({d.file("bad.pfw"), d.file("empty.pfw"), d.file("empty.pfw.gz"), d.file("notgzip.pfw.gz")});
  EXPECT_EQ(c.names, (std::multiset<std::string>{"e0", "e1"}));
  EXPECT_EQ(c.stats.malformed, 3u);   // garbage, binary, half line
  EXPECT_EQ(c.stats.bad_fields, 1u);  // "ts":"x"
  EXPECT_EQ(c.stats.empty_files, 2u);
  EXPECT_EQ(c.stats.corrupt_members, 1u);
  EXPECT_NE(c.stats.problems_line().find("3 malformed or partial lines"), std::string::npos) << c.stats.problems_line();
}

TEST(Robustness, PlainFileCutAtEveryOffsetKeepsCompleteEvents) {
  TempDir d;
  auto evs = events(60);
  std::string text = pfw_text(evs);
  // Where each event's object ends: it is complete once its "}" is in the file.
  std::vector<size_t> ends;
  size_t pos = 2;
  for (auto& e : evs) {
    ends.push_back(pos + e.size());
    pos += e.size() + (&e == &evs.back() ? 1 : 2);
  }
  std::string p = d.file("cut.pfw");
  // Every offset of the first few lines, then every 7th byte, plus each
  // object's end and the bytes around it.
  std::set<size_t> cuts;
  for (size_t cut = 0; cut <= text.size(); cut += cut < 1200 ? 1 : 7) cuts.insert(cut);
  for (size_t e : ends)
    for (size_t c : {e - 1, e, e + 1, e + 2}) cuts.insert(std::min(c, text.size()));
  cuts.insert(text.size());
  for (size_t cut : cuts) {
    write_file(p, text.substr(0, cut));
    Collected c = collect({p}, 2, 256);
    size_t want = std::upper_bound(ends.begin(), ends.end(), cut) - ends.begin();
    ASSERT_EQ(prefix_length(c.names), want) << "cut at " << cut;
    ASSERT_LE(c.stats.malformed, 1u) << "cut at " << cut;  // at most the one half line
  }
}

TEST(Robustness, GzipCutAtArbitraryOffsetsKeepsCompleteMembers) {
  TempDir d;
  auto evs = events(400);
  std::string text = pfw_text(evs);
  for (bool index : {true, false}) {
    std::string full = d.file(index ? "full_i.pfw.gz" : "full_n.pfw.gz");
    std::vector<size_t> offsets = write_gz(full, text, 25, index);
    std::string data = read_file(full);
    std::string idx = index ? read_file(full + ".idx") : "";
    std::mt19937 rng(42);
    std::vector<size_t> cuts;
    for (size_t o : offsets)
      for (size_t delta : {0, 1, 2, 9, 10, 11, 18})
        if (o + delta <= data.size()) cuts.push_back(o + delta);
    for (int i = 0; i < 150; ++i) cuts.push_back(rng() % (data.size() + 1));
    std::string p = d.file(index ? "cut_i.pfw.gz" : "cut_n.pfw.gz");
    for (size_t cut : cuts) {
      write_file(p, data.substr(0, cut));
      if (index) write_file(p + ".idx", idx);  // an index that runs past the cut
      Collected c = collect({p}, 2, 1);
      size_t complete_members = std::upper_bound(offsets.begin(), offsets.end(), cut) - offsets.begin();
      // Members entirely before the cut: every one of their events is there.
      size_t members_done = complete_members ? complete_members - 1 : 0;
      if (cut == data.size()) members_done = offsets.size();
      size_t got = prefix_length(c.names);
      ASSERT_NE(got, SIZE_MAX) << "not a prefix, cut at " << cut;
      // 25 lines a member; the first member's first line is "[".
      size_t want_min = members_done ? std::min<size_t>(members_done * 25 - 1, evs.size()) : 0;
      ASSERT_GE(got, want_min) << "cut at " << cut;
      ASSERT_LE(c.stats.truncated_members + c.stats.corrupt_members, 1u) << "cut at " << cut;
    }
  }
}

TEST(Robustness, CorruptMemberInTheMiddleKeepsTheOthers) {
  TempDir d;
  auto evs = events(100);
  std::string p = d.file("c.pfw.gz");
  std::vector<size_t> offsets = write_gz(p, pfw_text(evs), 10, false);
  std::string data = read_file(p);
  // Damage the deflate data of the 5th member (lines 40..49 minus the "[" line).
  for (size_t i = offsets[4] + 20; i < offsets[4] + 60; ++i) data[i] = static_cast<char>(data[i] ^ 0x5a);
  write_file(p, data);
  Collected c = collect({p}, 2, 1);
  EXPECT_GE(c.stats.corrupt_members, 1u);
  EXPECT_GE(c.names.size(), 85u);
  EXPECT_LT(c.names.size(), 100u);
  // Everything outside the damaged member is there.
  for (int i = 0; i < 39; ++i) EXPECT_EQ(c.names.count("e" + std::to_string(i)), 1u) << i;
  for (int i = 50; i < 100; ++i) EXPECT_EQ(c.names.count("e" + std::to_string(i)), 1u) << i;
}

TEST(Robustness, MismatchedIndexFallsBackToScanning) {
  TempDir d;
  auto evs = events(200);
  std::string p = d.file("x.pfw.gz");
  write_gz(p, pfw_text(evs), 20, false);
  write_file(p + ".idx", "0 10 100 1\n17 99 1 1\n");
  Collected c = collect({p}, 2, 1);
  EXPECT_EQ(c.stats.bad_indexes, 1u);
  EXPECT_EQ(prefix_length(c.names), 200u);
  write_file(p + ".idx", "garbage\n");
  c = collect({p}, 2, 1);
  EXPECT_EQ(prefix_length(c.names), 200u);
}

TEST(Robustness, RandomBytesNeverCrash) {
  TempDir d;
  std::mt19937 rng(7);
  std::string base = pfw_text(events(50));
  std::string gz = gzip_member(base);
  for (int round = 0; round < 60; ++round) {
    std::string t = round % 2 ? base : gz;
    for (int k = 0; k < 20; ++k) t[rng() % t.size()] = static_cast<char>(rng());
    std::string p = d.file(round % 2 ? "r.pfw" : "r.pfw.gz");
    write_file(p, t);
    Collected c = collect({p}, 2, 64);
    EXPECT_LE(c.names.size(), 50u);
  }
}


// A UTF-8 byte-order mark before the first line, and a Chrome JSON document
// cut short on one line or across pretty-printed lines: every complete
// event is read (each used to read as zero events).
TEST(Robustness, ByteOrderMarkAndCutOneLineDocumentsKeepTheirEvents) {
  TempDir d;
  const std::string bom = "\xEF\xBB\xBF";
  const std::string a = R"({"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"s":"}{]["}})";
  const std::string b = R"({"name":"b","ph":"X","ts":2,"dur":1,"pid":1,"tid":1})";
  const std::string cut = R"({"name":"c","ph":"X","ts":3,"du)";
  struct Case {
    const char* file;
    std::string text;
    std::multiset<std::string> names;
  } cases[] = {
      {"bom_lines.pfw", bom + "[\n" + a + "\n" + b + "\n]\n", {"a", "b"}},
      {"bom_document.json", bom + "{\"traceEvents\":[" + a + "," + b + "]}", {"a", "b"}},
      {"cut_array.json", "[" + a + "," + b + "," + cut, {"a", "b"}},
      {"cut_object.json", "{\"traceEvents\":[" + a + "," + b + "," + cut, {"a", "b"}},
      {"cut_pretty.json", "{\n  \"traceEvents\": [\n    {\n      \"name\": \"p\", \"ph\": \"X\",\n      \"ts\": 5, \"dur\": 1\n    },\n    {\n      \"name\": \"q\",", {"p"}},
  };
  for (const Case& c : cases) {
    write_file(d.file(c.file), c.text);
    Collected got = collect({d.file(c.file)}, 1);
    EXPECT_EQ(got.names, c.names) << c.file;
  }
}

}  // namespace
}  // namespace dftracer::analyze::testing
