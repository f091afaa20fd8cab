#include "device_steps.hpp"

#include <memory>

#include "step_finder.hpp"

namespace dftracer::analyze {

namespace {
struct FinderSink : EventSink {
  StepFinder finder;
  void add_event(size_t file, const Event& e) override { finder.add_event(file, e); }
};
}  // namespace

DeviceTimeline read_device_timeline_with_steps(const std::vector<std::string>& files, unsigned threads,
                                               const ReadOptions& options, size_t max_events) {
  std::vector<std::unique_ptr<FinderSink>> sinks;
  SharedRead shared;
  shared.args = StepFinder::arg_capture();
  shared.sink = [&sinks](unsigned) -> EventSink* {
    sinks.push_back(std::make_unique<FinderSink>());
    return sinks.back().get();
  };
  DeviceTimeline t = read_timeline_events(files, threads, options, max_events, &shared);
  if (!sinks.empty()) {
    for (size_t i = 1; i < sinks.size(); ++i) sinks[0]->finder.merge(sinks[i]->finder);
    const StepPlan plan = sinks[0]->finder.plan();
    for (const ProcessSteps& p : plan.processes) {
      for (size_t i = 0; i < p.steps.size(); ++i) {
        StepRange s;
        s.file = static_cast<uint32_t>(p.file);
        s.pid = p.pid;
        s.step = static_cast<int64_t>(i);
        s.ts = p.steps[i].ts;
        s.end = p.steps[i].end;
        s.label = p.steps[i].label;
        s.source = p.source;
        t.found_steps.push_back(std::move(s));
      }
    }
  }
  link_timeline(t);
  return t;
}

}  // namespace dftracer::analyze
