// Time windows (--from/--to, Python from_ts/to_ts) with relative bounds.
//
// A bound is either absolute -- microseconds since the epoch, as the file
// writes `ts` ("1727387307981693.125") -- or relative: a sign, a decimal
// number and a unit (s, ms, us, ns). "+1.5s" is 1.5 s after the trace
// start, "-2s" is 2 s before the trace end, whichever bound it is given to
// ("--from -2s" = the last two seconds; "--from +1s --to +3s" = seconds 1 to 3).
// The trace start is the earliest `ts` of any non-metadata event over all the
// inputs, the trace end the latest `ts + dur`: the span `summary` reports.
// They come from the write-time indexes when every input has a finalized one
// (nothing inflated), else from one extra read of the inputs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

struct WindowBound {
  enum class Anchor { none, epoch, start, end };
  Anchor anchor = Anchor::none;
  int64_t ns = 0;  // epoch: the time; start: the offset after it; end: the offset before it
  std::string text;  // as given ("+10s"), for messages
  bool relative() const { return anchor == Anchor::start || anchor == Anchor::end; }
};

// "" is no bound. Throws std::invalid_argument with one line naming the text
// and the accepted forms when it is neither absolute nor relative.
WindowBound parse_window_bound(std::string_view text);

// Earliest ts and latest ts + dur of the events of `files` (metadata aside).
struct TraceTimeRange {
  bool any = false;        // some event had a ts
  int64_t first_ns = 0, last_end_ns = 0;
  bool from_index = false;  // answered by the write-time indexes
};

// From the indexes when all of `files` have finalized ones that check out,
// else by reading the files on `threads` threads (with `options`' size
// limits; its window is ignored).
TraceTimeRange trace_time_range(const std::vector<std::string>& files, unsigned threads,
                                const ReadOptions& options = {});

// Sets options->from_ns / to_ns from the two bounds, reading the inputs'
// time range only when one is relative. A window that ends up empty or
// reversed throws std::invalid_argument ("--from must be before --to: --from
// +10s (10.000 s from the trace start) is after --to -5s (6.000 s): the window
// is empty; the trace spans 11.000 s": the bounds as given, and where they
// fall in seconds from the trace's start, never as raw epoch nanoseconds).
// With no timed event in the inputs a relative bound is left open.
void resolve_window(const WindowBound& from, const WindowBound& to, const std::vector<std::string>& files,
                    unsigned threads, ReadOptions* options);
// The same with the range already known (the Dask client combines it from the workers).
void resolve_window(const WindowBound& from, const WindowBound& to, const TraceTimeRange& range,
                    ReadOptions* options);

}  // namespace dftracer::analyze
