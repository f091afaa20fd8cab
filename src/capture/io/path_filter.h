// Which paths' I/O is traced: DFTRACER_DATA_DIR's prefixes (colon-separated;
// unset, empty or `all` = every path), never our own trace files (any name
// with `.pfw` in it: .pfw, .pfw.gz, .pfw.gz.idx) and never /proc, /sys or
// /dev. Configured at start and again when a program names its data
// directories (initialize_log's data_dir): each configuration is a new
// immutable state, published with one atomic store, so a hook on another
// thread reads either the old state or the new one, never a half-built one.
// Replaced states are kept until the filter itself goes (a hook may still
// be reading one); a process configures a handful of times.
#ifndef DFTRACER_IO_PATH_FILTER_H_
#define DFTRACER_IO_PATH_FILTER_H_

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "path_scan.h"

namespace dftracer::io {

class PathFilter {
 public:
  PathFilter() = default;
  PathFilter(const PathFilter&) = delete;
  PathFilter& operator=(const PathFilter&) = delete;
  ~PathFilter() {
    for (const State* s = state_; s != nullptr;) {
      const State* before = s->replaced;
      delete s;
      s = before;
    }
  }

  // `data_dir` as DFTRACER_DATA_DIR; a relative prefix is taken from `cwd`
  // (the working directory at start, as DFTracer does). Safe while hooks
  // read the filter (not a hot path: it allocates and takes a lock).
  void configure(const char* data_dir, std::string cwd);

  // `path` as the hooks see it after making it absolute (working_dir.h). A
  // path still relative (relative to a directory descriptor other than the
  // working directory, or too long to resolve) is traced only under `all`.
  bool wanted(const char* path) const { return wanted(path, std::strlen(path)); }
  // The same, for a path of `len` bytes (the caller hashes it next).
  // Inline, without libc calls: it runs on every open (path_scan.h).
  bool wanted(const char* path, size_t len) const {
    if (len == 0) return false;
    const State* s = state();  // nullptr: never configured, every path
    if (path[0] == '/') {
      // The prefix first: a path outside DFTRACER_DATA_DIR (most of a
      // program's opens when it is set) leaves after one compare.
      if (s != nullptr && !s->all && !s->under_prefix(path, len)) return false;
      return !excluded(path, len);
    }
    return (s == nullptr || s->all) && !scan::contains_pfw(path, len);
  }

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
  struct Alias {
    std::string real;   // realpath of a prefix, ending in '/'
    std::string named;  // the prefix as DFTRACER_DATA_DIR names it, ending in '/'
  };
  struct State {
    bool all = true;
    std::vector<std::string> prefixes;  // each ends in '/'
    std::vector<Alias> aliases;         // only the prefixes whose real path differs
    const State* replaced = nullptr;    // the state before this one, kept alive
    bool under_prefix(const char* path, size_t len) const {
      for (const std::string& p : prefixes) {
        // "/data/" matches "/data/x" and the directory "/data" itself.
        const size_t n = p.size();
        if (len >= n ? scan::same_bytes(path, p.data(), n) : len + 1 == n && scan::same_bytes(path, p.data(), len))
          return true;
      }
      return false;
    }
  };
  const State* state() const { return __atomic_load_n(&state_, __ATOMIC_ACQUIRE); }
  // Never traced: the kernel's pseudo files and devices (/proc/, /sys/,
  // /dev/) and our own trace files (".pfw" anywhere in the name: the
  // writer's own I/O must never become events).
  static bool excluded(const char* path, size_t len) {
    // Their second letters first: most paths leave after one byte compare.
    const char c = len > 1 ? path[1] : '\0';
    if ((c == 'p' && len >= 6 && scan::same_bytes(path, "/proc/", 6)) ||
        (c == 's' && len >= 5 && scan::same_bytes(path, "/sys/", 5)) ||
        (c == 'd' && len >= 5 && scan::same_bytes(path, "/dev/", 5)))
      return true;
    return scan::contains_pfw(path, len);
  }
  // Constant-initialised (no constructor runs: the preload library's
  // constructor may configure it before this file's initialisers run).
  const State* state_ = nullptr;
  std::mutex configure_mu_;  // configure() against configure()
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_PATH_FILTER_H_
