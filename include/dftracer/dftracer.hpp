// dftracer: C++ API over the C core (include/dftracer/dftracer.h).
//
//   DFT_REGION("load_batch", "app");            // RAII region until scope end
//   void step() { DFT_FUNCTION("app"); ... }    // region named after the function
//   dftracer::Region r(name_id, cat_id);        // ids interned once, reused
//
// Names and categories given as string literals are interned once per call
// site (a function-local static), so the per-event cost is the record alone.
#ifndef DFTRACER_DFTRACER_HPP_
#define DFTRACER_DFTRACER_HPP_

#include <cstring>
#include <string_view>

#include "dftracer/dftracer.h"

namespace dftracer {

inline dft_id intern(std::string_view s) { return dft_intern(s.data(), s.size()); }

// Starts tracing from the environment for the lifetime of the object and
// finalizes at scope end (for main()).
class Session {
 public:
  Session() { dft_init_from_env(); }
  Session(const char* log_file, const char* data_dir = nullptr) {
    dft_init(log_file, data_dir, -1);
  }
  ~Session() { dft_finalize(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

// A complete event from construction to destruction. Args may be attached
// with arg(); they are copied when the region ends.
class Region {
 public:
  static constexpr uint32_t kMaxArgs = 8;

  Region(dft_id name, dft_id cat) : name_(name), cat_(cat), begin_(0) {
    if (dft_enabled()) begin_ = dft_ticks();
  }
  ~Region() {
    if (begin_ != 0) dft_region_end(name_, cat_, begin_, args_, nargs_);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  Region& arg(dft_id key, int64_t v) {
    if (dft_arg* a = push(key, DFT_ARG_INT)) a->v.i = v;
    return *this;
  }
  Region& arg(dft_id key, double v) {
    if (dft_arg* a = push(key, DFT_ARG_DOUBLE)) a->v.d = v;
    return *this;
  }
  Region& arg_str(dft_id key, dft_id value) {
    if (dft_arg* a = push(key, DFT_ARG_STR)) a->v.id = value;
    return *this;
  }

 private:
  // Args beyond kMaxArgs are ignored: a region never allocates.
  dft_arg* push(dft_id key, dft_arg_type t) {
    if (nargs_ >= kMaxArgs) return nullptr;
    dft_arg* a = &args_[nargs_++];
    std::memset(a, 0, sizeof *a);
    a->key = key;
    a->type = static_cast<uint32_t>(t);
    return a;
  }

  dft_id name_, cat_;
  uint64_t begin_;
  uint32_t nargs_ = 0;
  dft_arg args_[kMaxArgs];
};

}  // namespace dftracer

#define DFT_CAT2_(a, b) a##b
#define DFT_CAT_(a, b) DFT_CAT2_(a, b)

// RAII region named `name` in category `cat` (string literals or
// std::string_views that outlive the call site's first use).
#define DFT_REGION(name, cat)                                                      \
  static const dft_id DFT_CAT_(dft_name_id_, __LINE__) = ::dftracer::intern(name); \
  static const dft_id DFT_CAT_(dft_cat_id_, __LINE__) = ::dftracer::intern(cat);   \
  ::dftracer::Region DFT_CAT_(dft_region_, __LINE__)(DFT_CAT_(dft_name_id_, __LINE__), \
                                                   DFT_CAT_(dft_cat_id_, __LINE__))

// RAII region named after the enclosing function.
#define DFT_FUNCTION(cat) DFT_REGION(__func__, cat)

#endif  // DFTRACER_DFTRACER_HPP_
