// Lexical normalisation of a traced path: repeated '/', "." components and
// ".." components (each removing the component before it) are resolved, and
// a trailing '/' dropped, so "/data/x/../y//f" and "/data/y/f" get the same
// fhash and the same DFTRACER_DATA_DIR decision -- "/data/../etc/passwd" is
// not under "/data". Lexical only: no system call, symlinks are not
// resolved (a "dir/.." through a symlink names what the text says, as
// Python's os.path.normpath does). The hooks run it only when the path
// needs it (one scan), into a buffer on the caller's stack.
#ifndef DFTRACER_IO_PATH_NORMALIZE_H_
#define DFTRACER_IO_PATH_NORMALIZE_H_

#include <cstddef>

namespace dftracer::io {

// True when `path` (len bytes) has something normalize_path() changes.
bool path_needs_normalizing(const char* path, size_t len);

// Writes the normalised `path` into out (cap bytes, NUL-terminated) and
// returns its length; 0 when it does not fit (the caller keeps the path as
// it is). An absolute path stays absolute ("/.." is "/"); a relative one
// keeps the ".." it cannot resolve ("a/../.." is ".."), and is "." when
// nothing is left.
size_t normalize_path(const char* path, size_t len, char* out, size_t cap);

}  // namespace dftracer::io

#endif  // DFTRACER_IO_PATH_NORMALIZE_H_
