// Which paths' I/O is traced: DFTRACER_DATA_DIR's prefixes (colon-separated;
// unset, empty or `all` = every path), never our own trace files (any name
// with `.pfw` in it: .pfw, .pfw.gz, .pfw.gz.idx) and never /proc, /sys or
// /dev. Set once at start (not while hooks may read it), then read-only.
#ifndef DFTRACER_IO_PATH_FILTER_H_
#define DFTRACER_IO_PATH_FILTER_H_

#include <string>
#include <vector>

namespace dftracer::io {

class PathFilter {
 public:
  // `data_dir` as DFTRACER_DATA_DIR; `cwd` resolves relative paths against
  // the prefixes (a later chdir is not followed).
  void configure(const char* data_dir, std::string cwd);

  // `dirfd_is_cwd`: the path is relative to the working directory (AT_FDCWD);
  // a path relative to another directory descriptor is traced only under `all`.
  bool wanted(const char* path, bool dirfd_is_cwd) const;

  // Writes the working directory (read at configure) + `path` to `out`, so
  // a file has one name and one fhash however it was spelled. False when it
  // does not fit in `cap` bytes (the path is then used as given).
  bool absolute(const char* path, char* out, size_t cap) const;

  const std::vector<std::string>& prefixes() const { return prefixes_; }

 private:
  bool under_prefix(const char* path, size_t len) const;
  bool all_ = true;
  std::vector<std::string> prefixes_;  // each ends in '/'
  std::string cwd_;                    // ends in '/'
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_PATH_FILTER_H_
