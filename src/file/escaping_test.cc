// Every string that reaches the file is JSON-escaped: names, categories, keys
// and values with quotes, backslashes, newlines, control characters,
// non-ASCII UTF-8 and invalid bytes all come out as valid JSON. And every
// args object stays one: no blank fragment, no key written twice.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dftracer/dftracer.h"
#include "trace_file.h"

using namespace dftracer_test;

TEST(Escaping, HostileStringsStayValidJson) {
  const std::vector<std::string> hostile = {
      "quote\"inside",
      "back\\slash",
      "new\nline and \r return",
      "tab\tbell\a nul-free ctl \x01\x1f",
      std::string("embedded\0nul", 12),
      "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\xa5",  // café, 日本, 🔥
      "}],\"injected\":1,{",
  };
  std::string dir = temp_dir("esc");
  ASSERT_EQ(dft_init_opt_in((dir + "/e").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  for (size_t i = 0; i < hostile.size(); ++i) {
    const std::string& s = hostile[i];
    dft_id name = dft_intern(s.data(), s.size());
    dft_arg a[2] = {};
    a[0].key = dft_intern(s.data(), s.size());  // hostile key
    a[0].type = DFT_ARG_STR;
    a[0].v.id = name;
    a[1].key = dft_intern_cstr("copied");
    a[1].type = DFT_ARG_BYTES;
    a[1].v.str.ptr = s.data();
    a[1].v.str.len = static_cast<uint32_t>(s.size());
    dft_complete_ns(name, name, 1000 + i, 1, a, 2);
  }
  dft_metadata("meta\"key", "va\nlue");
  dft_set_thread_name("thr\"ead\\");
  dft_finalize();

  std::string text = read_all(path);
  size_t n = 0;
  ASSERT_EQ(finalized_trace_error(text, &n), "");
  auto events = parse_events(event_lines(text));
  size_t found = 0;
  for (const auto& s : hostile) {
    for (const auto& e : events) {
      if (e.name != s) continue;
      ++found;
      EXPECT_EQ(e.cat, s);
      EXPECT_EQ(str_arg(e, "copied"), s);
    }
  }
  EXPECT_EQ(found, hostile.size());
}

TEST(Escaping, InvalidUtf8IsReplacedNotPassedThrough) {
  std::string dir = temp_dir("utf");
  ASSERT_EQ(dft_init_opt_in((dir + "/u").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  const std::string bad = "ab\xff\xfe" "cd\xc3";  // stray bytes and a cut sequence
  dft_complete_ns(dft_intern(bad.data(), bad.size()), dft_intern_cstr("c"), 1, 1, nullptr, 0);
  dft_finalize();
  std::string text = read_all(path);
  ASSERT_EQ(finalized_trace_error(text, nullptr), "");
  bool seen = false;
  for (auto& e : parse_events(event_lines(text)))
    if (e.cat == "c") {
      seen = true;
      EXPECT_EQ(e.name, "ab\xef\xbf\xbd\xef\xbf\xbd" "cd\xef\xbf\xbd");
    }
  EXPECT_TRUE(seen);
}

TEST(Escaping, LongCopiedStringsAreCutOnACharacterBoundary) {
  std::string dir = temp_dir("long");
  ASSERT_EQ(dft_init_opt_in((dir + "/l").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  std::string longs;
  while (longs.size() < DFT_MAX_INLINE_STR + 100) longs += "\xe6\x97\xa5";  // 3-byte chars
  dft_arg a{};
  a.key = dft_intern_cstr("s");
  a.type = DFT_ARG_BYTES;
  a.v.str.ptr = longs.data();
  a.v.str.len = static_cast<uint32_t>(longs.size());
  dft_complete_ns(dft_intern_cstr("long"), dft_intern_cstr("c"), 1, 1, &a, 1);
  dft_finalize();
  std::string text = read_all(path);
  ASSERT_EQ(finalized_trace_error(text, nullptr), "");
  for (auto& e : parse_events(event_lines(text)))
    if (e.name == "long") {
      std::string v = str_arg(e, "s");
      EXPECT_LE(v.size(), static_cast<size_t>(DFT_MAX_INLINE_STR));
      EXPECT_EQ(v.size() % 3, 0u);
      EXPECT_EQ(v, longs.substr(0, v.size()));
    }
}

TEST(Escaping, JsonFragmentsAreCheckedWhenInterned) {
  const char good[] = "\"graph\":3,\"module\":\"enc.0\",\"shapes\":[[1,2],[3]]";
  EXPECT_NE(dft_intern_json_fragment(good, sizeof good - 1), 0u);
  const char bad[] = "\"graph\":3,\"oops";
  testing::internal::CaptureStderr();
  EXPECT_EQ(dft_intern_json_fragment(bad, sizeof bad - 1), 0u);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("dft_intern_json_fragment"), std::string::npos);

  std::string dir = temp_dir("frag");
  ASSERT_EQ(dft_init_opt_in((dir + "/f").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  dft_arg a{};
  a.type = DFT_ARG_JSON;
  a.v.id = dft_intern_json_fragment(good, sizeof good - 1);
  dft_complete_ns(dft_intern_cstr("frag"), dft_intern_cstr("c"), 1, 1, &a, 1);
  dft_finalize();
  std::string text = read_all(path);
  ASSERT_EQ(finalized_trace_error(text, nullptr), "");
  for (auto& e : parse_events(event_lines(text)))
    if (e.name == "frag") {
      EXPECT_EQ(int_arg(e, "graph"), 3);
      EXPECT_EQ(str_arg(e, "module"), "enc.0");
    }
}

// " " used to be accepted and written after a comma: "args":{"hhash":"..", }.
TEST(Escaping, BlankJsonFragmentsAreRejected) {
  testing::internal::CaptureStderr();
  for (const char* blank : {" ", "\t\n ", "\r"}) EXPECT_EQ(dft_intern_json_fragment(blank, strlen(blank)), 0u) << blank;
  testing::internal::GetCapturedStderr();
  EXPECT_NE(dft_intern_json_fragment(" \"a\":1 ", 7), 0u) << "blanks around members are fine";

  std::string dir = temp_dir("blank");
  ASSERT_EQ(dft_init_opt_in((dir + "/b").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  dft_arg a{};
  a.type = DFT_ARG_JSON;
  a.v.id = dft_intern_json_fragment(" ", 1);
  dft_complete_ns(dft_intern_cstr("blank"), dft_intern_cstr("c"), 1, 1, &a, 1);
  dft_finalize();
  EXPECT_EQ(finalized_trace_error(read_all(path), nullptr), "");
}

namespace {

int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

// Every event's "hhash" is the host hash; a user arg or fragment member of
// that name used to be written as a second "hhash" key in the same object.
TEST(Escaping, AUserHhashArgIsKeptAsUserHhashNotWrittenTwice) {
  std::string dir = temp_dir("hhash");
  ScopedEnv full("DFTRACER_INC_METADATA", "1");  // ours in every event's args
  ASSERT_EQ(dft_init_opt_in((dir + "/h").c_str(), nullptr, -1), 0);
  std::string path = dft_trace_path();
  dft_arg a{};
  a.key = dft_intern_cstr("hhash");
  a.type = DFT_ARG_STR;
  a.v.id = dft_intern_cstr("mine");
  dft_complete_ns(dft_intern_cstr("user_arg"), dft_intern_cstr("c"), 1, 1, &a, 1);
  const char frag[] = "\"hhash\":\"frag\",\"x\":{\"hhash\":1}";  // a nested "hhash" is another object's key
  dft_arg f{};
  f.type = DFT_ARG_JSON;
  f.v.id = dft_intern_json_fragment(frag, sizeof frag - 1);
  ASSERT_NE(f.v.id, 0u);
  dft_complete_ns(dft_intern_cstr("user_fragment"), dft_intern_cstr("c"), 1, 1, &f, 1);
  dft_finalize();

  std::string text = read_all(path);
  ASSERT_EQ(finalized_trace_error(text, nullptr), "");
  std::string host_hash;
  int seen = 0;
  for (auto& e : parse_events(event_lines(text))) {
    if (e.name == "HH") host_hash = str_arg(e, "value");
    if (e.name != "user_arg" && e.name != "user_fragment") continue;
    ++seen;
    SCOPED_TRACE(e.args_json);
    EXPECT_EQ(occurrences(e.args_json, "\"hhash\":"), e.name == "user_arg" ? 1 : 2);  // ours (+ the nested one)
    EXPECT_EQ(str_arg(e, "hhash"), host_hash);
    EXPECT_EQ(str_arg(e, "user_hhash"), e.name == "user_arg" ? "mine" : "frag");
  }
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(host_hash.size(), 16u);
}
