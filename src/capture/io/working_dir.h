// The working directory the hooks resolve relative paths against, followed
// across chdir/fchdir. A hook reads it with no lock: the
// current directory is a pointer to an immutable string, published with a
// release store and read with an acquire load. A string is never freed (a
// reader may still be copying it); instead every directory ever published
// is kept in a lock-free list and a chdir back to one reuses its string, so
// memory grows with the number of DISTINCT directories the process enters
// (a few, in practice), not with the number of chdir calls.
#ifndef DFTRACER_IO_WORKING_DIR_H_
#define DFTRACER_IO_WORKING_DIR_H_

#include <cstddef>

namespace dftracer::io {

class WorkingDir {
 public:
  // `dir`: absolute (getcwd's result), or nullptr when unknown (then no
  // relative path can be resolved). Not a hot path (start, chdir, fchdir);
  // may allocate.
  void publish(const char* dir);

  // Writes the working directory joined with relative `path` ("./" prefixes
  // dropped) to `out`. False when the directory is unknown or the result does
  // not fit in `cap` bytes. Lock-free, no allocation.
  bool join(const char* path, char* out, size_t cap) const;

  // Distinct directories published so far (tests: memory stays bounded).
  size_t distinct() const;

 private:
  struct Node;
  const Node* intern(const char* dir);
  Node* all_ = nullptr;            // every directory ever published (atomic push)
  const Node* current_ = nullptr;  // atomic
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_WORKING_DIR_H_
