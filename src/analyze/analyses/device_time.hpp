// `dftracer-analyze device`: device time beside CPU time, from the linked
// device timeline of kineto_import.hpp.
//   per op, kernel, module, phase (forward, backward, optimizer, inference:
//   the launch's, kineto_import.hpp), category (kernel, collective, memcpy,
//   memset) and stream: device events, device time (their summed durations: a kernel has
//   no nested device work, so its self time is its duration), CPU time, and
//   the launch delay (device start minus the launch call's start);
//   per step (a ProfilerStep#N range, else in dftracer's traces the steps of
//   `summary --by step`: device_steps.hpp): the step's CPU span, the time
//   some GPU was busy and idle inside it, and whether the step was GPU-bound
//   (busy at least kGpuBoundBusyShare of it) or CPU-bound.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kineto_import.hpp"

namespace dftracer::analyze {

inline constexpr double kGpuBoundBusyShare = 0.8;

struct DeviceGroup {
  std::string key;
  uint64_t events = 0;
  int64_t device_ns = 0, max_ns = 0;
  int64_t cpu_ns = 0;  // see device_tables(): per table what CPU time means
  int64_t delay_sum_ns = 0;
  uint64_t delay_n = 0;
};

struct DeviceStep {
  uint32_t file = 0;
  std::string pid;
  int64_t step = -1;      // StepRange::step: N of ProfilerStep#N, else the step's number in its process
  std::string label;      // StepRange::label
  std::string source;     // StepRange::source: "ProfilerStep", or the steps analysis's ("optimizer", ...)
  int64_t ts_ns = 0;      // the step's start on the CPU
  int64_t span_ns = 0;    // the step's range on the CPU
  int64_t busy_ns = 0;    // inside it, time any GPU of its process (of the file, where not known) ran something
  int64_t device_ns = 0;  // device time of the work launched in the step
  uint64_t events = 0;    // device events launched in the step
  int64_t delay_sum_ns = 0;
  uint64_t delay_n = 0;
  const char* bound = "";  // "gpu-bound", "cpu-bound", or "no-gpu" (no device event in it)
};

// The tables `--by` accepts, in the JSON's order.
inline constexpr const char* kDeviceTables[] = {"op", "kernel", "module", "phase", "category", "stream", "step"};

struct DeviceReport {
  uint64_t device_events = 0, with_launch = 0, with_op = 0, op_by_external_id = 0, with_module = 0, in_step = 0;
  int64_t device_ns = 0;  // summed device durations
  int64_t busy_ns = 0;    // union of the device intervals, per file and process (where known), added
  int64_t delay_sum_ns = 0;
  uint64_t delay_n = 0;
  std::vector<DeviceGroup> op, kernel, module, phase, category, stream;  // sorted by device time, then CPU time
  std::vector<DeviceStep> steps;
  uint64_t events_not_kept = 0;  // timeline events past kMaxTimelineEvents: not in any figure
  ReadStats stats;
  const std::vector<DeviceGroup>* table(const std::string& by) const;
};

// "kernel", "collective" (NCCL kernels), "memcpy" or "memset".
const char* device_category(const TimelineEvent& e);

DeviceReport device_report(const DeviceTimeline& t);
// "N timeline events past the memory cap were not analyzed (...)".
std::string device_cap_line(const DeviceReport& r);

void write_device_table(std::ostream& os, const DeviceReport& r, const std::string& by, size_t top);
void write_device_json(std::ostream& os, const DeviceReport& r);
// `top`: the first rows only (0: all), as the table.
void write_device_csv(std::ostream& os, const DeviceReport& r, const std::string& by, size_t top = 0);

}  // namespace dftracer::analyze
