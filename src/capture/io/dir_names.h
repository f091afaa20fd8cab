// The names traced directories were opened by. A descriptor
// keeps only its path's fhash (io_runtime.h), so for a path relative to a
// directory descriptor (openat(d, "f"), fchdir(d)) the hooks would have to
// ask the kernel for the directory's name (/proc/self/fd/<d>, getcwd), and
// the kernel's name has every symlink resolved: under DATA_DIR=/data, with
// /data/link -> /scratch/x, "f" relative to an open /data/link would come
// out as /scratch/x/f and go untraced. This table maps the fhash of each
// directory a traced open or opendir opened to the name it was opened by.
//
// A fixed open-addressing table, slots claimed with compare-and-swap and
// found with acquire loads, no lock. A name is copied once (remember: not a
// hot path, it allocates) and never freed, since a reader may be joining a
// path to it; so memory grows with the number of DISTINCT directories
// opened, at most kSlots of them (later ones fall back to the kernel's name).
#ifndef DFTRACER_IO_DIR_NAMES_H_
#define DFTRACER_IO_DIR_NAMES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dftracer::io {

class DirNames {
 public:
  // Keeps `name` (absolute, normalised) for `hash` unless one is kept already.
  void remember(uint64_t hash, const char* name);
  // The name kept for `hash`, or nullptr. Lock-free, no allocation.
  const char* find(uint64_t hash) const;

  static constexpr size_t kSlots = 4096;

 private:
  static constexpr size_t kProbes = 64;
  struct Slot {
    std::atomic<uint64_t> hash{0};  // 0: free
    std::atomic<const char*> name{nullptr};
  };
  Slot slots_[kSlots];
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_DIR_NAMES_H_
