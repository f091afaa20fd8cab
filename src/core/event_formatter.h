// EventFormatter: turns binary records into trace lines, on the writer
// thread. Each line is one JSON object followed by ",\n" (DESIGN.md: the
// file stays loadable when cut short; finalize closes the array).
#ifndef DFTRACER_SRC_CORE_EVENT_FORMATTER_H_
#define DFTRACER_SRC_CORE_EVENT_FORMATTER_H_

#include <cstdint>
#include <string>

#include "out_buffer.h"
#include "record.h"

namespace dftracer {

class Clock;
class StringTable;

class EventFormatter {
 public:
  // `whole_micros`: write ts and dur as whole microseconds (both ends
  // floored, so nesting is kept) instead of with nanosecond fractions:
  // DFTRACER_TIME_RESOLUTION=us, a smaller file for coarser times.
  EventFormatter(int64_t pid, uint64_t host_hash, bool whole_micros = false);

  // Formats the record at `r` (its slots follow it) from thread `tid`.
  void format(const RecordHeader* r, int64_t tid, OutBuffer* out);

  // Metadata event: {"name":name,"ph":"M","args":{"hhash",...,"name":arg_name,"value":value}}
  // (HH/SH/FH pass the hash as `value`, already 16 hex digits).
  void metadata(const char* name, int64_t tid, const std::string& arg_name, const std::string& value,
                OutBuffer* out);
  // Chrome's thread_name / process_name: args {"name": display}.
  void naming(const char* kind, int64_t tid, const std::string& display, OutBuffer* out);
  // The `start` / `end` events: a zero-length complete event with args
  // given as a pre-formatted JSON members fragment (may be empty).
  void lifecycle(const char* name, int64_t tid, uint64_t ts_ns, const std::string& args_fragment,
                 OutBuffer* out, bool last);

  // Lines formatted so far (flow events included; they carry no "id").
  uint64_t lines() const { return lines_; }

 private:
  void head(const char* name, size_t name_len, const char* cat, size_t cat_len, int64_t tid, OutBuffer* out,
            bool with_id = true);
  void args(const RecordHeader* r, OutBuffer* out);
  void str_id(uint32_t id, OutBuffer* out);

  // Nanoseconds as written: floored to a whole microsecond when whole_micros_.
  uint64_t written(uint64_t ns) const { return whole_micros_ ? ns / 1000 * 1000 : ns; }

  int64_t pid_;
  uint64_t host_hash_;
  bool whole_micros_;
  uint64_t next_id_ = 0;
  uint64_t lines_ = 0;
  StringTable& strings_;
  Clock& clock_;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_EVENT_FORMATTER_H_
