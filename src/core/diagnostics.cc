#include "diagnostics.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace dftracer {
namespace {

spdlog::logger& logger() {
  // Never destroyed: warnings may come from exit handlers after static
  // destructors ran. Not registered globally, so an application's own use
  // of spdlog is unaffected.
  static spdlog::logger* l = [] {
    auto* lg = new spdlog::logger("dftracer", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    lg->set_pattern("[dftracer] %l: %v");
    lg->set_level(spdlog::level::warn);
    return lg;
  }();
  return *l;
}

}  // namespace

bool set_log_level(const std::string& level) {
  std::string l;
  for (char c : level) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "warning") l = "warn";
  if (l == "err") l = "error";
  auto lv = spdlog::level::from_str(l);
  if (lv == spdlog::level::off && l != "off") return false;
  logger().set_level(lv);
  return true;
}

void log_warn(const std::string& msg) { logger().warn(msg); }
void log_info(const std::string& msg) { logger().info(msg); }
void log_debug(const std::string& msg) { logger().debug(msg); }

}  // namespace dftracer
