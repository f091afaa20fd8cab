// Every field of a decoded event as one line of text: the fast-path decoder
// and simdjson must agree on it (fast_path_test.cc, fuzz/line_member_fuzzer.cc).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "event_decoder.hpp"

namespace dftracer::analyze {

inline std::string describe(const Event& e, DecodeStatus st) {
  char nums[256];
  std::snprintf(nums, sizeof nums, "st=%d pid=%lld tid=%lld ts=%lld/%d dur=%lld/%d flops=%a/%d bytes=%a/%d",
                static_cast<int>(st), static_cast<long long>(e.pid), static_cast<long long>(e.tid),
                static_cast<long long>(e.ts_ns), e.has_ts, static_cast<long long>(e.dur_ns), e.has_dur, e.flops,
                e.has_flops, e.bytes, e.has_bytes);
  std::string out = nums;
  for (std::string_view f : {e.name, e.cat, e.ph, e.pid_text, e.tid_text, e.module, e.phase, e.graph, e.meta_name}) {
    out += " [";
    out.append(f.data(), f.size());
    out += "]";
  }
  return out;
}

}  // namespace dftracer::analyze
