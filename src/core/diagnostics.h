// The tracer's own diagnostics (warnings about bad settings, I/O failures).
// One line each to stderr with a "[dftracer] <level>: " prefix, level from
// DFTRACER_LOG_LEVEL.
// Never used on the recording hot path.
#ifndef DFTRACER_SRC_CORE_DIAGNOSTICS_H_
#define DFTRACER_SRC_CORE_DIAGNOSTICS_H_

#include <string>

namespace dftracer {

// Sets the level from a DFTRACER_LOG_LEVEL-style name ("error", "warn",
// "info", "debug", "trace", "critical", "off"; "warning", "err" too);
// returns false for an unknown name.
bool set_log_level(const std::string& level);

// Messages go to descriptor 2 only while it names the file it named when
// tracing started, or the one the program last put there on purpose (the
// I/O hooks' dup2/dup3/dup onto 2, dft_stderr_replaced); otherwise they are
// dropped, never written into a data file that took the number 2. This
// records what descriptor 2 names now (errno unchanged).
void note_program_stderr();
// Whether descriptor 2 of the calling thread names that verified stderr.
bool program_stderr_verified();

void log_warn(const std::string& msg);
void log_info(const std::string& msg);
void log_debug(const std::string& msg);

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_DIAGNOSTICS_H_
