// The device timeline (kineto_import.hpp) with the steps of `summary --by
// step` (step_finder.hpp) for the processes of a file that has no
// ProfilerStep#N range: dftracer's own traces, where the CUDA source's device
// events sit beside the process's ops, optimizer steps, regions and step
// marks. Both come from one read: the step finder is fed the events the
// timeline's reader decodes.
#pragma once

#include <string>
#include <vector>

#include "kineto_import.hpp"

namespace dftracer::analyze {

// Reads `files` once: the linked timeline, its steps the ProfilerStep#N
// ranges of the files that have them, else the step finder's per process
// (numbered from 0 in each process, labelled as `summary --by step` does).
DeviceTimeline read_device_timeline_with_steps(const std::vector<std::string>& files, unsigned threads,
                                               const ReadOptions& options, size_t max_events = kMaxTimelineEvents);

}  // namespace dftracer::analyze
