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

constexpr const char* kMemoryEnv = "DFTRACER_MEMORY";
constexpr const char* kMemoryIntervalEnv = "DFTRACER_MEMORY_INTERVAL_US";
// 500 us: a 2 kHz graph per thread, each peak exact (written with the next
// sample); at 100 us the samples were a sixth of a small model's memory
// events, formatted and compressed by the writer for little more to see.
constexpr unsigned kDefaultMemoryIntervalUs = 500;

// DFTRACER_MEMORY: true for "1"/"true"/"yes"/"on"; unset or "0"/"false"/
// "no"/"off"/"" false; anything else warns (one line) and reads false.
bool parse_memory_env();
// DFTRACER_MEMORY_INTERVAL_US: the least microseconds between two samples of
// one thread's memory counter track (0: every allocation); unset gives
// kDefaultMemoryIntervalUs, a bad value warns and gives it too.
unsigned long parse_memory_interval_env();

constexpr const char* kEagerFlopsEnv = "DFTRACER_EAGER_FLOPS";
// DFTRACER_EAGER_FLOPS, read as DFTRACER_MEMORY is.
bool parse_eager_flops_env();

}  // namespace torch_observer
}  // namespace dftracer

#endif  // DFTRACER_SRC_TORCH_OBSERVER_INTERNAL_H_
