#include "trace_file_name.h"

#include <sys/stat.h>

namespace dftracer {
namespace {

// DFTracer's own default base name, used when the prefix is a directory.
constexpr const char kBaseName[] = "dftracer";

std::string file_prefix(const std::string& prefix) {
  if (prefix.empty()) return kBaseName;
  if (prefix.back() == '/') return prefix + kBaseName;
  struct stat st;
  if (stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return prefix + "/" + kBaseName;
  return prefix;
}

}  // namespace

std::string trace_file_name(const std::string& prefix, const std::string& app, int64_t pid, bool compress,
                            unsigned n, int64_t rank) {
  std::string name = file_prefix(prefix) + "-" + app + "-";
  if (rank >= 0) name += "rank" + std::to_string(rank) + "-";
  name += std::to_string(pid);
  if (n > 0) name += "-" + std::to_string(n);
  return name + (compress ? ".pfw.gz" : ".pfw");
}

}  // namespace dftracer
