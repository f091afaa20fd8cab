// The kind of work an event is, for "compile vs run" and the per-step split:
// compile, data, optimizer, forward, backward, comm, gc, checkpoint or other. The conventions are
// the ones the capture sources write (docs/analyzer.md, "Categories"):
//   compile    cat "compile" (Dynamo tracing, AOT autograd, our instrumentation,
//              backend compile, recompiles)
//   data       cat "POSIX", "STDIO" (but I/O on the runtime's own files --
//              imports, libraries, runtime_files.hpp -- is other), "dataloader"
//              or "data" (dft_ai.data), args.phase "data" (the LibTorch
//              observer's ops on a DataLoader worker's or pin-memory thread), a name
//              starting with "enumerate(DataLoader)" or "DataLoader", or a
//              dataset's item fetch ("__getitem__", "__getitems__", as a region
//              or a method name's last part)
//   optimizer  a name starting with "Optimizer." (torch's RecordFunction, e.g.
//              "Optimizer.step#SGD.step") or "GradScaler.step" (the capture's
//              event around a GradScaler's step) or containing "optimizer" (a region),
//              args.phase "optimizer" (a compiled optimizer step's ops), or
//              dft_ai's compute.step (cat "compute", name "step")
//   backward   args.phase "backward"; cat "autograd" without a phase (the
//              LibTorch observer's autograd nodes in traces written before
//              it wrote eager phases); dft_ai's compute.backward
//   forward    args.phase "forward" or "inference"; dft_ai's compute.forward
//   comm       cat "comm" (torch.distributed collectives, DDP's bucket
//              all-reduces)
//   gc         cat "gc": Python's garbage collections (the Python capture's
//              gc.gen0..gc.gen2 events)
//   checkpoint cat "checkpoint": torch.save/torch.load and state_dict /
//              load_state_dict calls (the Python capture's checkpoint events)
//   other      anything else (regions, eager ops outside a phase)
// The LibTorch observer writes the same phases on eager ops, autograd nodes
// and optimizer scopes as the capture backend on compiled ones (docs/torch.md).
#pragma once

#include <string_view>

#include "device_track.hpp"
#include "event.hpp"
#include "runtime_files.hpp"

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

// A POSIX or STDIO call recorded by the I/O capture (src/capture/io), as DFTracer
// writes its categories.
inline bool is_io_cat(std::string_view cat) { return cat == "POSIX" || cat == "STDIO"; }
inline bool is_io_event(const Event& e) { return is_io_cat(e.cat); }

// A Dataset's __getitem__/__getitems__ ("__getitem__", "MyData.__getitem__").
inline bool is_item_fetch(std::string_view name) {
  for (std::string_view m : {std::string_view("__getitem__"), std::string_view("__getitems__")})
    if (name.size() >= m.size() && name.substr(name.size() - m.size()) == m &&
        (name.size() == m.size() || name[name.size() - m.size() - 1] == '.'))
      return true;
  return false;
}

// Device time, not a thread's: GPU work as torch.profiler/Kineto and our CUDA
// source write it (cat kernel, gpu_memcpy, gpu_memset; Kineto's
// gpu_user_annotation spans on the GPU track), or any event on a device track
// of ours (format/device_track.hpp). The CPU analyses (summary, steps, the
// report's CPU tables) leave them out; `dftracer-analyze device` reads them.
inline bool is_device_cat(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "gpu_user_annotation" ||
         cat == "cuda_sync";
}
inline bool is_device_event(const Event& e) {
  return is_device_cat(e.cat) || format::parse_device_track_pid(e.pid_text, nullptr, nullptr);
}

// The phase an event is grouped under (`--by phase`, the report, memory by
// phase): a compile event's args.phase names the graph it compiles (a
// backward graph is compiled inside the first backward), not work of that
// phase, so all compile work is one group of its own, "compile"; Python's
// garbage collections, which run inside any phase, are "gc", and checkpoint
// calls, in no phase, "checkpoint".
inline std::string_view phase_key(const Event& e) {
  if (e.cat == "compile") return "compile";
  if (e.cat == "gc") return "gc";
  if (e.cat == "checkpoint") return "checkpoint";
  return e.phase;
}

// The LibTorch observer's event of a thread's outermost module call
// ("nn.Module: Net") or Tensor.backward call (cat torch, with a phase): it
// holds that call's ops and the Python time between them. The wall split
// counts it (forward, backward); the step finder leaves it out and reads
// the ops inside it, as in traces written before it existed (a call event
// is one work where its ops are many: the evaluation rules count works).
inline bool is_eager_call(const Event& e) {
  return e.cat == "torch" && !e.phase.empty() &&
         (e.name == "Tensor.backward" || e.name.rfind("nn.Module: ", 0) == 0);
}

inline std::string_view event_category(const Event& e) {
  if (e.cat == "compile") return "compile";
  if (e.cat == "gc") return "gc";
  if (e.cat == "checkpoint") return "checkpoint";  // before the names: an `Optimizer...state_dict` is no update
  if (is_io_event(e) || e.cat == "dataloader" || e.cat == "data" || e.phase == "data" ||
      e.name.rfind("enumerate(DataLoader)", 0) == 0 ||
      e.name.rfind("DataLoader", 0) == 0 || is_item_fetch(e.name))
    return "data";
  // dft_ai's compute nodes (cat "compute": forward, backward, step) say what
  // they are; so do the LibTorch observer's autograd nodes (cat "autograd":
  // eager backward, AccumulateGrad) in traces whose eager events carry no phase.
  const bool compute = e.cat == "compute" && e.phase.empty();
  if (e.name.rfind("Optimizer.", 0) == 0 || e.name.rfind("GradScaler.step", 0) == 0 ||
      contains_nocase(e.name, "optimizer") || e.phase == "optimizer" ||
      (compute && e.name == "step"))
    return "optimizer";
  if (e.phase == "backward" || (e.phase.empty() && e.cat == "autograd") || (compute && e.name == "backward"))
    return "backward";
  if (e.phase == "forward" || e.phase == "inference" || (compute && e.name == "forward")) return "forward";
  if (e.cat == "comm") return "comm";
  return "other";
}

// The same, knowing which files are the runtime's (null: none known, all
// I/O is data): `fhash` is the event's args.fhash.
inline std::string_view event_category(const Event& e, std::string_view fhash, const RuntimeFiles* runtime) {
  if (runtime != nullptr && is_io_event(e) && runtime->contains(fhash)) return "other";
  return event_category(e);
}

}  // namespace dftracer::analyze
