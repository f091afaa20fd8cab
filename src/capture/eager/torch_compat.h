// Every private LibTorch member the observer uses, in one place.
//
// Checked against torch 2.13.0 (the TORCH_VERSION_* check below enables it
// for 2.x up to 2.13, whose at::RecordFunction layout was read).
//
// RecordFunction::name() is an out-of-line call that hides whether the name
// belongs to an operator schema (stable storage) or to the RecordFunction
// (a std::string reused for other names). Its private `fn_` variant says
// both and gives the length for free, so the name cache can skip strcmp
// (op_name_cache.h). Private members may be named in an explicit
// instantiation ([temp.spec.general]); this reads the member and nothing
// else.
//
// Included by observer.cc only (the explicit instantiation must be in one
// translation unit).
//
// If torch changes: renaming `fn_` or changing its type breaks the build
// of this file (not the program); a torch newer than the one checked
// compiles the fallback instead -- name() and strcmp, a few ns more per op
// -- and the observer says so once, through dft_warn, when it is first
// enabled (kRfNameFallbackWarning).
#ifndef DFTRACER_SRC_CAPTURE_TORCH_TORCH_COMPAT_H_
#define DFTRACER_SRC_CAPTURE_TORCH_TORCH_COMPAT_H_

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <memory>
#include <string>
#include <variant>

#include "op_name_cache.h"

#if defined(__has_include)
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#endif
#endif

namespace dftracer {
namespace torch_observer {

// -DDFTRACER_TORCH_NO_PRIVATE builds the fallback on any torch.
#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR <= 13 && !defined(DFTRACER_TORCH_NO_PRIVATE)
#define DFTRACER_RF_NAME_VARIANT 1
using RfFnMember = std::variant<std::string, at::RecordFunction::schema_ref_t> at::RecordFunction::*;
RfFnMember rf_fn_member();
template <RfFnMember M>
struct RfFnAccess {
  friend RfFnMember rf_fn_member() { return M; }
};
template struct RfFnAccess<&at::RecordFunction::fn_>;

// No warning: the private member is read.
constexpr const char* kRfNameFallbackWarning = nullptr;

// The op's interned name, read from the RecordFunction's private name variant.
inline NameInfo lookup_name(OpNameCache& names, const at::RecordFunction& fn) {
  const auto& v = fn.*rf_fn_member();
  if (const auto* schema = std::get_if<at::RecordFunction::schema_ref_t>(&v))
    return names.lookup(schema->get().name(), /*stable=*/true);
  return names.lookup(*std::get_if<std::string>(&v), /*stable=*/false);
}
#else
constexpr const char* kRfNameFallbackWarning =
    "LibTorch observer: this torch is newer than the one whose at::RecordFunction layout was checked "
    "(2.13); op names are read through RecordFunction::name() (a few ns more per op)";

inline NameInfo lookup_name(OpNameCache& names, const at::RecordFunction& fn) { return names.lookup(fn.name()); }
#endif

// c10's memory reporting, the way torch.profiler reaches it (profiler_kineto.cpp
// pushes its state with ThreadLocalDebugInfo::_push under
// DebugInfoKind::PROFILER_STATE): every allocator that reports
// (c10::reportMemoryUsageToProfiler: the CPU allocator's
// ProfiledCPUMemoryReporter, CUDA's caching allocator) calls the
// MemoryReportingInfoBase found in the allocating thread's debug info under
// that kind, when its memoryProfilingEnabled() is true. The debug info is
// thread-local and travels with at::ThreadLocalState (the autograd engine's
// threads, at::launch), so installing it on a thread covers the work that
// thread hands to torch's own threads. `_push`/`_pop` are public but marked
// internal by their underscore: this is their one use.
//
// torch static_casts whatever sits under that kind to its
// torch::profiler::impl::ProfilerStateBase (profilerEnabled(),
// getProfilerConfig(), profilerType(): what torch.autograd._profiler_enabled,
// Dynamo and DDP ask), so the reporter is one: its config is
// ProfilerState::Disabled and its type ActiveProfilerType::NONE, so torch
// reads "no profiler" while it is installed. torch.profiler refuses to start
// on a thread where any such state is installed ("Profiler is already
// enabled on this thread"): it starts once memory capture is off again.
class MemoryReporterBase : public ::torch::profiler::impl::ProfilerStateBase {
 public:
  MemoryReporterBase()
      : ProfilerStateBase(::torch::profiler::impl::ProfilerConfig(::torch::profiler::impl::ProfilerState::Disabled)) {}
  ::torch::profiler::impl::ActiveProfilerType profilerType() override {
    return ::torch::profiler::impl::ActiveProfilerType::NONE;
  }
};

// True when `reporter` is what c10 finds on this thread now.
inline bool memory_reporter_installed(const MemoryReporterBase* reporter) {
  return c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == reporter;
}

// Pushes `reporter` (never destroyed: the shared_ptr does not own it) on
// this thread's debug info, unless it is already the one found there.
inline void install_memory_reporter(MemoryReporterBase* reporter) {
  if (memory_reporter_installed(reporter)) return;
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                   std::shared_ptr<c10::DebugInfoBase>(reporter, [](c10::DebugInfoBase*) {}));
}

// Pops it when it is the top of this thread's debug info (_peek and _pop
// throw when the top is another entry: torch's profiler started after us, or
// a guard of another kind; then it stays, and reports nothing once
// memoryProfilingEnabled() says false).
inline void remove_memory_reporter(const MemoryReporterBase* reporter) {
  try {
    if (c10::ThreadLocalDebugInfo::_peek(c10::DebugInfoKind::PROFILER_STATE).get() == reporter)
      c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  } catch (const c10::Error&) {
  }
}

}  // namespace torch_observer
}  // namespace dftracer

#endif  // DFTRACER_SRC_CAPTURE_TORCH_TORCH_COMPAT_H_
