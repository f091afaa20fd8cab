// The binary records that recording threads copy into their buffers and the
// writer turns into JSON. Everything is a multiple of 16-byte slots:
//
//   RecordHeader (2 slots) | ArgSlot * nargs | inline string bytes ...
//
// A complete event with no args is 32 bytes; each arg adds one 16-byte slot;
// a copied string arg (DFT_ARG_BYTES) adds ceil(len/16) slots of its bytes
// right after its own slot. `nslots` lets the writer step over any record.
// A name past the intern cap (kNameInline) travels as bytes in the last slots;
// an arg key past it as a DFT_ARG_KEY slot (bytes as for DFT_ARG_BYTES) just
// before the arg it names.
#ifndef DFTRACER_SRC_CORE_RECORD_H_
#define DFTRACER_SRC_CORE_RECORD_H_

#include <cstdint>

namespace dftracer {

constexpr uint32_t kSlot = 16;

enum class RecordKind : uint8_t {
  kComplete = 1,    // "ph":"X"; start/end are ticks unless kTimeIsNs
  kInstant = 2,     // "ph":"i" at start
  kFlowStart = 3,   // "ph":"s", flow id in `end`
  kFlowEnd = 4,     // "ph":"f", flow id in `end`
  kMetadata = 5,    // "ph":"M", args from the arg slots
  kThreadName = 6,  // "ph":"M" thread_name, the name as arg 0
  kCounter = 7,     // "ph":"C" at start, the args are the series' values
};

enum RecordFlags : uint8_t {
  kTimeIsNs = 1,    // start = epoch ns, end = duration ns (dft_complete_ns)
  kNameInline = 2,  // the name is not interned (DFTRACER_INTERN_CAP reached):
                    // `name` holds its byte count and its bytes fill the
                    // record's last ceil(name/16) slots, after the args
  kOnTrack = 4,     // another track than the recording thread's: the slot
                    // after the header is not an arg (nargs leaves it out):
                    // its `key` is the pid, its `value` the tid
};

struct RecordHeader {
  uint64_t start;
  uint64_t end;  // end ticks, duration ns, or flow id (by kind / flags)
  uint32_t name;
  uint32_t cat;
  RecordKind kind;
  uint8_t flags;
  uint16_t nslots;  // total, header included
  uint32_t nargs;
};
static_assert(sizeof(RecordHeader) == 2 * kSlot, "header is two slots");

struct ArgSlot {
  uint32_t key;
  uint8_t type;  // dft_arg_type
  uint8_t pad;
  uint16_t len;  // DFT_ARG_BYTES / DFT_ARG_KEY: byte count of the inline string
  uint64_t value;
};
static_assert(sizeof(ArgSlot) == kSlot, "arg is one slot");

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_RECORD_H_
