// The intern table is bounded: a program that names every
// event differently must not grow the tracer's memory without bound. Past
// DFTRACER_INTERN_CAP, names recorded through dft_complete_*_named are copied
// into their records; the trace reads back the same either way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "dftracer/dftracer.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

std::string numbered(const char* stem, uint64_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%llu", stem, static_cast<unsigned long long>(i));
  return buf;
}

}  // namespace

// 10^6 distinct names (scaled) with a cap of 1,000: the table refuses new
// names past the cap, every event is still in the file with its own name,
// the refusals are counted, and RSS grows by far less than the ~100 MB an
// unbounded table takes for that many names. (The pool is kept small so that
// its chunks do not hide the table's growth.)
TEST(InternCap, AMillionDistinctNamesKeepMemoryBounded) {
  std::string dir = temp_dir("cap");
  ScopedEnv cap("DFTRACER_INTERN_CAP", "1000");
  ScopedEnv buf("DFTRACER_BUFFER_SIZE", "4M");
  ScopedEnv chunk("DFTRACER_CHUNK_SIZE", "64K");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  const dft_id cat = dft_intern_cstr("test");
  const uint64_t n = scaled(1000000);

  // Warm up past the cap, so the baseline includes the pool and the table
  // at its cap, then measure what a million more names cost.
  uint64_t i = 0;
  for (; i < 5000; ++i) {
    std::string name = numbered("op", i);
    dft_complete_ns_named(name.data(), name.size(), cat, 1700000000000000000ull + i * 1000, 500, nullptr, 0);
  }
  dft_flush();
  const uint64_t rss_before = rss_bytes();
  for (; i < n; ++i) {
    std::string name = numbered("op", i);
    dft_complete_ns_named(name.data(), name.size(), cat, 1700000000000000000ull + i * 1000, 500, nullptr, 0);
  }
  dft_flush();
  const uint64_t growth = rss_bytes() - std::min(rss_bytes(), rss_before);
  EXPECT_LT(growth, uint64_t{24} << 20) << "RSS grew by " << (growth >> 20) << " MiB over " << n << " names";

  EXPECT_EQ(dft_intern_bounded("never-seen-before", 17), 0u) << "the table took a name past its cap";
  dft_stats st{};
  dft_get_stats(&st);
  EXPECT_GE(st.names_inline, n - 1000);
  EXPECT_LE(st.names_inline, n);
  dft_finalize();

  std::vector<std::string> lines = event_lines(read_all(path));
  std::vector<bool> seen(n, false);
  uint64_t found = 0;
  simdjson::dom::parser parser;
  for (const std::string& line : lines) {
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(line).get(e), simdjson::SUCCESS) << line;
    std::string_view name, c;
    if (e["cat"].get(c) != simdjson::SUCCESS || c != "test") continue;
    ASSERT_EQ(e["name"].get(name), simdjson::SUCCESS) << line;
    ASSERT_EQ(name.substr(0, 3), "op-") << line;
    uint64_t k = std::stoull(std::string(name.substr(3)));
    ASSERT_LT(k, n);
    EXPECT_FALSE(seen[k]) << "twice: " << name;
    seen[k] = true;
    ++found;
  }
  EXPECT_EQ(found, n);
}

// Inline names are written exactly as interned ones: escaped, invalid UTF-8
// replaced, cut at DFT_MAX_INLINE_STR on a character boundary, alongside
// copied-string args, from both the tick and the nanosecond entry points.
TEST(InternCap, InlineNamesAreWrittenLikeInternedOnes) {
  std::string dir = temp_dir("cap");
  ScopedEnv cap("DFTRACER_INTERN_CAP", "0");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  const dft_id cat = dft_intern_cstr("test");
  const dft_id key = dft_intern_cstr("file");

  const std::string quoted = "say \"hi\"\n\tback\\slash";
  const std::string bad_utf8 = std::string("bad\xff") + "end";
  const std::string long_name(DFT_MAX_INLINE_STR + 100, 'x');
  dft_arg arg{};
  arg.key = key;
  arg.type = DFT_ARG_BYTES;
  arg.v.str.ptr = "/data/f.bin";
  arg.v.str.len = 11;
  uint64_t t0 = dft_ticks();
  dft_complete_ticks_named(quoted.data(), quoted.size(), cat, t0, t0 + 10, &arg, 1);
  dft_complete_ns_named(bad_utf8.data(), bad_utf8.size(), cat, 1700000000000000000ull, 2000, nullptr, 0);
  dft_complete_ns_named(long_name.data(), long_name.size(), cat, 1700000000000000000ull, 2000, &arg, 1);
  dft_complete_ns_named("", 0, cat, 1700000000000000000ull, 2000, nullptr, 0);
  dft_stats st{};
  dft_get_stats(&st);
  EXPECT_EQ(st.names_inline, 4u);
  dft_finalize();

  std::string text = read_all(path);
  size_t elements = 0;
  ASSERT_EQ(finalized_trace_error(text, &elements), "");
  std::vector<Event> events;
  for (const Event& e : parse_events(event_lines(text)))
    if (e.cat == "test") events.push_back(e);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].name, quoted);
  EXPECT_EQ(str_arg(events[0], "file"), "/data/f.bin");
  EXPECT_EQ(events[1].name, "bad\xEF\xBF\xBD" "end");
  EXPECT_EQ(events[1].dur, 2.0);
  EXPECT_EQ(events[2].name, std::string(DFT_MAX_INLINE_STR, 'x'));
  EXPECT_EQ(str_arg(events[2], "file"), "/data/f.bin");
  EXPECT_EQ(events[3].name, "");
}

// Under the cap the named entry points intern: the ordinary record, no
// inline copies, and a known name is found whatever the cap.
TEST(InternCap, NamesUnderTheCapAreInterned) {
  std::string dir = temp_dir("cap");
  ScopedEnv cap("DFTRACER_INTERN_CAP", "100000");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const dft_id cat = dft_intern_cstr("test");
  for (int i = 0; i < 10; ++i) dft_complete_ns_named("step", 4, cat, 1700000000000000000ull, 1000, nullptr, 0);
  dft_stats st{};
  dft_get_stats(&st);
  EXPECT_EQ(st.names_inline, 0u);
  EXPECT_EQ(dft_intern_bounded("step", 4), dft_intern_cstr("step"));
  dft_finalize();
}

namespace {

dft_arg key_arg(const std::string& key) {  // DFT_ARG_KEY: names the next arg
  dft_arg a{};
  a.type = DFT_ARG_KEY;
  a.v.str.ptr = key.data();
  a.v.str.len = static_cast<uint32_t>(key.size());
  return a;
}

}  // namespace

// Arg keys past the cap travel as DFT_ARG_KEY slots, each naming the arg
// after it, with a value of any type; instants and metadata named by a
// one-off key take the inline-name path too. The line is the same JSON an
// interned key or name gives, and every copy is counted.
TEST(InternCap, InlineArgKeysInstantAndMetadataNames) {
  std::string dir = temp_dir("cap");
  ScopedEnv cap("DFTRACER_INTERN_CAP", "0");
  ASSERT_EQ(dft_init_opt_in((dir + "/t").c_str(), nullptr, -1), 0);
  const std::string path = dft_trace_path();
  const dft_id cat = dft_intern_cstr("test");
  const std::string k1 = "file \"7\"", k2 = "step-7", k3 = std::string(DFT_MAX_INLINE_STR + 5, 'k');
  dft_arg args[7] = {key_arg(k1), {}, key_arg(k2), {}, key_arg(k3), {}, key_arg("dangling")};
  args[1].type = DFT_ARG_BYTES;
  args[1].v.str.ptr = "/data/f7.bin";
  args[1].v.str.len = 12;
  args[3].type = DFT_ARG_INT;
  args[3].v.i = -7;
  args[5].type = DFT_ARG_BOOL;
  args[5].v.i = 1;
  dft_complete_ns(dft_intern_cstr("keyed"), cat, 1700000000000000000ull, 1000, args, 7);
  dft_instant_named("instant-7", 9, cat, args + 2, 2);
  dft_metadata("meta-7", "v7");
  dft_stats st{};
  dft_get_stats(&st);
  EXPECT_EQ(st.names_inline, 4u /* keys */ + 2u /* key again, instant */ + 1u /* metadata */);
  dft_finalize();

  std::string text = read_all(path);
  size_t elements = 0;
  ASSERT_EQ(finalized_trace_error(text, &elements), "");
  simdjson::dom::parser parser;
  int found = 0;
  for (const std::string& line : event_lines(text)) {
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(line).get(e), simdjson::SUCCESS) << line;
    std::string_view name;
    ASSERT_EQ(e["name"].get(name), simdjson::SUCCESS) << line;
    simdjson::dom::object a;
    if (name == "keyed") {
      ASSERT_EQ(e["args"].get(a), simdjson::SUCCESS) << line;
      std::string_view s;
      int64_t i = 0;
      bool b = false;
      EXPECT_EQ(a[k1].get(s), simdjson::SUCCESS) << line;
      EXPECT_EQ(s, "/data/f7.bin");
      EXPECT_EQ(a[k2].get(i), simdjson::SUCCESS) << line;
      EXPECT_EQ(i, -7);
      EXPECT_EQ(a[std::string(DFT_MAX_INLINE_STR, 'k')].get(b), simdjson::SUCCESS) << line;
      EXPECT_TRUE(b);
      EXPECT_EQ(a["dangling"].error(), simdjson::NO_SUCH_FIELD) << line;
      ++found;
    } else if (name == "instant-7") {
      std::string_view ph;
      int64_t i = 0;
      EXPECT_EQ(e["ph"].get(ph), simdjson::SUCCESS);
      EXPECT_EQ(ph, "i");
      ASSERT_EQ(e["args"].get(a), simdjson::SUCCESS) << line;
      EXPECT_EQ(a[k2].get(i), simdjson::SUCCESS) << line;
      EXPECT_EQ(i, -7);
      ++found;
    } else if (name == "meta-7") {
      std::string_view v;
      ASSERT_EQ(e["args"].get(a), simdjson::SUCCESS) << line;
      EXPECT_EQ(a["value"].get(v), simdjson::SUCCESS) << line;
      EXPECT_EQ(v, "v7");
      ++found;
    }
  }
  EXPECT_EQ(found, 3);
}
