// Device tracks: the pid a traced process's GPU work is written under.
//
// The CUDA capture source (src/capture/cuda) writes each device's kernels,
// copies and sets on a track of its own, pid = device_track_pid(real pid,
// device), tid = the stream, named "GPU <device> (pid <real pid>)". The pid
// is 0x40000000 | real_pid << 8 | device: Linux pids stay below pid_max
// <= 2^22, so no real process has it, it is unique per traced process (ranks
// merged into one file keep their GPUs apart) and it fits 31 bits (Perfetto
// reads pids as int32). The analyzer reads such a pid as a device track of the
// process real_pid. Devices 0-255.
// torch.profiler's (Kineto's) traces write pid = the device index instead;
// those stay as they are (small pids, no owner known).
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace dftracer::format {

inline constexpr int64_t kDeviceTrackBase = int64_t(1) << 30;
inline constexpr uint32_t kMaxTrackedPid = (uint32_t(1) << 22) - 1;  // pid_max's limit on Linux, minus one
inline constexpr uint32_t kMaxTrackedDevice = 255;

constexpr int64_t device_track_pid(uint32_t real_pid, uint32_t device) {
  return kDeviceTrackBase | int64_t(real_pid & kMaxTrackedPid) << 8 | int64_t(device & kMaxTrackedDevice);
}
constexpr bool is_device_track_pid(int64_t pid) { return pid >= kDeviceTrackBase && pid < 2 * kDeviceTrackBase; }
constexpr int64_t device_track_owner(int64_t pid) { return (pid >> 8) & kMaxTrackedPid; }
constexpr int64_t device_track_device(int64_t pid) { return pid & kMaxTrackedDevice; }

// The same from a pid as the trace writes it (decimal, maybe quoted): true,
// with the owner's pid and the device, for a device track's pid.
inline bool parse_device_track_pid(std::string_view text, int64_t* owner, int64_t* device) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
  if (text.size() != 10) return false;  // 1073741824 .. 2147483647: ten digits
  int64_t pid = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || p != text.data() + text.size() || !is_device_track_pid(pid)) return false;
  if (owner) *owner = device_track_owner(pid);
  if (device) *device = device_track_device(pid);
  return true;
}

}  // namespace dftracer::format
