// GPU activity records -> trace events, with no CUPTI in it: the part of the
// CUDA capture source that unit tests drive with records they fill in.
//
// The CUPTI side (cupti_source.cc) copies each CUpti_Activity* record it is
// handed into an ActivityRecord (or ExternalCorrelation) and passes it here,
// on CUPTI's buffer-completion thread, never on a recording thread. Output:
// Chrome trace JSON lines in the shape torch.profiler/Kineto writes, so
// `dftracer-analyze device` reads our traces and theirs alike:
//   device work    "cat":"kernel" | "gpu_memcpy" | "gpu_memset", pid = the
//                  device's track of the traced process (device_track.hpp:
//                  0x40000000 | pid << 8 | device, never a real pid), tid =
//                  stream, args device, stream, correlation, External id
//                  (and bytes for copies and sets);
//   launch calls   "cat":"cuda_runtime" | "cuda_driver" on the host pid/tid,
//                  args correlation, External id, cbid;
//   flow arrows    "ph":"s" at the launch, "ph":"f" at the device event, both
//                  "cat":"ac2g", id = the correlation id;
//   track names    process_name "GPU <device> (pid <pid>)", thread_name
//                  "stream <stream>", once per device and per stream.
// GPU timestamps become trace time through a ClockMap. Where the events go
// is a DeviceEventSink: JSON lines into a string (JsonLinesSink, a file of
// its own), or the core's writer (core_event_sink.h: the process's trace).
#ifndef DFTRACER_SRC_CAPTURE_CUDA_DEVICE_ACTIVITY_H_
#define DFTRACER_SRC_CAPTURE_CUDA_DEVICE_ACTIVITY_H_

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dftracer::cuda {

enum class ActivityKind : uint8_t { kernel, memcpy, memset, runtime, driver };

// One activity record, CUPTI's fields that the trace needs.
struct ActivityRecord {
  ActivityKind kind = ActivityKind::kernel;
  uint64_t start = 0, end = 0;  // GPU (CUPTI) timestamps, ns
  uint32_t correlation_id = 0;
  // Device work (kernel, memcpy, memset).
  uint32_t device_id = 0, context_id = 0, stream_id = 0;
  uint64_t bytes = 0;
  uint8_t copy_kind = 0;  // memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ...)
  // Launch calls (runtime, driver).
  uint32_t process_id = 0, thread_id = 0;
  uint32_t cbid = 0;
  const char* name = nullptr;  // kernel name, or the API function's name
};

// CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: the id the tracer pushed around
// the launch (the launching event's id), for a correlation id.
struct ExternalCorrelation {
  uint32_t correlation_id = 0;
  uint64_t external_id = 0;
};

// GPU timestamp -> trace nanoseconds: a line through (gpu, trace) pairs read
// together. One pair: an offset. Two or more: least-squares slope and offset
// (the two clocks drift apart by parts per million over a run). With CUPTI's
// timestamp callback set to the trace's own clock, one pair (0, epoch offset)
// is exact.
class ClockMap {
 public:
  void add_sample(uint64_t gpu_ns, uint64_t trace_ns) { samples_.emplace_back(gpu_ns, trace_ns); }
  bool empty() const { return samples_.empty(); }
  int64_t to_trace_ns(uint64_t gpu_ns) const;

 private:
  std::vector<std::pair<uint64_t, uint64_t>> samples_;
};

// Memcpy kind name as Kineto writes it: "Memcpy HtoD (Pageable -> Device)" is
// theirs with memory kinds; ours is the direction only, "Memcpy HtoD".
const char* memcpy_kind_name(uint8_t copy_kind);

// True for the API calls worth an event: those that put work on a device or
// wait for it (names holding Launch, Memcpy, Memset or Synchronize). CUPTI's
// runtime records cover every call (cudaGetDevice, cudaStreamIsCapturing, ...).
bool is_launch_api(const char* name);

// One numeric arg of a device event.
struct DeviceArg {
  const char* key;
  uint64_t value;
};

// Where converted events go. Times are trace nanoseconds.
class DeviceEventSink {
 public:
  virtual ~DeviceEventSink() = default;
  // Names a track: tid < 0, the process `pid`; else thread `tid` of `pid`.
  virtual void track_name(uint64_t pid, int64_t tid, const std::string& name) = 0;
  virtual void complete(uint64_t pid, uint64_t tid, const char* name, const char* cat, int64_t ts_ns, int64_t dur_ns,
                        const DeviceArg* args, size_t nargs) = 0;
  // A flow point: `start` at the launch call, else the end at the device work.
  virtual void flow(bool start, uint64_t id, uint64_t pid, uint64_t tid, int64_t ts_ns) = 0;
};

// The events as Chrome trace JSON lines appended to a string, each ending
// in "\n" (torch.profiler's shape).
class JsonLinesSink final : public DeviceEventSink {
 public:
  explicit JsonLinesSink(std::string* out) : out_(out) {}
  void track_name(uint64_t pid, int64_t tid, const std::string& name) override;
  void complete(uint64_t pid, uint64_t tid, const char* name, const char* cat, int64_t ts_ns, int64_t dur_ns,
                const DeviceArg* args, size_t nargs) override;
  void flow(bool start, uint64_t id, uint64_t pid, uint64_t tid, int64_t ts_ns) override;

 private:
  std::string* out_;
};

class ActivityConverter {
 public:
  // `host_pid`: the traced process, whose device tracks these are.
  // `max_pending`: external ids kept for correlation ids whose device work
  // has not arrived yet; the oldest are dropped past it (and counted).
  ActivityConverter(ClockMap clock, uint32_t host_pid, size_t max_pending = 1 << 16)
      : clock_(std::move(clock)), host_pid_(host_pid), max_pending_(max_pending) {}

  void add(const ExternalCorrelation& c);
  // Appends the record's JSON lines (track names the first time a device or
  // stream is seen, the event, its flow end) to `out`, each ending in "\n".
  // API records that are not is_launch_api() are skipped (and counted), and
  // so are records with no start (0) or an end before their start.
  void add(const ActivityRecord& r, std::string* out);
  // The same into any sink.
  void add(const ActivityRecord& r, DeviceEventSink* sink);

  uint64_t events() const { return events_; }
  uint64_t skipped_api_calls() const { return skipped_api_; }
  uint64_t skipped_bad_times() const { return bad_times_; }
  uint64_t dropped_external_ids() const { return dropped_; }
  // Device events whose correlation id had no external id (launched outside
  // any traced event, or the id was dropped).
  uint64_t without_external_id() const { return without_external_; }

 private:
  void track_names(const ActivityRecord& r, DeviceEventSink* sink);
  bool external_id(uint32_t correlation, uint64_t* id) const;

  ClockMap clock_;
  uint32_t host_pid_;
  size_t max_pending_;
  std::unordered_map<uint32_t, uint64_t> external_;
  std::deque<uint32_t> order_;  // insertion order of external_, for dropping the oldest
  std::set<uint32_t> devices_;
  std::set<std::pair<uint32_t, uint32_t>> streams_;
  uint64_t events_ = 0, dropped_ = 0, without_external_ = 0, skipped_api_ = 0, bad_times_ = 0;
};

}  // namespace dftracer::cuda

#endif  // DFTRACER_SRC_CAPTURE_CUDA_DEVICE_ACTIVITY_H_
