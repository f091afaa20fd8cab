// Decodes one JSON object (one trace line) into an Event with simdjson On-Demand.
//
// Tolerates both DFTracer layouts: numbers written bare or quoted ("ts":"123"),
// and 16-bit or 64-bit hashes (hashes are not interpreted here). A line that is
// not a JSON object is Malformed; an object whose known fields have the wrong
// JSON type (e.g. "name":5, "dur":"abc") is BadField. Neither throws.
#pragma once

#include <simdjson.h>

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "event.hpp"

namespace dftracer::analyze {

enum class DecodeStatus { Ok, Malformed, BadField };

// Bytes that must be readable after a line handed to the decoder.
inline constexpr size_t kLinePadding = simdjson::SIMDJSON_PADDING;

// Args keys outside the schema that a consumer wants (group keys `args.<key>`),
// kept in Event::extra_args. Empty in the usual case, which then costs nothing.
class LineShapes;

struct ArgCapture {
  size_t size = 0;
  std::array<std::string, kMaxExtraArgs> keys;
};

class EventDecoder {
 public:
  EventDecoder();
  ~EventDecoder();
  EventDecoder(EventDecoder&&) noexcept;
  EventDecoder& operator=(EventDecoder&&) noexcept;

  // Also capture these args keys (at most kMaxExtraArgs) from now on.
  void capture_args(const ArgCapture& capture);

  // `line` must be followed by kLinePadding readable bytes (their content does
  // not matter); `padded_capacity` is line.size() plus those bytes at least.
  // Tries the hand-written fast path (event_fast_path.hpp) first and falls
  // back to simdjson for every line it does not take.
  DecodeStatus decode(std::string_view line, size_t padded_capacity, Event& out);
  // An array or object value (shapes, a captured args key) comes as its JSON
  // text without whitespace outside strings, as our writer writes it, so it
  // reads and groups alike whichever writer spaced it (`[[4, 64]]`: `[[4,64]]`).
  // simdjson only: the reference the fast path must agree with. The line is
  // first validated whole (simdjson's DOM parser: RFC 8259, every field,
  // also those On-Demand would skip), so every command -- summary, report,
  // events(), merge -- keeps exactly the lines that are valid JSON objects.
  DecodeStatus decode_with_simdjson(std::string_view line, size_t padded_capacity, Event& out);

 private:
  const ArgCapture* capture() const { return capture_.size ? &capture_ : nullptr; }

  simdjson::ondemand::parser parser_;
  simdjson::dom::parser validator_;  // On-Demand does not validate what it skips
  ArgCapture capture_;
  std::unique_ptr<LineShapes> shapes_;  // the fast path's line shapes (event_fast_path.hpp)
  std::string pid_buf_, tid_buf_;
  DecodeStatus simdjson_decode(std::string_view line, size_t padded_capacity, Event& out);
  void compact_json_values(std::string_view line, Event& ev);
  std::array<std::string, 1 + kMaxExtraArgs> json_buf_;  // compact_json_values' text: shapes, then extra_args
};

// Strips the line framing of .pfw files: surrounding whitespace, a trailing
// comma, and the lone "[" / "]" lines. Returns an empty view for framing-only lines.
std::string_view strip_trace_line(std::string_view line);

}  // namespace dftracer::analyze
