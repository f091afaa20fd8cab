// DFTracer 2.x's numeric "ph" (its v2 line format, TracePhaseType in
// DFTracer's core/common/enumeration.h: 1 complete, 2 counter, 3 aggregated,
// 4 metadata) as the Chrome letter the rest of the analyzer uses: a DFTracer
// 2.2 trace then reads like ours. The `type` field beside it (which DFTracer
// module wrote the event) needs nothing: unknown keys are skipped.
#ifndef DFTRACER_SRC_ANALYZE_TRACE_PHASE_HPP_
#define DFTRACER_SRC_ANALYZE_TRACE_PHASE_HPP_

#include <cstdint>
#include <string_view>

namespace dftracer::analyze {

// "" for 0 (DFTracer's UNKNOWN) and for values past its list: the event is
// then counted as one with a wrongly typed field, never guessed.
inline std::string_view phase_letter(uint64_t numeric_ph) {
  switch (numeric_ph) {
    case 1: return "X";
    case 2: return "C";
    case 3: return "A";
    case 4: return "M";
    default: return {};
  }
}

}  // namespace dftracer::analyze

#endif  // DFTRACER_SRC_ANALYZE_TRACE_PHASE_HPP_
