#include "path_filter.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace dftracer::io {

namespace {

std::string with_slash(std::string s) {
  if (s.empty() || s.back() != '/') s += '/';
  return s;
}

// ".pfw" anywhere in the path (our trace files, their indexes). memchr for
// each '.' (a path has few): glibc's memmem and strstr cost 50-150
// instructions here, on every traced open.
bool names_a_trace(const char* path, size_t len) {
  const char* end = path + len;
  for (const char* p = path; end - p >= 4;) {
    p = static_cast<const char*>(std::memchr(p, '.', static_cast<size_t>(end - p) - 3));
    if (p == nullptr) return false;
    if (p[1] == 'p' && p[2] == 'f' && p[3] == 'w') return true;
    ++p;
  }
  return false;
}

bool starts_with(const char* s, size_t len, const std::string& p) {
  return len >= p.size() && std::memcmp(s, p.data(), p.size()) == 0;
}

// Never traced: the kernel's pseudo files, devices and our own trace files
// (the writer's own I/O must never become events).
bool excluded(const char* path, size_t len) {
  static const std::string kSystem[] = {"/proc/", "/sys/", "/dev/"};
  // Their second letters first: most paths leave after one byte compare
  // instead of three memcmp calls (this runs on every open).
  const char c = len > 1 ? path[1] : '\0';
  if (c == 'p' || c == 's' || c == 'd') {
    for (const std::string& p : kSystem)
      if (starts_with(path, len, p)) return true;
  }
  return names_a_trace(path, len);
}

}  // namespace

void PathFilter::configure(const char* data_dir, std::string cwd) {
  prefixes_.clear();
  cwd = with_slash(std::move(cwd));
  std::string dirs = data_dir != nullptr ? data_dir : "";
  all_ = dirs.empty();
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string d = dirs.substr(start, end - start);
    if (d == "all") all_ = true;
    else if (!d.empty()) prefixes_.push_back(with_slash(d[0] == '/' ? d : cwd + d));
    start = end + 1;
  }
  aliases_.clear();
  for (const std::string& d : prefixes_) {
    char real[PATH_MAX];
    if (realpath(d.c_str(), real) == nullptr) continue;  // not there (yet): nothing to rename
    std::string r = with_slash(real);
    if (r != d) aliases_.push_back({std::move(r), d});
  }
}

size_t PathFilter::as_named_in_data_dir(const char* path, size_t len, char* out, size_t cap) const {
  for (const Alias& a : aliases_) {
    const std::string& r = a.real;
    size_t rest;  // bytes of `path` after the real prefix
    std::string_view named = a.named;
    if (len >= r.size() && std::memcmp(path, r.data(), r.size()) == 0) {
      rest = len - r.size();
    } else if (len + 1 == r.size() && std::memcmp(path, r.data(), len) == 0) {
      rest = 0;  // the directory itself: its name without the '/'
      named.remove_suffix(1);
    } else {
      continue;
    }
    if (named.size() + rest + 1 > cap) return 0;
    std::memcpy(out, named.data(), named.size());
    std::memcpy(out + named.size(), path + (len - rest), rest);
    out[named.size() + rest] = '\0';
    return named.size() + rest;
  }
  return 0;
}

bool PathFilter::under_prefix(const char* path, size_t len) const {
  for (const std::string& p : prefixes_) {
    // "/data/" matches "/data/x" and the directory "/data" itself.
    if (starts_with(path, len, p) || (len + 1 == p.size() && std::memcmp(path, p.data(), len) == 0)) return true;
  }
  return false;
}

bool PathFilter::wanted(const char* path, size_t len) const {
  if (len == 0) return false;
  if (path[0] == '/') {
    // The prefix first: a path outside DFTRACER_DATA_DIR (most of a
    // program's opens when it is set) leaves after one memcmp.
    if (!all_ && !under_prefix(path, len)) return false;
    return !excluded(path, len);
  }
  return all_ && !names_a_trace(path, len);
}

}  // namespace dftracer::io
