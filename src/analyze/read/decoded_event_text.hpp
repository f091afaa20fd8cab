// Every field of a decoded event as one line of text: the fast-path decoder
// and simdjson must agree on it (fast_path_test.cc, fuzz/line_member_fuzzer.cc).
// Generated from the field tables, so a new field is compared without more code.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "event_decoder.hpp"

namespace dftracer::analyze {

// Args keys outside the schema that the comparisons also capture (as a
// `--by args.<key>` would): DFTracer's, torch.profiler's, nested values.
inline ArgCapture compared_extra_args() {
  ArgCapture c;
  for (const char* k : {"hostname", "fname", "Input Dims", "nested", "s", "size", "seq_nr", "hhash"})
    c.keys[c.size++] = k;
  return c;
}

inline std::string describe(const Event& e, DecodeStatus st) {
  std::string out = "st=" + std::to_string(static_cast<int>(st));
  auto text = [&out](const char* name, std::string_view v) {
    out += std::string(" ") + name + "=[";
    out.append(v.data(), v.size());
    out += "]";
  };
  auto number = [&out](const char* name, double v, bool has) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s=%a/%d", name, v, has);
    out += buf;
  };
#define DFT_DESCRIBE_Text(m) text(#m, e.m);
#define DFT_DESCRIBE_Json(m) text(#m, e.m);
#define DFT_DESCRIBE_Number(m) number(#m, e.m, e.has_##m);
#define DFT_DESCRIBE_Id(m)                                     \
  out += " " #m "=" + std::to_string(static_cast<long long>(e.m)); \
  text(#m "_text", e.m##_text);
#define DFT_DESCRIBE_Time(m) \
  out += " " #m "=" + std::to_string(static_cast<long long>(e.m##_ns)) + "/" + std::to_string(e.has_##m);
#define DFT_X(member, key, kind, column) DFT_DESCRIBE_##kind(member)
  DFT_EVENT_FIELDS(DFT_X)
  DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  for (std::string_view v : e.extra_args) text("extra", v);
  return out;
}

}  // namespace dftracer::analyze
