// The kind of work an event is, for "compile vs run" and the per-step split:
// compile, data, optimizer, forward, backward or other. The conventions are
// the ones the capture sources write (docs/analyzer.md, "Categories"):
//   compile    cat "compile" (Dynamo tracing, AOT autograd, our instrumentation,
//              backend compile, recompiles)
//   data       cat "POSIX", "STDIO" or "dataloader", or a name starting with
//              "enumerate(DataLoader)" or "DataLoader"
//   optimizer  a name starting with "Optimizer." (torch's RecordFunction, e.g.
//              "Optimizer.step#SGD.step") or containing "optimizer" (a region)
//   backward   args.phase "backward"
//   forward    args.phase "forward" or "inference"
//   other      anything else (regions, eager ops outside a phase)
#pragma once

#include <string_view>

#include "event.hpp"

namespace dftracer::analyze {

inline bool contains_nocase(std::string_view s, std::string_view word) {
  if (word.size() > s.size()) return false;
  for (size_t i = 0; i + word.size() <= s.size(); ++i) {
    size_t j = 0;
    while (j < word.size() && (s[i + j] | 0x20) == word[j]) ++j;  // word is lower case
    if (j == word.size()) return true;
  }
  return false;
}

// A POSIX or STDIO call recorded by the I/O capture (src/io), as DFTracer
// writes its categories.
inline bool is_io_cat(std::string_view cat) { return cat == "POSIX" || cat == "STDIO"; }
inline bool is_io_event(const Event& e) { return is_io_cat(e.cat); }

inline std::string_view event_category(const Event& e) {
  if (e.cat == "compile") return "compile";
  if (is_io_event(e) || e.cat == "dataloader" || e.name.rfind("enumerate(DataLoader)", 0) == 0 ||
      e.name.rfind("DataLoader", 0) == 0)
    return "data";
  if (e.name.rfind("Optimizer.", 0) == 0 || contains_nocase(e.name, "optimizer")) return "optimizer";
  if (e.phase == "backward") return "backward";
  if (e.phase == "forward" || e.phase == "inference") return "forward";
  return "other";
}

}  // namespace dftracer::analyze
