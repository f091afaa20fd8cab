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

 private:
  bool under_prefix(const char* path, size_t len) const;
  bool all_ = true;
  std::vector<std::string> prefixes_;  // each ends in '/'
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_PATH_FILTER_H_
