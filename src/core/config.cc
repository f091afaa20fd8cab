#include "config.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "diagnostics.h"

namespace dftracer {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Settings are read at every start: the Python package's import reads them
// (dft_init_from_env) and initialize_log's dft_init reads them again, as does
// each re-init after a finalize. A bad value is worth one line per process,
// not one per read: each distinct warning is printed once.
void warn_once(const std::string& msg) {
  static std::mutex mu;  // never held across fork: from_env runs under the session's lifecycle lock
  static std::set<std::string>* said = new std::set<std::string>();  // never destroyed (exit handlers)
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!said->insert(msg).second) return;
  }
  log_warn(msg);
}

void warn_bad(const char* name, const char* value, const std::string& used) {
  warn_once(std::string(name) + "='" + value + "' is not valid; using " + used);
}

// A boolean value: 1/true/yes/on, 0/false/no/off, any case, surrounding
// blanks ignored. Anything else is kUnset.
EnableSetting read_bool(const char* v) {
  if (v == nullptr) return EnableSetting::kUnset;
  std::string s = lower(v);
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return EnableSetting::kOn;
  if (s == "0" || s == "false" || s == "no" || s == "off") return EnableSetting::kOff;
  return EnableSetting::kUnset;
}

bool parse_bool(const char* name, bool def) {
  const char* v = env(name);
  if (v == nullptr) return def;
  EnableSetting b = read_bool(v);
  if (b != EnableSetting::kUnset) return b == EnableSetting::kOn;
  warn_bad(name, v, def ? "1" : "0");
  return def;
}

long parse_int(const char* name, long def, long lo, long hi) {
  const char* v = env(name);
  if (v == nullptr) return def;
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    warn_bad(name, v, std::to_string(def));
    return def;
  }
  return x;
}

size_t parse_size_env(const char* name, size_t def, size_t lo, size_t hi) {
  const char* v = env(name);
  if (v == nullptr) return def;
  size_t x = 0;
  if (!parse_size(v, &x) || x < lo || x > hi) {
    warn_bad(name, v, std::to_string(def) + " bytes");
    return def;
  }
  return x;
}

}  // namespace

bool parse_size(const std::string& s, size_t* out) {
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  size_t start = i;
  unsigned long long v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    if (v > (~0ull) / 10) return false;
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
    ++i;
  }
  if (i == start) return false;
  std::string unit = lower(s.substr(i));
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  unsigned shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  else return false;
  if (shift > 0 && v > ((~0ull) >> shift)) return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

// pydftracer's rule: exactly "1" enables; any other value that is set
// ("0", "true", "2", " 1") keeps tracing off, even for an explicit
// dft_init_opt_in(). Unset leaves the choice to the program.
EnableSetting Config::enable_setting() {
  const char* v = std::getenv("DFTRACER_ENABLE");
  if (v == nullptr) return EnableSetting::kUnset;
  return std::strcmp(v, "1") == 0 ? EnableSetting::kOn : EnableSetting::kOff;
}

Config Config::from_env() {
  Config c;
  if (const char* lv = env("DFTRACER_LOG_LEVEL")) {
    if (!set_log_level(lv)) warn_bad("DFTRACER_LOG_LEVEL", lv, "warn");
  }
  c.enable = enable_setting() == EnableSetting::kOn;
  if (const char* v = std::getenv("DFTRACER_ENABLE")) {
    // "0" is the usual way to say off; anything else but "1" is probably
    // meant as on, and is not (as under pydftracer): say so once.
    if (!c.enable && std::strcmp(v, "0") != 0)
      warn_once(std::string("DFTRACER_ENABLE='") + v + "' is not 1; tracing is off (only DFTRACER_ENABLE=1 enables it)");
  }
  if (const char* v = env("DFTRACER_INIT")) {
    std::string s = v;
    for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (s == "FUNCTION" || s == "PRELOAD") c.init_mode = s;
    else warn_bad("DFTRACER_INIT", v, "FUNCTION");
  }
  if (const char* v = env("DFTRACER_LOG_FILE")) c.log_file = v;
  if (const char* v = env("DFTRACER_DATA_DIR")) c.data_dir = v;
  c.disable_io = parse_bool("DFTRACER_DISABLE_IO", false);
  c.inc_metadata = parse_bool("DFTRACER_INC_METADATA", false);
  c.compress = parse_bool("DFTRACER_TRACE_COMPRESSION", true);
  c.compression_level = static_cast<int>(parse_int("DFTRACER_COMPRESSION_LEVEL", 1, 1, 9));
  c.buffer_size = parse_size_env("DFTRACER_BUFFER_SIZE", c.buffer_size, size_t{1} << 16, size_t{1} << 40);
  c.chunk_size = parse_size_env("DFTRACER_CHUNK_SIZE", c.chunk_size, size_t{4} << 10, size_t{64} << 20);
  if (c.chunk_size * 2 > c.buffer_size) {
    warn_once("DFTRACER_CHUNK_SIZE=" + std::to_string(c.chunk_size) + " is more than half of DFTRACER_BUFFER_SIZE=" +
             std::to_string(c.buffer_size) + "; using " + std::to_string(c.buffer_size / 16) + " bytes");
    c.chunk_size = c.buffer_size / 16;
  }
  c.flush_interval_ms = static_cast<uint32_t>(parse_int("DFTRACER_FLUSH_INTERVAL_MS", 100, 1, 60000));
  c.intern_cap = static_cast<uint32_t>(parse_int("DFTRACER_INTERN_CAP", c.intern_cap, 0, 1L << 26));
  if (const char* v = env("DFTRACER_OVERFLOW")) {
    std::string s = lower(v);
    if (s == "drop") c.drop_on_overflow = true;
    else if (s == "block") c.drop_on_overflow = false;
    else warn_bad("DFTRACER_OVERFLOW", v, "block");
  }
  // pydftracer's DFTRACER_TIME_METRIC first, ours over it: a user who set
  // either gets it, and our name decides when both disagree.
  for (const char* name : {"DFTRACER_TIME_METRIC", "DFTRACER_TIME_RESOLUTION"}) {
    if (const char* v = env(name)) {
      std::string s = lower(v);
      if (s == "us") c.whole_micros = true;
      else if (s == "ns") c.whole_micros = false;
      else warn_bad(name, v, c.whole_micros ? "us" : "ns");
    }
  }
  // torch.distributed's own variables (set by torchrun, mpirun wrappers, or
  // the program before init_process_group): -1 when unset.
  c.rank = parse_int("RANK", -1, 0, 1L << 30);
  c.local_rank = parse_int("LOCAL_RANK", -1, 0, 1L << 30);
  c.world_size = parse_int("WORLD_SIZE", -1, 1, 1L << 30);
  c.group_rank = parse_int("GROUP_RANK", -1, 0, 1L << 30);
  return c;
}

}  // namespace dftracer
