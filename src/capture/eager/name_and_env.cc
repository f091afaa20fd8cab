// The parts of the observer that need no torch headers: name classification
// (once per distinct name) and the DFTRACER_TRACE_EAGER setting.
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "dftracer/dftracer.h"
#include "observer_internal.h"
#include "op_name_cache.h"

namespace dftracer {
namespace torch_observer {

namespace {

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

uint8_t classify_name(const char* name, size_t n) {
  std::string_view s(name, n);
  uint8_t flags = 0;
  // The engine's scope around one autograd node: recorded as that node
  // (the observer does not register BACKWARD_FUNCTION, whose per-node event
  // would only repeat this one; see observer.cc).
  if (s.substr(0, kEvaluateFunctionPrefixLen) == kEvaluateFunctionPrefix) {
    flags |= kAutogradNode;
    s.remove_prefix(kEvaluateFunctionPrefixLen);
  }
  // "ns::op" or "ns::op.overload": one namespace, identifier characters
  // only. (`s`, not `n`: the prefix above may have shortened it.)
  const size_t sep = s.find("::");
  if (!(flags & kAutogradNode) && sep != std::string_view::npos && sep != 0 && sep + 2 < s.size()) {
    bool ok = true;
    for (size_t i = 0; i < sep && ok; ++i) ok = is_ident(s[i]);
    for (size_t i = sep + 2; i < s.size() && ok; ++i) ok = is_ident(s[i]) || s[i] == '.';
    if (ok) flags |= kOperator;
  }
  // The autograd.Function that AOT autograd runs compiled graphs in; its
  // backward node. Ops under these belong to the compiled graph.
  if (s == "CompiledFunction" || s == "CompiledFunctionBackward") flags |= kCompiledScope;
  // Inductor's generated C++ kernels, with cpp.enable_kernel_profile on,
  // open "graph_<n>_cpp_<fused name>" around each call: recorded even inside
  // a compiled graph, as they are that graph's work, not an op
  // already traced by the capture backend.
  if (s.substr(0, 6) == "graph_") {
    size_t i = 6;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i > 6 && s.substr(i, 5) == "_cpp_") flags |= kInductorKernel;
  }
  if (s.substr(0, 15) == "Optimizer.step#") flags |= kOptimizerStep;
  if (s.substr(0, 10) == "Optimizer." && s.find('#') != std::string_view::npos) flags |= kOptimizerScope;
  if (s.substr(0, 21) == "enumerate(DataLoader)") flags |= kDataScope;
  return flags;
}

EnvSetting parse_trace_eager_env() {
  const char* v = std::getenv(kTraceEagerEnv);
  if (v == nullptr) return EnvSetting::kOff;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty() || s == "0" || s == "false" || s == "no" || s == "off") return EnvSetting::kOff;
  if (s == "1" || s == "true" || s == "yes" || s == "on") return EnvSetting::kOps;
  if (s == "shapes") return EnvSetting::kOpsWithShapes;
  std::string msg = std::string(kTraceEagerEnv) + "=\"" + v +
                    "\" is not one of 1/true/yes/on, shapes, 0/false/no/off; using off";
  dft_warn(msg.c_str());
  return EnvSetting::kInvalid;
}

namespace {

// A yes/no variable: true for "1"/"true"/"yes"/"on"; unset or
// "0"/"false"/"no"/"off"/"" false; anything else warns (one line) and reads false.
bool parse_bool_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (!(s.empty() || s == "0" || s == "false" || s == "no" || s == "off")) {
    std::string msg = std::string(name) + "=\"" + v + "\" is not one of 1/true/yes/on, 0/false/no/off; using off";
    dft_warn(msg.c_str());
  }
  return false;
}

}  // namespace

bool parse_memory_env() { return parse_bool_env(kMemoryEnv); }

bool parse_eager_flops_env() { return parse_bool_env(kEagerFlopsEnv); }

unsigned long parse_memory_interval_env() {
  const char* v = std::getenv(kMemoryIntervalEnv);
  if (v == nullptr || *v == '\0') return kDefaultMemoryIntervalUs;
  char* end = nullptr;
  errno = 0;
  const unsigned long us = std::strtoul(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || *v == '-' || us > 60000000ul) {
    std::string msg = std::string(kMemoryIntervalEnv) + "=\"" + v + "\" is not a number of microseconds (0..60000000); using " +
                      std::to_string(kDefaultMemoryIntervalUs);
    dft_warn(msg.c_str());
    return kDefaultMemoryIntervalUs;
  }
  return us;
}

}  // namespace torch_observer
}  // namespace dftracer
