#include "trace_file_name.h"

namespace dftracer {

std::string trace_file_name(const std::string& prefix, const std::string& app, int64_t pid, bool compress) {
  return prefix + "-" + app + "-" + std::to_string(pid) + (compress ? ".pfw.gz" : ".pfw");
}

}  // namespace dftracer
