// SessionInfo: what a tracing session knows about its process when it
// starts, handed to the formatter for the file's preamble (process metadata,
// the `start` event) and to the writer for its settings.
#ifndef DFTRACER_SRC_CORE_SESSION_INFO_H_
#define DFTRACER_SRC_CORE_SESSION_INFO_H_

#include <cstdint>
#include <string>

#include "config.h"

namespace dftracer {

struct SessionInfo {
  int64_t pid = 0;         // getpid(): the events' pid and the file name's
  int64_t process_id = -1;  // as given to dft_init (pydftracer's p_idx)
  int64_t ppid = 0;
  int64_t main_tid = 0;
  uint64_t start_ns = 0;
  std::string hostname, cmdline, exe, app, cwd;
  Config config;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_SESSION_INFO_H_
