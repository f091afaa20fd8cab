// What the report groups events into beyond the summary's keys: the kind of
// an event (the model's own ops, compile work, graph calls, I/O, collectives,
// or a region), and what the time of an event without args.module is.
//
// Kinds (from the cat and name the capture sources write, docs/analyzer.md "The report"):
//   op       the model's own work: an ATen op or kernel. cat "aten" or "autograd"
//            (the LibTorch observer's operators and autograd nodes), "inductor"
//            (Inductor's kernel scopes), "op"/"ops"/"kernel"; or a name starting
//            "function." (the compile backends' ATen op events, cat "dynamo"),
//            "kernel." (Inductor kernels, cat "dynamo") or "aten::" (torch.profiler)
//   compile  cat "compile"
//   io       cat "POSIX" or "STDIO"
//   graph    a compiled graph's call: cat "dynamo" named "graph.<phase>", or a
//            name starting "CompiledFunction" (the observer's scope)
//   comm     cat "comm" (torch.distributed collectives)
//   gc       cat "gc" (Python's garbage collections)
//   checkpoint  cat "checkpoint" (torch.save/load, state_dict calls)
//   region   anything else: pydftracer/app regions (dft_fn, dft_ai, user cats),
//            DataLoader regions, torch's record_function scopes
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "event_category.hpp"

namespace dftracer::analyze {

inline bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

inline std::string_view event_kind(std::string_view cat, std::string_view name) {
  if (cat == "compile") return "compile";
  if (is_io_cat(cat)) return "io";
  if (cat == "aten" || cat == "autograd" || cat == "inductor" || cat == "op" || cat == "ops" || cat == "kernel" ||
      has_prefix(name, "function.") || has_prefix(name, "kernel.") || has_prefix(name, "aten::"))
    return "op";
  if ((cat == "dynamo" && has_prefix(name, "graph.")) || has_prefix(name, "CompiledFunction")) return "graph";
  if (cat == "comm") return "comm";
  if (cat == "gc") return "gc";
  if (cat == "checkpoint") return "checkpoint";
  return "region";
}

// The label of the time of events without args.module, by what it is. The
// first rule that matches, on the event's category (event_category.hpp) and kind:
//   category compile    "(no module: compile)"
//   category data       "(no module: data loading)"   I/O, DataLoader regions
//   category optimizer  "(no module: optimizer)"
//   category gc         "(no module: garbage collection)"
//   category checkpoint "(no module: checkpoint)"
//   kind graph          "(no module: graph calls, between their ops)"
//   kind op             "(no module: outside any module)"   ops of no nn.Module
//   kind comm           "(no module: communication)"
//   anything else       "(no module: between graphs)"   a region's own time: the
//                       loop's code outside any graph call or op
inline std::string no_module_label(std::string_view category, std::string_view kind) {
  std::string_view what = category == "compile"     ? "compile"
                          : category == "data"      ? "data loading"
                          : category == "optimizer" ? "optimizer"
                          : category == "gc"        ? "garbage collection"
                          : category == "checkpoint" ? "checkpoint"
                          : kind == "graph"         ? "graph calls, between their ops"
                          : kind == "op"            ? "outside any module"
                          : kind == "comm"          ? "communication"
                                                    : "between graphs";
  return "(no module: " + std::string(what) + ")";
}


}  // namespace dftracer::analyze
