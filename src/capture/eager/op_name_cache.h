// Per-thread cache from a RecordFunction's name to its interned ids.
//
// Two ways in, depending on what the observer can tell about the name:
//
// lookup(std::string, stable): the observer reads the RecordFunction's own
// std::string (see observer.cc), so the length is known and the first and
// last 8 bytes can be loaded without a strlen (a std::string's buffer is
// always at least 16 bytes). Names that point into an operator's schema
// ("stable": they live as long as the operator) are keyed by address and
// confirmed by length and those 16 bytes -- no strcmp on the hot path.
// Names the RecordFunction owns (autograd nodes, engine steps, user
// scopes: their storage is reused for other names) are keyed by content
// and confirmed with memcmp, so a reused address never mismatches and never
// re-interns.
//
// lookup(const char*): the fallback when the name's std::string is not
// reachable (an untested torch layout): keyed by address, every hit
// confirmed with strcmp against the interned copy.
//
// A miss interns the name in the core (no lock for a string the core
// already knows) and overwrites a slot. Plain data with no constructor, so
// the state holding it needs no initialisation guard; no allocation after
// the first sight of a name.
#ifndef DFTRACER_SRC_TORCH_OP_NAME_CACHE_H_
#define DFTRACER_SRC_TORCH_OP_NAME_CACHE_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "dftracer/dftracer.h"
#include "flop_formulas.h"

namespace dftracer {
namespace torch_observer {

// What a name is, decided once per name.
enum NameFlags : uint8_t {
  kOperator = 1,       // "ns::op" (an ATen or custom operator)
  kCompiledScope = 2,  // AOT autograd's compiled forward/backward
  kAutogradNode = 4,   // the engine running one autograd node (see classify_name)
  kInductorKernel = 8, // an Inductor C++ kernel's RECORD_FUNCTION (cpp.enable_kernel_profile)
  kOptimizerStep = 16, // torch's "Optimizer.step#<Class>.step" scope around an optimizer's step()
  kOptimizerScope = 32, // torch's "Optimizer.<method>#..." scopes: step and zero_grad (phase "optimizer")
  kDataScope = 64,     // torch's "enumerate(DataLoader)#..." scope around a DataLoader's next batch (no phase)
};

// The autograd engine's RecordFunction around each node it runs.
constexpr char kEvaluateFunctionPrefix[] = "autograd::engine::evaluate_function: ";
constexpr size_t kEvaluateFunctionPrefixLen = sizeof kEvaluateFunctionPrefix - 1;

struct NameInfo {
  dft_id name;
  uint8_t flags;
  uint8_t formula;  // FlopFormula: how FLOPs are counted for the op (kNoFormula: not at all)
};

// Classifies a name (`n` bytes, not necessarily NUL-terminated) the first
// time it is seen (not on the hot path).
uint8_t classify_name(const char* name, size_t n);

// The name an event is written under: the node's own name for the engine's
// "autograd::engine::evaluate_function: <node>" scopes, else `name` itself.
inline size_t event_name_offset(uint8_t flags) { return (flags & kAutogradNode) ? kEvaluateFunctionPrefixLen : 0; }

class OpNameCache {
 public:
  static constexpr uint32_t kSlots = 1024;  // power of two
  static constexpr uint32_t kProbe = 4;

  // The interned name and flags for `name`, the RecordFunction's own string;
  // `stable`: it belongs to an operator schema (its address keeps its text).
  NameInfo lookup(const std::string& name, bool stable) {
    const char* p = name.data();
    const uint32_t n = static_cast<uint32_t>(name.size());
    uint64_t first, last;
    edges(p, n, &first, &last);
    const uint32_t h = stable ? slot_of(p) : slot_of_content(n, first, last);
    for (uint32_t i = 0; i < kProbe; ++i) {
      Slot& s = slots_[(h + i) & (kSlots - 1)];
      if (s.text == nullptr) return refill(s, p, n, stable, first, last);
      if (s.len == n && s.first == first && s.last == last &&
          (stable ? s.key == p : std::memcmp(s.text, p, n) == 0))
        return s.info;
    }
    return refill(slots_[h & (kSlots - 1)], p, n, stable, first, last);
  }

  // The fallback: `name` NUL-terminated, non-null, of unknown storage.
  NameInfo lookup(const char* name) {
    const uint32_t h = slot_of(name);
    for (uint32_t i = 0; i < kProbe; ++i) {
      Slot& s = slots_[(h + i) & (kSlots - 1)];
      if (s.text == nullptr) return refill(s, name);
      if (s.key == name && std::strcmp(name, s.text) == 0) return s.info;
    }
    // Probe window full: replace its first slot (rare; names are few).
    return refill(slots_[h & (kSlots - 1)], name);
  }

 private:
  struct Slot {
    const char* key;   // the name's address; nullptr for content-keyed slots
    const char* text;  // the core's interned copy (lives as long as the process); nullptr: empty
    uint64_t first;    // first 8 bytes of the name (zero-padded when shorter)
    uint64_t last;     // last 8 bytes (== first when shorter than 8)
    uint32_t len;
    NameInfo info;
  };

  // `p` is a std::string's data(): at least 16 readable bytes, so an 8-byte
  // load is in bounds whatever n is; bytes past the end are masked off.
  static void edges(const char* p, uint32_t n, uint64_t* first, uint64_t* last) {
    uint64_t f;
    std::memcpy(&f, p, 8);
    if (n >= 8) {
      std::memcpy(last, p + n - 8, 8);
    } else {
      f &= n == 0 ? 0 : ~0ull >> (64 - 8 * n);
      *last = f;
    }
    *first = f;
  }

  static uint32_t slot_of(const char* p) {
    const uint64_t v = reinterpret_cast<uintptr_t>(p) * 0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(v >> 54);  // top 10 bits: kSlots == 1024
  }

  static uint32_t slot_of_content(uint32_t n, uint64_t first, uint64_t last) {
    const uint64_t v = (first ^ (last * 0xC2B2AE3D27D4EB4Full) ^ n) * 0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(v >> 54);
  }

  // Misses are rare (once per name): kept out of line, so the callbacks'
  // hit path does not carry the interning and classification code.
  __attribute__((noinline, cold)) static NameInfo refill(Slot& s, const char* p, uint32_t n, bool stable,
                                                         uint64_t first, uint64_t last) {
    const dft_id id = dft_intern(p, n);  // its interned copy: the text hits compare against
    size_t len = 0;
    const char* text = dft_string(id, &len);
    const uint8_t flags = classify_name(p, n);
    const size_t skip = event_name_offset(flags);
    s.info.name = skip ? dft_intern(p + skip, n - skip) : id;
    s.info.flags = flags;
    s.info.formula = flop_formula_of(p, n);
    // Should the core ever fail to intern, leave the slot empty so the next
    // call retries instead of trusting a stale key.
    s.text = text;
    s.key = stable ? p : nullptr;
    s.len = n;
    s.first = first;
    s.last = last;
    return s.info;
  }

  // The fallback's refill: keyed by address (its hits confirm with strcmp;
  // the first/last bytes are not used by this way in).
  static NameInfo refill(Slot& s, const char* name) {
    return refill(s, name, static_cast<uint32_t>(std::strlen(name)), /*stable=*/true, 0, 0);
  }

  Slot slots_[kSlots];
};

static_assert(OpNameCache::kSlots == 1024, "slot_of keeps the top 10 bits");

}  // namespace torch_observer
}  // namespace dftracer

#endif  // DFTRACER_SRC_TORCH_OP_NAME_CACHE_H_
