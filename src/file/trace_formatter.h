// TraceFormatter: what the bytes of a trace file look like. The writer
// thread only drains buffers; it asks the formatter for the file's opening,
// one piece per record, a thread's name before that thread's first event,
// and the closing, and hands whatever landed in the OutBuffer to the sink
// as it is. All framing (brackets, separators, newlines) belongs to the
// formatter, so another output format is another formatter: the writer and
// the sinks do not change.
#ifndef DFTRACER_SRC_FILE_TRACE_FORMATTER_H_
#define DFTRACER_SRC_FILE_TRACE_FORMATTER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "event_observer.h"
#include "out_buffer.h"
#include "record.h"
#include "session_info.h"

namespace dftracer {

class TraceFormatter {
 public:
  virtual ~TraceFormatter() = default;

  // Everything before the first event (written at once, so even a process
  // killed right away leaves a file that says whose it is).
  virtual void preamble(OutBuffer* out) = 0;
  // Names thread `tid` (`display`): called once per thread and session,
  // before the thread's first event.
  virtual void thread_name(int64_t tid, const std::string& display, OutBuffer* out) = 0;
  // One record (its slots follow it) recorded by thread `tid`.
  virtual void event(const RecordHeader* r, int64_t tid, OutBuffer* out) = 0;
  // The last bytes of the file, written by thread `tid` at `ts_ns`:
  // `events_written` lines reached the file before it, `dropped` did not.
  virtual void end(int64_t tid, uint64_t ts_ns, uint64_t events_written, uint64_t dropped, OutBuffer* out) = 0;

  // Lines (events) formatted so far, preamble included: the writer counts
  // how many a chunk holds by the difference.
  virtual uint64_t lines() const = 0;

  // Tells `observer` (the sink's index, trace_sink.h) about every line
  // formatted from now on, as written. Default: no one is told.
  virtual void set_observer(EventObserver* observer) { (void)observer; }
};

// The DFTracer JSON-lines format (json_lines_formatter.h).
std::unique_ptr<TraceFormatter> make_json_lines_formatter(const SessionInfo& info);

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_TRACE_FORMATTER_H_
