// Device events into the core's writer: the process's own trace file, beside
// its CPU events (docs/DESIGN.md "Device time").
//
// The sink runs where CUPTI hands buffers back (never a recording thread):
// each event is one record in that thread's buffer (dft_complete_ns_on_track
// and friends, on the device's track: pid = the process's track of that
// device (device_track.hpp), tid = stream; launch
// calls on the host thread CUPTI names), drained by the writer like any
// other. The core's functions come through a CoreApi: linked in tests, looked
// up in the process by libdftracer_cuda (the core the Python extension
// loaded; never a second copy of it).
#ifndef DFTRACER_SRC_CAPTURE_CUDA_CORE_EVENT_SINK_H_
#define DFTRACER_SRC_CAPTURE_CUDA_CORE_EVENT_SINK_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include "device_activity.h"
#include "dftracer/dftracer.h"

namespace dftracer::cuda {

struct CoreApi {
  decltype(&dft_complete_ns_on_track) complete = nullptr;
  decltype(&dft_flow_ns_on_track) flow = nullptr;
  decltype(&dft_name_track) name_track = nullptr;
  decltype(&dft_intern_cstr) intern = nullptr;
  decltype(&dft_set_launch_scope) set_launch_scope = nullptr;
  decltype(&dft_now_ns) now_ns = nullptr;
  decltype(&dft_enabled) enabled = nullptr;
  decltype(&dft_warn) warn = nullptr;  // optional: the stop's one warning line
  bool complete_set() const {
    return complete && flow && name_track && intern && set_launch_scope && now_ns && enabled;
  }
};

// The core loaded in this process: its symbols in the global scope, else the
// library `soname` if it is already loaded (RTLD_NOLOAD: nothing is loaded).
// False, with a one-line *error, when it is not there or lacks a function.
bool find_core_api(const char* soname, CoreApi* api, std::string* error);

// Flow ids of device arrows: the correlation id in a range of their own, so
// they never pair with the capture sources' flows (forward -> backward) in
// the same file.
inline constexpr uint64_t kDeviceFlowIdBase = uint64_t(1) << 40;

class CoreEventSink final : public DeviceEventSink {
 public:
  explicit CoreEventSink(const CoreApi& api) : api_(api) {}
  void track_name(uint64_t pid, int64_t tid, const std::string& name) override;
  void complete(uint64_t pid, uint64_t tid, const char* name, const char* cat, int64_t ts_ns, int64_t dur_ns,
                const DeviceArg* args, size_t nargs) override;
  void flow(bool start, uint64_t id, uint64_t pid, uint64_t tid, int64_t ts_ns) override;

 private:
  // Keys and categories are the converter's string literals: interned once
  // each, looked up by address.
  dft_id id_of(const char* literal);

  CoreApi api_;
  std::unordered_map<const void*, dft_id> ids_;
};

}  // namespace dftracer::cuda

#endif  // DFTRACER_SRC_CAPTURE_CUDA_CORE_EVENT_SINK_H_
