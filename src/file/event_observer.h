// EventObserver: what the formatter tells a sink about each line it writes,
// as the values it wrote (escaped name and category text, nanoseconds after
// the file's rounding), so the sink can describe its chunks without reading
// them back. The gzip sink's member index (member_index.h) is the one
// observer; it runs on the writer thread, never on a recording thread.
#ifndef DFTRACER_SRC_FILE_EVENT_OBSERVER_H_
#define DFTRACER_SRC_FILE_EVENT_OBSERVER_H_

#include <cstddef>
#include <cstdint>

namespace dftracer {

class EventObserver {
 public:
  virtual ~EventObserver() = default;
  // The file's pid (every line of one file carries the same).
  virtual void file_pid(int64_t pid) = 0;
  // A complete ("ph":"X") line: name and cat as written (JSON-escaped text),
  // and the members of its args object as written (the text between the
  // braces; empty when it has none), where args.flops / args.bytes are.
  virtual void complete(const char* name, size_t name_len, const char* cat, size_t cat_len, int64_t tid,
                        uint64_t ts_ns, uint64_t dur_ns, const char* args, size_t args_len) = 0;
  // A line with a time that is not a complete event (instant, flow).
  virtual void other(uint64_t ts_ns) = 0;
  // A metadata ("ph":"M") line.
  virtual void metadata() = 0;
  // The complete line just observed is on a device's track (a pid of
  // format/device_track.hpp, not the file's): GPU time, no thread's.
  virtual void on_device_track() {}
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_EVENT_OBSERVER_H_
