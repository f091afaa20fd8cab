// Settings, read from the environment each time tracing starts. A bad value
// gets one warning per process naming the variable and the value used
// instead, however often it is read; nothing here ever stops the traced
// program.
//
//   DFTRACER_ENABLE              exactly 1 to trace (dft_init, dft_init_from_env);
//                                any other value set keeps tracing off, even
//                                for dft_init_opt_in (pydftracer's rule)
//   DFTRACER_INIT                FUNCTION | PRELOAD (recorded; how we were started)
//   DFTRACER_LOG_FILE            trace path prefix (default ./dftracer)
//   DFTRACER_DATA_DIR            directories of interest for I/O (recorded)
//   DFTRACER_DISABLE_IO          1: no I/O events (recorded for the I/O shim)
//   DFTRACER_INC_METADATA        1: SH/FH events and "hhash" in every event's
//                                args, as DFTracer (default 0, as pydftracer)
//   DFTRACER_TRACE_COMPRESSION   1 (default): .pfw.gz; 0: .pfw
//   DFTRACER_COMPRESSION_LEVEL   zlib level 1..9 (default 1)
//   DFTRACER_LOG_LEVEL           error | warn (default) | info | debug | off
//   DFTRACER_BUFFER_SIZE         pool cap, bytes with optional K/M/G (64M)
//   DFTRACER_CHUNK_SIZE          chunk size (256K), 4K..64M
//   DFTRACER_FLUSH_INTERVAL_MS   writer flush period (100), 1..60000
//   DFTRACER_OVERFLOW            block (default) | drop
//   DFTRACER_TIME_RESOLUTION     us (default): whole microseconds | ns
//   DFTRACER_TIME_METRIC         pydftracer's name for it: US | NS (the
//                                former wins when both are set)
//   RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK  torchrun's (torch.distributed's)
//                                process coordinates, when set: written as
//                                metadata, in the process name, and RANK in
//                                the file name (trace_file_name.h)
#ifndef DFTRACER_SRC_CORE_CONFIG_H_
#define DFTRACER_SRC_CORE_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace dftracer {

// DFTRACER_ENABLE as set: exactly "1" is kOn; unset is kUnset (only an
// explicit dft_init_opt_in() starts tracing); any other value is kOff.
enum class EnableSetting { kUnset, kOn, kOff };

struct Config {
  bool enable = false;  // DFTRACER_ENABLE=1 (enable_setting() tells off from unset)
  std::string init_mode = "FUNCTION";
  std::string log_file = "./dftracer";
  std::string data_dir;
  bool disable_io = false;
  bool inc_metadata = false;
  bool compress = true;
  int compression_level = 1;
  size_t buffer_size = size_t{64} << 20;
  size_t chunk_size = size_t{256} << 10;
  uint32_t flush_interval_ms = 100;
  bool drop_on_overflow = false;
  // ts/dur in whole microseconds (DFTracer's form); false: nanosecond
  // fractions (DFTRACER_TIME_RESOLUTION=ns), which viewers parsing epoch
  // microseconds into doubles cannot hold (see docs/configuration.md).
  bool whole_micros = true;
  // torchrun's coordinates of this process; -1 where the variable is unset
  // (or not a non-negative integer: one warning).
  int64_t rank = -1;
  int64_t local_rank = -1;
  int64_t world_size = -1;
  int64_t group_rank = -1;
  // DFTRACER_INTERN_CAP: distinct strings the table takes from recorders of
  // possibly one-off names (dft_complete_*_named, Python log_event) before
  // copying such names into each record instead (bounded memory).
  uint32_t intern_cap = 65536;

  // Reads every DFTRACER_* variable; warns once per process per bad value.
  static Config from_env();

  // Only DFTRACER_ENABLE, silently (from_env warns about a bad value).
  static EnableSetting enable_setting();
};

// Parses "123", "64K", "64M", "1G" (also KiB/MiB/GiB, case-insensitive).
bool parse_size(const std::string& s, size_t* out);

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_CONFIG_H_
