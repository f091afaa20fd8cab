// One decoded trace event, as a view into the parser's buffers.
//
// Every string_view is valid only until the next line is decoded by the same
// EventDecoder: consumers copy what they keep (aggregators key by value).
// The members come from the field tables in event_schema.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "event_schema.hpp"

namespace dftracer::analyze {

// The most args keys beyond the schema's that one reader captures at a time
// (`--by args.a,args.b`: group keys are few).
inline constexpr size_t kMaxExtraArgs = 8;

// Members per field kind (see event_schema.hpp).
//   pid/tid: the number when the field is a number or a numeric string (DFTracer
//   v1 quotes them); pid_text/tid_text always hold the decimal or the original
//   string, which is what grouping uses (torch.profiler writes some string pids).
//   ts/dur: nanoseconds, exact (trace_time.hpp): the file writes microseconds
//   with up to three decimals, which a double of epoch microseconds cannot hold.
#define DFT_EVENT_MEMBER_Text(m) std::string_view m;
#define DFT_EVENT_MEMBER_Json(m) std::string_view m;
#define DFT_EVENT_MEMBER_Number(m) \
  double m = 0;                    \
  bool has_##m = false;
#define DFT_EVENT_MEMBER_Id(m) \
  int64_t m = 0;               \
  std::string_view m##_text;
#define DFT_EVENT_MEMBER_Time(m) \
  int64_t m##_ns = 0;            \
  bool has_##m = false;

struct Event {
#define DFT_X(member, key, kind, column) DFT_EVENT_MEMBER_##kind(member)
  DFT_EVENT_FIELDS(DFT_X)
  DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  // Values of the args keys the decoder was asked to capture
  // (EventDecoder::capture_args), in the order asked; "" when absent.
  std::array<std::string_view, kMaxExtraArgs> extra_args{};

  bool is_complete() const { return ph == "X"; }
  bool is_metadata() const { return ph == "M"; }
};

// The text of a groupable field (Text, Json, Id kinds); empty for the others.
inline std::string_view field_text(const Event& e, Field f) {
  switch (f) {
#define DFT_FIELD_TEXT_Text(m) return e.m;
#define DFT_FIELD_TEXT_Json(m) return e.m;
#define DFT_FIELD_TEXT_Id(m) return e.m##_text;
#define DFT_FIELD_TEXT_Number(m) return {};
#define DFT_FIELD_TEXT_Time(m) return {};
#define DFT_X(member, key, kind, column) \
  case Field::member:                    \
    DFT_FIELD_TEXT_##kind(member)
    DFT_EVENT_FIELDS(DFT_X)
    DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
    case Field::arg:
      break;
  }
  return {};
}

}  // namespace dftracer::analyze
