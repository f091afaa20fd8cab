// Device timelines from torch.profiler / Kineto Chrome traces: the GPU events
// (cat `kernel`, `gpu_memcpy`, `gpu_memset`), the CUDA runtime and driver
// calls that launched them (`cuda_runtime`, `cuda_driver`), the CPU ops and
// annotations (`cpu_op`, `user_annotation`, `python_function`), read into
// memory and linked:
//   device event -> launch call   by args `correlation` (same file)
//   device event -> CPU op        by args `External id` (same file), else the
//                                 innermost `cpu_op` around the launch call
//   device event -> module        the innermost module range around the op
//                                 (or launch) on its thread, else on another
//                                 thread of the same process
// dftracer's own op events (cat aten, autograd, torch, inductor, dynamo) are
// CPU ops here; one with a "module" arg is a module range of that name.
//   device event -> phase         forward, backward, optimizer or inference: the
//                                 launching op's (dftracer's args.phase), else the
//                                 innermost range around the launch (or op) that
//                                 names one -- `Optimizer.*` (optimizer),
//                                 `autograd::engine::evaluate_function*`
//                                 (backward), a module range `forward`,
//                                 `backward`, `optimizer` (HTA's `## NAME ##`),
//                                 on its thread, else in its process
//   device event -> step          the `ProfilerStep#N` range around the launch
//                                 (a device event with no launch found: around
//                                 its own start, in its process's steps first);
//                                 in a file without such ranges, the step of
//                                 its process (DeviceTimeline::found_steps:
//                                 the steps analysis's) around the launch
// Device tracks: dftracer's CUDA source writes a process's device work under
// pids of its own (format/device_track.hpp), read here as the devices of that
// process (TimelineEvent::owner); Kineto writes pid = the device index, whose
// process is not known (owner "").
// A module range is a `python_function` event named `nn.Module: NAME`
// (with_stack=True) or a `user_annotation` named `## NAME ##`
// (record_function("## NAME ##"), HTA's convention).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trace_reader.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

enum class TimelineRole : uint8_t {
  cpu_op,       // cat cpu_op
  annotation,   // cat user_annotation (record_function), ProfilerStep#N included
  python,       // cat python_function
  launch,       // cat cuda_runtime or cuda_driver
  kernel,       // cat kernel
  memcpy,       // cat gpu_memcpy
  memset,       // cat gpu_memset
};

// The role of a complete event's `cat`; false for any other category.
bool timeline_role(std::string_view cat, TimelineRole* role);
inline bool is_device_role(TimelineRole r) {
  return r == TimelineRole::kernel || r == TimelineRole::memcpy || r == TimelineRole::memset;
}

// The training phase of a device event's launch (kPhaseNames[code]).
enum : uint8_t { kNoPhase = 0, kForward, kBackward, kOptimizer, kInference };
inline constexpr const char* kPhaseNames[] = {"(none)", "forward", "backward", "optimizer", "inference", "data"};
// A phase arg's code (dftracer's args.phase), kNoPhase for any other value.
uint8_t phase_code(std::string_view phase);

struct TimelineEvent {
  uint32_t file = 0;
  TimelineRole role = TimelineRole::cpu_op;
  uint8_t phase = kNoPhase;  // a CPU op's "phase" arg (dftracer's events)
  std::string name, pid, tid;
  std::string module;       // a CPU op's "module" arg (dftracer's events), "" when none
  std::string owner;        // a device event on a device track: its process's pid; "" when not known
  int64_t ts = 0, dur = 0;  // ns
  int64_t correlation = -1, external_id = -1, device = -1, stream = -1;
  int64_t end() const { return saturating_add(ts, dur); }  // held at INT64_MAX for hostile times
};

// The module a range names ("" when it is none): `nn.Module: NAME` of a
// python_function event, `## NAME ##` of an annotation.
std::string module_of(TimelineRole role, std::string_view name);
// N of an annotation or op named `ProfilerStep#N`; -1 otherwise.
int64_t profiler_step_of(std::string_view name);

inline constexpr size_t kNoEvent = SIZE_MAX;

// How one device event was attributed.
struct DeviceLink {
  size_t event = kNoEvent;   // the device event
  size_t launch = kNoEvent;  // its runtime/driver call
  size_t op = kNoEvent;      // its CPU op (or annotation, when External id names one)
  bool op_by_external_id = false;
  std::string module;        // "" when no module range encloses it
  uint8_t phase = kNoPhase;  // kPhaseNames
  int64_t step = -1;         // StepRange::step; -1 outside every step
  size_t step_index = kNoEvent;  // into DeviceTimeline::steps; kNoEvent outside every step
};

struct StepRange {
  uint32_t file = 0;
  std::string pid;
  int64_t step = -1;  // N of ProfilerStep#N; a found step: its 0-based number in its process
  int64_t ts = 0, end = 0;
  std::string label;  // the range's name; a found step: its label (the steps analysis's)
  std::string source = "ProfilerStep";  // else the steps analysis's source ("optimizer", "region", ...)
};

struct DeviceTimeline {
  std::vector<TimelineEvent> events;
  std::vector<DeviceLink> links;   // one per device event, in (file, ts) order
  std::vector<int64_t> cpu_self;   // per event: CPU self time (ns), 0 for device events
  std::vector<std::string> cpu_module;  // per event: the module a CPU event runs in ("" none)
  std::vector<uint8_t> cpu_phase;       // per event: the phase a CPU event runs in (kPhaseNames)
  std::vector<StepRange> steps;    // sorted by (file, ts)
  // Steps found otherwise (the steps analysis's, device_steps.hpp), any order:
  // link_timeline takes those of a file that has no ProfilerStep#N range.
  std::vector<StepRange> found_steps;
  uint64_t not_kept = 0;           // timeline events past the cap: read but not analyzed
  ReadStats stats;
};

// The most timeline events read_device_timeline keeps (a few hundred bytes
// each, linked): past it, events are counted in not_kept and left out.
inline constexpr size_t kMaxTimelineEvents = size_t(1) << 20;

// Links `events` (any order; they are sorted in place by file, ts): fills
// links, cpu_self, cpu_module and steps.
void link_timeline(DeviceTimeline& t);

// Another analysis fed by the same read: each reader thread hands its sink
// every event it decoded (also those the timeline does not keep), so the
// input is read and decoded once for both.
struct EventSink {
  virtual ~EventSink() = default;
  virtual void add_event(size_t file, const Event& e) = 0;
};
struct SharedRead {
  ArgCapture args;  // the args the sinks read: Event::extra_args' first slots (the timeline's own follow)
  std::function<EventSink*(unsigned thread)> sink;  // one per reader thread
};

// Reads the timeline events of `files`, not linked (`shared`: see SharedRead).
DeviceTimeline read_timeline_events(const std::vector<std::string>& files, unsigned threads,
                                    const ReadOptions& options, size_t max_events = kMaxTimelineEvents,
                                    const SharedRead* shared = nullptr);

// Reads the timeline events of `files` and links them (steps: ProfilerStep#N
// ranges only; device_steps.hpp adds the steps analysis's).
DeviceTimeline read_device_timeline(const std::vector<std::string>& files, unsigned threads,
                                    const ReadOptions& options, size_t max_events = kMaxTimelineEvents);

}  // namespace dftracer::analyze
