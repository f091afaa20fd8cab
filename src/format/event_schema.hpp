// The one list of the trace fields the analyzer reads.
//
// Everything that names a field is generated from these two X-macro tables:
// the Event struct (event.hpp), the args dispatch of both line decoders
// (event_fast_path.cpp, event_decoder.cpp), the group keys (summary.cpp), the
// columns of dftracer.analyze.events() (bindings/python/analyze) and the
// Python column lists exported from there, and the decoded-event text the
// decoders are compared on (decoded_event_text.hpp). The top-level fields'
// dispatch in the decoders is written by hand (their presence and type rules
// differ field by field); event_schema_test.cc fails when it and this table drift.
//
// X(member, json_key, kind, column)
//   member   the Event member (and the events() column) name
//   json_key the key in the line (top level) or in "args"
//   kind     Text:   a string, or the literal text of a number / boolean
//                    (Event: std::string_view member; "" when absent)
//            Json:   like Text, and any other value as its raw JSON text
//                    (shapes are a list in compile-capture traces)
//            Number: a number, bare or quoted (Event: double member + has_member)
//            Id:     pid/tid: number or string (Event: int64_t member + member_text)
//            Time:   microseconds in the file, exact int64 ns in the Event
//                    (member_ns + has_member); events() has member (float us) and member_ns
//   column   Col: an events() column; NoCol: decoded for the analyzer only
//
// How to add a well-known arg: add one X(...) line to DFT_ARG_FIELDS (keys of
// at most 8 bytes are compared as one 8-byte word; a longer key needs its
// length among the cases of arg_action in event_fast_path.cpp). It becomes an
// Event member, a group key ("--by key" and "--by args.key"), an events()
// column, and is compared between the decoders by the fuzz target. Any other
// args key can already be grouped by as "args.<key>" without being listed here
// (captured only when asked for).
#pragma once

#include "memory_args.hpp"

// Top-level fields of an event line.
#define DFT_EVENT_FIELDS(X) \
  X(name, "name", Text, Col)  \
  X(cat, "cat", Text, Col)    \
  X(ph, "ph", Text, Col)      \
  X(pid, "pid", Id, Col)      \
  X(tid, "tid", Id, Col)      \
  X(ts, "ts", Time, Col)      \
  X(dur, "dur", Time, Col)

// Well-known keys of "args": what the capture sources write and the summaries
// group or divide by. The agg_ ones are a DFTracer 2.x aggregated row's
// ("ph":3): how many events it stands for and their durations (one event: "dur";
// more: "dur_sum", "dur_min", "dur_max"), in the file's time unit.
#define DFT_ARG_FIELDS(X)             \
  X(phase, "phase", Text, Col)        \
  X(module, "module", Text, Col)      \
  X(graph, "graph", Text, Col)        \
  X(flops, "flops", Number, Col)      \
  X(bytes, "bytes", Number, Col)      \
  X(step, "step", Text, Col)          \
  X(epoch, "epoch", Text, Col)        \
  X(source, "source", Text, Col)      \
  X(shapes, "shapes", Json, Col)      \
  X(dtype, "dtype", Text, Col)        \
  X(alloc_bytes, ::dftracer::format::kArgAllocBytes, Number, Col) \
  X(free_bytes, ::dftracer::format::kArgFreeBytes, Number, Col)   \
  X(meta_name, "name", Text, NoCol)   \
  X(agg_count, "dft_cnt", Number, NoCol) \
  X(agg_dur, "dur", Number, NoCol)     \
  X(agg_sum, "dur_sum", Number, NoCol) \
  X(agg_min, "dur_min", Number, NoCol) \
  X(agg_max, "dur_max", Number, NoCol)

namespace dftracer::format {

// Every field of the tables, as one enum (group keys name them).
enum class Field {
#define DFT_X(member, key, kind, column) member,
  DFT_EVENT_FIELDS(DFT_X) DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  arg,  // any other args key, captured on request (GroupKey::arg)
};

// args.module "" names the compiled model itself (its own forward's ops,
// outside any submodule: a loss computed in forward, a residual add, BN
// buffer updates); absent names no module (regions, graph calls, eager ops).
// The decoders read "" as this path, so every output keeps the model's own
// time apart from the time of events with no module.
inline constexpr const char* kRootModulePath = "(root)";

}  // namespace dftracer::format

// The analyzer (src/analyze) names these unqualified.
namespace dftracer::analyze {
using format::Field;
}  // namespace dftracer::analyze
