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

}  // namespace

void PathFilter::configure(const char* data_dir, std::string cwd) {
  std::lock_guard<std::mutex> lock(configure_mu_);
  State* next = new State();
  next->replaced = state_;
  cwd = with_slash(std::move(cwd));
  std::string dirs = data_dir != nullptr ? data_dir : "";
  next->all = dirs.empty();
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string d = dirs.substr(start, end - start);
    if (d == "all") next->all = true;
    else if (!d.empty()) next->prefixes.push_back(with_slash(d[0] == '/' ? d : cwd + d));
    start = end + 1;
  }
  for (const std::string& d : next->prefixes) {
    char real[PATH_MAX];
    if (realpath(d.c_str(), real) == nullptr) continue;  // not there (yet): nothing to rename
    std::string r = with_slash(real);
    if (r != d) next->aliases.push_back({std::move(r), d});
  }
  __atomic_store_n(&state_, static_cast<const State*>(next), __ATOMIC_RELEASE);
}

size_t PathFilter::as_named_in_data_dir(const char* path, size_t len, char* out, size_t cap) const {
  const State* s = state();
  if (s == nullptr) return 0;
  for (const Alias& a : s->aliases) {
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

}  // namespace dftracer::io
