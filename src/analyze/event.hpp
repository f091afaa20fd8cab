// One decoded trace event, as a view into the parser's buffers.
//
// Every string_view is valid only until the next line is decoded by the same
// EventDecoder: consumers copy what they keep (aggregators key by value).
#pragma once

#include <cstdint>
#include <string_view>

namespace dftracer::analyze {

struct Event {
  std::string_view name;
  std::string_view cat;
  std::string_view ph;
  // pid/tid: the number when the field is a number or a numeric string (DFTracer
  // v1 quotes them); pid_text/tid_text always hold the decimal or the original
  // string, which is what grouping uses (torch.profiler writes some string pids).
  int64_t pid = 0;
  int64_t tid = 0;
  std::string_view pid_text;
  std::string_view tid_text;
  // Nanoseconds, exact (trace_time.hpp): the file writes microseconds with up
  // to three decimals, which a double of epoch microseconds cannot hold.
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  bool has_ts = false;
  bool has_dur = false;
  // Fields of args that the summaries group or divide by.
  std::string_view module;
  std::string_view phase;
  std::string_view graph;
  double flops = 0;
  double bytes = 0;
  bool has_flops = false;
  bool has_bytes = false;
  // ph == "M": args.name (process_name / thread_name / HH / FH / SH).
  std::string_view meta_name;

  bool is_complete() const { return ph == "X"; }
  bool is_metadata() const { return ph == "M"; }
};

}  // namespace dftracer::analyze
