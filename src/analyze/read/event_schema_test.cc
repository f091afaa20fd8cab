// The field tables (event_schema.hpp) against the code that is not generated
// from them: every field of the tables, written in a line, must come out of
// both decoders in its Event member, and every text field must be a group key.
// A field added to the tables without decoder support fails here.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "event_decoder.hpp"
#include "event_schema.hpp"
#include "summary.hpp"

namespace dftracer::analyze {
namespace {

// A JSON value of each kind, and the check that the Event holds it.
#define DFT_VALUE_Text(m) "\"v_" #m "\""
#define DFT_VALUE_Json(m) "[\"v_" #m "\", 1]"
#define DFT_VALUE_Number(m) "42.5"
#define DFT_VALUE_Id(m) "77"
#define DFT_VALUE_Time(m) "1.5"
#define DFT_CHECK_Text(m) EXPECT_EQ(ev.m, "v_" #m) << line;
#define DFT_CHECK_Json(m) EXPECT_EQ(ev.m, "[\"v_" #m "\",1]") << line;  // handed on without whitespace
#define DFT_CHECK_Number(m) \
  EXPECT_TRUE(ev.has_##m) << line; \
  EXPECT_EQ(ev.m, 42.5) << line;
#define DFT_CHECK_Id(m)           \
  EXPECT_EQ(ev.m, 77) << line;    \
  EXPECT_EQ(ev.m##_text, "77") << line;
#define DFT_CHECK_Time(m)          \
  EXPECT_TRUE(ev.has_##m) << line; \
  EXPECT_EQ(ev.m##_ns, 1500) << line;

// The line with `key` set (top level or in args) and the required name/ph.
std::string line_with(const std::string& key, const std::string& value, bool in_args) {
  std::string member = "\"" + key + "\":" + value;
  std::string head = key == "name" && !in_args ? "" : "\"name\":\"n\",";
  if (key != "ph" || in_args) head += "\"ph\":\"X\",";
  return in_args ? "{" + head + "\"args\":{" + member + "}}" : "{" + head + member + "}";
}

void decode_both(const std::string& text, const std::function<void(const Event&)>& check) {
  EventDecoder dec;
  Event ev;
  std::string padded = text;
  padded.resize(text.size() + kLinePadding, ' ');
  std::string_view line(padded.data(), text.size());
  ASSERT_EQ(dec.decode(line, padded.size(), ev), DecodeStatus::Ok) << text;
  check(ev);
  ASSERT_EQ(dec.decode_with_simdjson(line, padded.size(), ev), DecodeStatus::Ok) << text;
  check(ev);
}

TEST(EventSchema, EveryFieldReachesItsEventMemberInBothDecoders) {
  int fields = 0;
#define DFT_X(member, key, kind, column)                                          \
  {                                                                             \
    std::string line = line_with(key, DFT_VALUE_##kind(member), IN_ARGS);       \
    decode_both(line, [&line](const Event& ev) { DFT_CHECK_##kind(member) }); \
    ++fields;                                                                   \
  }
#define IN_ARGS false
  DFT_EVENT_FIELDS(DFT_X)
#undef IN_ARGS
#define IN_ARGS true
  DFT_ARG_FIELDS(DFT_X)
#undef IN_ARGS
#undef DFT_X
  EXPECT_GE(fields, 18);
}

TEST(EventSchema, EveryTextFieldIsAGroupKeyAndArgsKeysToo) {
  // Top-level text fields by their key; args fields by key and as args.<key>.
#define DFT_X(member, key, kind, column)                                               \
  if (std::string(#kind) != "Number" && std::string(#kind) != "Time") {                \
    auto keys = parse_group_keys(key);                                                 \
    ASSERT_EQ(keys.size(), 1u);                                                        \
    EXPECT_EQ(keys[0].field, Field::member) << key;                                    \
  }
  DFT_EVENT_FIELDS(DFT_X)
#undef DFT_X
#define DFT_X(member, key, kind, column)                                                      \
  if (std::string(#kind) != "Number" && std::string(#column) == "Col") {                      \
    EXPECT_EQ(parse_group_keys(key)[0].field, Field::member) << key;                          \
    EXPECT_EQ(parse_group_keys(std::string("args.") + key)[0].field, Field::member) << key;  \
  }
  DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  auto k = parse_group_keys("args.rank, name");
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].field, Field::arg);
  EXPECT_EQ(k[0].arg, "rank");
  EXPECT_EQ(k[0].label, "args.rank");
  EXPECT_EQ(k[1].field, Field::name);
  for (const char* bad : {"colour", "ts", "dur", "flops", "args.flops", "args.", "", "name,", "args"}) {
    try {
      parse_group_keys(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // one line
      EXPECT_NE(msg.find("args.<key>"), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(parse_group_keys("args.a,args.b,args.c,args.d,args.e,args.f,args.g,args.h,args.i"),
               std::invalid_argument);
}

}  // namespace
}  // namespace dftracer::analyze
