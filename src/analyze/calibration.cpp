#include "calibration.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <simdjson.h>

#include "calibrate_kernels.hpp"
#include "output_file.hpp"
#include "reader_threads.hpp"
#include "summary.hpp"  // append_json_string
#include "text_format.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

namespace {

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// DIR/NAME, with one slash whatever DIR ends with ("traces/" gives traces/NAME).
std::string join_path(std::string dir, const char* name) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir == "/" ? dir + name : dir + "/" + name;
}

// mkdir -p for the cache directory; errors surface when the file is written.
void make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0755);
  }
}

}  // namespace

Calibration measure_calibration(unsigned threads) {
  if (threads == 0) threads = default_threads();
  Calibration c;
  c.threads = threads;
  c.peak_gflops = measure_matmul_gflops(threads);
  c.peak_gbps = measure_triad_gbps(threads);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) c.host = host;
  return c;
}

std::string calibration_json(const Calibration& c) {
  std::string o = "{\"dftracer_calibration\":1,\"peak_gflops\":" + json_num(c.peak_gflops) +
                  ",\"peak_gbps\":" + json_num(c.peak_gbps) + ",\"threads\":" + std::to_string(c.threads) +
                  ",\"host\":";
  append_json_string(o, c.host);
  o += ",\"matmul\":\"float32 C += A*B, packed 6x16 FMA micro-kernel, best of 3\","
       "\"triad\":\"float32 a = b + s*c over 3 x 64 MiB, 12 bytes per element, best of 8\"}\n";
  return o;
}

void write_calibration(const std::string& path, const Calibration& c) {
  make_dirs(dir_of(path));
  write_output_file(path, calibration_json(c));
}

Calibration read_calibration(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path).get(text))
    throw InputError("calibration " + path + ": cannot read it: " + std::strerror(errno ? errno : EIO));
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc)) throw InputError("calibration " + path + ": not a JSON document");
  Calibration c;
  double flops = 0, bytes = 0;
  if (doc["peak_gflops"].get_double().get(flops) || doc["peak_gbps"].get_double().get(bytes) ||
      !(flops > 0) || !(bytes > 0))
    throw InputError("calibration " + path + ": needs positive numbers peak_gflops and peak_gbps " +
                     "(rerun 'dftracer-analyze calibrate')");
  c.peak_gflops = flops;
  c.peak_gbps = bytes;
  int64_t threads = 0;
  if (!doc["threads"].get_int64().get(threads) && threads > 0) c.threads = static_cast<unsigned>(threads);
  std::string_view host;
  if (!doc["host"].get_string().get(host)) c.host = std::string(host);
  c.path = path;
  return c;
}

std::string default_calibration_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string base;
  if (xdg && *xdg == '/') base = xdg;  // the spec: a relative value is ignored
  else if (const char* home = std::getenv("HOME"); home && *home) base = std::string(home) + "/.cache";
  else base = "/tmp";
  return base + "/dftracer/calibration.json";
}

std::string find_calibration(const std::vector<std::string>& inputs, const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (!is_file(explicit_path)) throw InputError("calibration " + explicit_path + ": no such file");
    return explicit_path;
  }
  for (const std::string& in : inputs) {
    const std::string beside = join_path(dir_of(in), kCalibrationFileName);
    if (is_file(beside)) return beside;
  }
  const std::string cached = default_calibration_path();
  return is_file(cached) ? cached : std::string();
}

std::string calibrate_command(const std::vector<std::string>& dirs, const std::string& out, unsigned threads) {
  if (dirs.size() > 1) throw InputError("calibrate takes at most one directory, not " + std::to_string(dirs.size()));
  std::string path = out;
  if (path.empty() && !dirs.empty()) {
    struct stat st {};
    if (::stat(dirs[0].c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw InputError("calibrate: not a directory: " + dirs[0]);
    path = join_path(dirs[0], kCalibrationFileName);
  }
  if (path.empty()) path = default_calibration_path();
  Calibration c = measure_calibration(threads);
  c.path = path;
  write_calibration(path, c);
  return "peak float32 matmul: " + fmt_num(c.peak_gflops, 1) + " GFLOP/s; memory triad: " + fmt_num(c.peak_gbps, 1) +
         " GB/s (" + std::to_string(c.threads) + " threads)\nwrote " + path + "\n";
}

}  // namespace dftracer::analyze
