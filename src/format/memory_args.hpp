// The memory capture's names in a trace, written by the LibTorch observer
// (src/capture/eager/observer.cc) and read by the write-time index
// (src/file/member_index.cc), the reader's field table (event_schema.hpp) and
// the memory analyses (src/analyze/analyses/memory*).
//
// Char arrays, not string_views: the observer interns them as C strings, and
// the field table takes their size at compile time like a literal's.
#pragma once

#include <string_view>

namespace dftracer::format {

// Args of an op's event: the bytes its allocations and frees moved on the
// CPU (alloc_bytes / free_bytes) and on a device (the dev_ twins). The
// summary's memory columns are their sums.
inline constexpr char kArgAllocBytes[] = "alloc_bytes";
inline constexpr char kArgFreeBytes[] = "free_bytes";
inline constexpr char kArgDevAllocBytes[] = "dev_alloc_bytes";
inline constexpr char kArgDevFreeBytes[] = "dev_free_bytes";

// Whether `key` is one of the four above.
constexpr bool is_memory_bytes_arg(std::string_view key) {
  return key == kArgAllocBytes || key == kArgFreeBytes || key == kArgDevAllocBytes || key == kArgDevFreeBytes;
}

// The counter track: {"name":"memory","cat":"memory","ph":"C","args":{"cpu":..,
// "cuda:0":..}}, one series per device, the bytes allocated on it.
inline constexpr char kMemoryCat[] = "memory";
inline constexpr char kMemoryTrack[] = "memory";
inline constexpr char kMemoryDeviceCpu[] = "cpu";

// The per-block events: {"name":"alloc"|"free","cat":"memory","ph":"i",
// "args":{"addr":..,"size":..,"total":..,"op":..,"dev":..}}.
inline constexpr char kBlockAllocName[] = "alloc";
inline constexpr char kBlockFreeName[] = "free";
inline constexpr char kBlockArgAddr[] = "addr";    // the block's address
inline constexpr char kBlockArgSize[] = "size";    // its bytes
inline constexpr char kBlockArgTotal[] = "total";  // the device's bytes allocated after the event
inline constexpr char kBlockArgOp[] = "op";        // the op that allocated or freed it
inline constexpr char kBlockArgDev[] = "dev";      // its device ("cpu" when absent)

}  // namespace dftracer::format
