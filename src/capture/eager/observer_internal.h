// Declarations shared by the observer's translation units (not installed).
#ifndef DFTRACER_SRC_TORCH_OBSERVER_INTERNAL_H_
#define DFTRACER_SRC_TORCH_OBSERVER_INTERNAL_H_

namespace dftracer {
namespace torch_observer {

constexpr const char* kTraceEagerEnv = "DFTRACER_TRACE_EAGER";

enum class EnvSetting { kOff, kOps, kOpsWithShapes, kInvalid };

// Reads DFTRACER_TRACE_EAGER; an unknown value warns (one line) and reads
// as kInvalid, which callers treat as off.
EnvSetting parse_trace_eager_env();

}  // namespace torch_observer
}  // namespace dftracer

#endif  // DFTRACER_SRC_TORCH_OBSERVER_INTERNAL_H_
