// Which paths' I/O is traced: DFTRACER_DATA_DIR's prefixes (colon-separated;
// unset, empty or `all` = every path), never our own trace files (any name
// with `.pfw` in it: .pfw, .pfw.gz, .pfw.gz.idx) and never /proc, /sys or
// /dev. Set once at start (not while hooks may read it), then read-only.
#ifndef DFTRACER_IO_PATH_FILTER_H_
#define DFTRACER_IO_PATH_FILTER_H_

#include <cstring>
#include <string>
#include <vector>

namespace dftracer::io {

class PathFilter {
 public:
  // `data_dir` as DFTRACER_DATA_DIR; a relative prefix is taken from `cwd`
  // (the working directory at start, as DFTracer does).
  void configure(const char* data_dir, std::string cwd);

  // `path` as the hooks see it after making it absolute (working_dir.h). A
  // path still relative (relative to a directory descriptor other than the
  // working directory, or too long to resolve) is traced only under `all`.
  bool wanted(const char* path) const { return wanted(path, std::strlen(path)); }
  // The same, for a path of `len` bytes (the caller hashes it next).
  bool wanted(const char* path, size_t len) const;

  const std::vector<std::string>& prefixes() const { return prefixes_; }

  // The working directory (getcwd) and a directory descriptor's name
  // (/proc/self/fd/N) come from the kernel with symlinks resolved, while
  // DFTRACER_DATA_DIR may name a directory through a symlink (/data ->
  // /mnt/fs/data). A resolved `path` under the real path of such a prefix is
  // written to `out` (cap bytes, NUL-terminated) renamed to the prefix, so a
  // relative or *at open is filtered and hashed as the program's direct open
  // of the same file; returns its length, or 0 when no prefix applies or it
  // does not fit. Not a hot path (relative and *at opens, chdir).
  size_t as_named_in_data_dir(const char* path, size_t len, char* out, size_t cap) const;

 private:
  bool under_prefix(const char* path, size_t len) const;
  bool all_ = true;
  std::vector<std::string> prefixes_;  // each ends in '/'
  struct Alias {
    std::string real;   // realpath of a prefix, ending in '/'
    std::string named;  // the prefix as DFTRACER_DATA_DIR names it, ending in '/'
  };
  std::vector<Alias> aliases_;  // only the prefixes whose real path differs
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_PATH_FILTER_H_
