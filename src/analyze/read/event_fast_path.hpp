// A hand-written decoder for the common shape of a trace line, tried before
// simdjson On-Demand (see EventDecoder::decode).
//
// Why: profiling the 10M-event benchmark showed simdjson's per-line setup,
// field walk and typed reads costing ~0.45 us a line, of which stage 1 (the
// SIMD structural scan) was only a tenth. One pass that validates and extracts
// at the same time does the same work in a fraction of that.
//
// Contract: it accepts only lines that are strictly valid JSON (RFC 8259
// grammar, ASCII-only strings, no escapes in any string it hands out, known
// fields of their usual types) and, for those, yields exactly what the simdjson
// path yields: same Event fields, same status. Anything else -- escapes in a
// key or a kept string, non-ASCII bytes, control characters, quoted numbers,
// odd types, numbers out of double range, nesting deeper than 64, trailing
// bytes -- makes it return false, and the caller decodes the line with
// simdjson, so bad-input handling stays simdjson's. The fuzz target checks the
// two agree on every line the fast path accepts.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "event.hpp"
#include "event_decoder.hpp"

namespace dftracer::analyze {

// `line` starts with '{' and is followed by kLinePadding readable bytes.
// Returns false to defer to simdjson (then `ev` and `status` are unspecified).
// `capture`: args keys to keep in ev.extra_args (null: none).
bool fast_decode_line(std::string_view line, Event& ev, DecodeStatus& status, const ArgCapture* capture = nullptr);

// The layouts ("shapes") of the last few lines a decoder took: the bytes
// between their values -- keys, quotes, ':', ',', braces -- and the reader of
// each value. A writer puts the same keys in the same order on most lines, so
// a line is first compared with those bytes and its values read directly,
// without finding and dispatching each key. A line whose bytes between the
// values match a shape is read exactly as the general walk reads it (the same
// readers at the same places); any other line takes the general walk, which
// then keeps its shape in place of the least recently matched one. One per
// decoder (not thread-safe); bound to the `capture` it is used with. When
// more than a quarter of 64 lines match no shape (a trace whose layouts keep
// changing), the next 4,096 lines take the general walk alone, so such traces
// do not pay for failed attempts; `back_off` false turns that off (tests).
class LineShapes {
 public:
  explicit LineShapes(bool back_off = true);
  ~LineShapes();
  LineShapes(LineShapes&&) noexcept;
  LineShapes& operator=(LineShapes&&) noexcept;
  void clear();
  // Lines decoded by a shape so far (tests check that shapes are used).
  uint64_t matched() const;
  // Lines that took the general walk alone, in a pause.
  uint64_t paused_lines() const;

  struct Impl;

 private:
  friend bool fast_decode_line(std::string_view, Event&, DecodeStatus&, const ArgCapture*, LineShapes&);
  std::unique_ptr<Impl> impl_;
};

// The same, trying the shapes of earlier lines first (and learning this one's).
bool fast_decode_line(std::string_view line, Event& ev, DecodeStatus& status, const ArgCapture* capture,
                      LineShapes& shapes);

}  // namespace dftracer::analyze
