// JsonLinesFormatter: DFTracer's trace format. "[" alone on the first line,
// then one bare JSON object a line (no trailing comma), and at finalize "]":
//
//   [
//   {"id":0,"name":"HH",...}         <- preamble: process metadata, `start`
//   {"id":5,"name":"op",...}         <- events, one object a line
//   {"id":9,"name":"end",...}        <- end: the `end` event, then "]"
//   ]
//
// One object a line is what DFTracer writes and what line-oriented tools
// (dftracer-utils, jq, pandas.read_json(lines=True)) read; Perfetto's JSON
// importer takes the array without commas, and a file cut short (a crash)
// loses nothing but its "]". `dftracer-analyze merge` writes strict JSON.
// Runs on the writer thread; strings come pre-escaped from the StringTable.
#ifndef DFTRACER_SRC_FILE_JSON_LINES_FORMATTER_H_
#define DFTRACER_SRC_FILE_JSON_LINES_FORMATTER_H_

#include <cstdint>
#include <string>

#include "trace_formatter.h"

namespace dftracer {

class Clock;
class StringTable;

class JsonLinesFormatter final : public TraceFormatter {
 public:
  // Writes ts and dur as whole microseconds (both ends floored, so nesting
  // is kept) when info.config.whole_micros (the default; =ns turns it off);
  // SH/FH lines and each event's "hhash" arg only when info.config.inc_metadata.
  explicit JsonLinesFormatter(const SessionInfo& info);

  void preamble(OutBuffer* out) override;
  void thread_name(int64_t tid, const std::string& display, OutBuffer* out) override;
  void event(const RecordHeader* r, int64_t tid, OutBuffer* out) override;
  void end(int64_t tid, uint64_t ts_ns, uint64_t events_written, uint64_t dropped, OutBuffer* out) override;
  uint64_t lines() const override { return lines_; }
  void set_observer(EventObserver* observer) override;

 private:
  // Metadata event: {"name":name,"ph":"M","args":{"hhash",...,"name":arg_name,"value":value}}
  // (HH/SH/FH pass the hash as `value`, already 16 hex digits).
  void metadata(const char* name, int64_t tid, const std::string& arg_name, const std::string& value,
                OutBuffer* out);
  // A metadata event whose value is a JSON number (the rank keys, #16).
  void metadata_int(const char* name, int64_t tid, int64_t value, OutBuffer* out);
  // Chrome's thread_name / process_name: args {"name": display}.
  void naming(const char* kind, int64_t tid, const std::string& display, OutBuffer* out);
  // The `start` / `end` events: a zero-length complete event with args
  // given as a pre-formatted JSON members fragment (may be empty).
  void lifecycle(const char* name, int64_t tid, uint64_t ts_ns, const std::string& args_fragment,
                 OutBuffer* out, bool last);
  // `pid` < 0: the process's own.
  void head(const char* name, size_t name_len, const char* cat, size_t cat_len, int64_t tid, OutBuffer* out,
            bool with_id = true, int64_t pid = -1);
  // `,"args":{...}`: the host hash first when with_hhash (metadata lines
  // always; other events with DFTRACER_INC_METADATA=1, as DFTracer), then
  // the record's args; nothing at all when there is neither.
  void args(const RecordHeader* r, OutBuffer* out, bool with_hhash);
  // The args of a memory block event as the capture writes them (numbers
  // addr, size, total; strings op, dev), their keys written as literals
  // with no lookup; false, with nothing written, for any other arg.
  bool block_args(const RecordHeader* r, OutBuffer* out);
  void str_id(uint32_t id, OutBuffer* out);
  static const char* copied_bytes(const ArgSlot* a, const ArgSlot* end, size_t* n);

  // Nanoseconds as written: floored to a whole microsecond when whole_micros_.
  uint64_t written(uint64_t ns) const { return whole_micros_ ? ns / 1000 * 1000 : ns; }

  SessionInfo info_;
  uint64_t host_hash_;
  bool whole_micros_;
  bool inc_metadata_;  // SH/FH lines and "hhash" in every event's args
  uint64_t next_id_ = 0;
  uint64_t lines_ = 0;
  uint64_t non_event_lines_ = 0;  // metadata and flow lines: not in end's num_events
  StringTable& strings_;
  Clock& clock_;
  uint32_t hhash_key_;  // the interned id of "hhash": a user arg with this key is renamed
  // The interned id of the memory capture's category: its instants and
  // counters are written without "id" (and instants without "s"), below.
  uint32_t memory_cat_;
  uint32_t block_addr_, block_size_, block_total_, block_op_, block_dev_;  // their arg keys' ids
  EventObserver* observer_ = nullptr;  // the sink's index, when it keeps one
  std::string inline_name_;  // a kNameInline record's name, escaped (reused: no allocation per event)
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_JSON_LINES_FORMATTER_H_
