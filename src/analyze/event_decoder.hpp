// Decodes one JSON object (one trace line) into an Event with simdjson On-Demand.
//
// Tolerates both DFTracer layouts: numbers written bare or quoted ("ts":"123"),
// and 16-bit or 64-bit hashes (hashes are not interpreted here). A line that is
// not a JSON object is Malformed; an object whose known fields have the wrong
// JSON type (e.g. "name":5, "dur":"abc") is BadField. Neither throws.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "event.hpp"

namespace dftracer::analyze {

enum class DecodeStatus { Ok, Malformed, BadField };

// Bytes that must be readable after a line handed to the decoder.
inline constexpr size_t kLinePadding = simdjson::SIMDJSON_PADDING;

class EventDecoder {
 public:
  // `line` must be followed by kLinePadding readable bytes (their content does
  // not matter); `padded_capacity` is line.size() plus those bytes at least.
  // Tries the hand-written fast path (event_fast_path.hpp) first and falls
  // back to simdjson for every line it does not take.
  DecodeStatus decode(std::string_view line, size_t padded_capacity, Event& out);
  // simdjson On-Demand only: the reference the fast path must agree with.
  DecodeStatus decode_with_simdjson(std::string_view line, size_t padded_capacity, Event& out);

 private:
  simdjson::ondemand::parser parser_;
  std::string pid_buf_, tid_buf_;
};

// Strips the line framing of .pfw files: surrounding whitespace, a trailing
// comma, and the lone "[" / "]" lines. Returns an empty view for framing-only lines.
std::string_view strip_trace_line(std::string_view line);

}  // namespace dftracer::analyze
