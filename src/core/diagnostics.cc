#include "diagnostics.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "tracer_thread.h"

namespace dftracer {
namespace {

// stderr, as the program's threads see it. The tracer's own threads keep a
// descriptor table of their own (tracer_thread.h) whose 0-2 are /dev/null:
// their messages go through a descriptor for the program's stderr of the
// moment, taken for the one write.
class ProgramStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t text;
    formatter_->format(msg, text);
    if (!in_private_table()) {
      std::fwrite(text.data(), 1, text.size(), stderr);
      std::fflush(stderr);
      return;
    }
    int fd = program_stderr();
    if (fd < 0) return;
    for (size_t off = 0; off < text.size();) {
      ssize_t n = syscall(SYS_write, fd, text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    syscall(SYS_close, fd);
  }
  void flush_() override {
    if (!in_private_table()) std::fflush(stderr);
  }
};

spdlog::logger& logger() {
  // Never destroyed: warnings may come from exit handlers after static
  // destructors ran. Not registered globally, so an application's own use
  // of spdlog is unaffected.
  static spdlog::logger* l = [] {
    auto* lg = new spdlog::logger("dftracer", std::make_shared<ProgramStderrSink>());
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
