#include "calibration.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <simdjson.h>

#include "calibrate_kernels.hpp"
#include "calibrate_torch.hpp"
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

std::string LoadCheck::line() const {
  std::string l = "the machine is loaded: ";
  const unsigned free_cores = cores > threads ? cores - threads : 0;
  if (other_runnable > free_cores)
    l += fmt_num(other_runnable, 1) + " other runnable tasks for the " + std::to_string(free_cores) + " of " +
         std::to_string(cores) + " CPUs that calibrate's " + std::to_string(threads) + " threads leave free";
  if (cpu_share < kMinCpuShare)
    l += std::string(other_runnable > free_cores ? "; " : "") + "its kernels got " + fmt_num(100 * cpu_share, 0) +
         " % of the CPU time of " + std::to_string(threads) + " threads";
  return l + " (1-minute load " + fmt_num(load1, 2) + ")";
}

LoadCheck check_load(unsigned threads, int samples) {
  LoadCheck l;
  l.threads = threads;
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  l.cores = online > 0 ? static_cast<unsigned>(online) : threads;
  const char* env = std::getenv("DFTRACER_LOADAVG");
  const std::string file = env && *env ? env : "/proc/loadavg";
  std::vector<double> others;
  for (int i = 0; i < samples; ++i) {
    if (i) ::usleep(50000);
    FILE* f = std::fopen(file.c_str(), "r");
    if (!f) break;
    double l1 = 0, l5 = 0, l15 = 0;
    long running = 0, total = 0;
    const int got = std::fscanf(f, "%lf %lf %lf %ld/%ld", &l1, &l5, &l15, &running, &total);
    std::fclose(f);
    if (got < 4) break;
    l.load1 = l1;
    others.push_back(std::max(0L, running - 1));  // less this reader
  }
  if (!others.empty()) {
    std::sort(others.begin(), others.end());
    l.other_runnable = others[others.size() / 2];
  }
  l.loaded = l.other_runnable > static_cast<double>(l.cores > threads ? l.cores - threads : 0);
  return l;
}

namespace {

std::string figure_name(const CalibrationFigure& f) {
  return f.kernel + ", " + std::to_string(f.threads) + (f.threads == 1 ? " thread" : " threads");
}

// Keeps the better of a figure measured twice (a loaded machine's retry).
void keep_best(std::vector<CalibrationFigure>& figs, const CalibrationFigure& f) {
  for (CalibrationFigure& g : figs)
    if (g.kernel == f.kernel && g.threads == f.threads) {
      g.gflops = std::max(g.gflops, f.gflops);
      g.gbps = std::max(g.gbps, f.gbps);
      return;
    }
  figs.push_back(f);
}

// Our two kernels at each thread count; returns the lowest CPU share of
// the runs on more than one thread (the 1-thread run when that is all).
double measure_ours(const std::vector<unsigned>& counts, std::vector<CalibrationFigure>& figs) {
  double share = 1;
  for (unsigned t : counts) {
    double s1 = 1, s2 = 1;
    keep_best(figs, {matmul_kernel_name(), t, measure_matmul_gflops(t, nullptr, &s1), 0});
    keep_best(figs, {"dftracer triad a = b + s*c over 3 x 64 MiB float32 (12 bytes per element)", t, 0,
                     measure_triad_gbps(t, nullptr, &s2)});
    if (t == counts.back()) share = std::min(s1, s2);
  }
  return share;
}

}  // namespace

void take_peaks(Calibration& c) {
  const CalibrationFigure *best_f = nullptr, *best_b = nullptr, *one_f = nullptr, *one_b = nullptr;
  for (const CalibrationFigure& f : c.figures) {
    if (f.gflops > 0 && (!best_f || f.gflops > best_f->gflops)) best_f = &f;
    if (f.gbps > 0 && (!best_b || f.gbps > best_b->gbps)) best_b = &f;
    if (f.threads == 1 && f.gflops > 0 && (!one_f || f.gflops > one_f->gflops)) one_f = &f;
    if (f.threads == 1 && f.gbps > 0 && (!one_b || f.gbps > one_b->gbps)) one_b = &f;
  }
  c.peak_gflops = best_f ? best_f->gflops : 0;
  c.peak_gbps = best_b ? best_b->gbps : 0;
  c.gflops_kernel = best_f ? figure_name(*best_f) : "";
  c.gbps_kernel = best_b ? figure_name(*best_b) : "";
  c.gflops_1thread = one_f ? one_f->gflops : 0;
  c.gbps_1thread = one_b ? one_b->gbps : 0;
  c.note.clear();
  // The peaks are the best of every thread count, so the N-thread peak is
  // never below the 1-thread figure; when a 1-thread figure is the best,
  // more threads did not help (a loaded machine, or shared FMA units), say so.
  for (const CalibrationFigure* f : {best_f, best_b})
    if (f && f->threads == 1 && c.threads > 1)
      c.note += (c.note.empty() ? "" : "; ") + std::string("the ") + (f == best_f ? "GFLOP/s" : "GB/s") +
                " peak is a 1-thread figure: no " + std::to_string(c.threads) +
                "-thread run reached it, so the peak is raised to it";
}

Calibration measure_calibration(unsigned threads, bool force, bool with_torch) {
  if (threads == 0) threads = default_threads();
  Calibration c;
  c.threads = threads;
  std::vector<unsigned> counts{1};
  if (threads > 1) counts.push_back(threads);
  constexpr int kTries = 3;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    LoadCheck l = check_load(threads);
    if (!l.loaded || (force && attempt == kTries - 1)) {
      l.cpu_share = measure_ours(counts, c.figures);
      l.loaded = l.loaded || l.cpu_share < kMinCpuShare;
    }
    c.load = l;
    if (!l.loaded) break;
    std::fprintf(stderr, "dftracer-analyze: calibrate: %s%s\n", l.line().c_str(),
                 attempt + 1 < kTries ? "; measuring again in 1 s" : "");
    if (attempt + 1 < kTries) ::sleep(1);
  }
  if (c.load.loaded && !force)
    throw InputError("calibrate: " + c.load.line() +
                     ": peaks measured now would be too low and every efficiency too high; calibrate on a quiet "
                     "machine, or pass --force to write them marked \"loaded\"");
  if (with_torch) {
    TorchFigures t = measure_torch(counts);
    for (const KernelFigure& k : t.figures) keep_best(c.figures, {k.kernel, k.threads, k.gflops, k.gbps});
    c.torch = t.version;
    c.torch_note = t.note;
  } else {
    c.torch_note = "not asked for (--no-torch)";
  }
  take_peaks(c);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) c.host = host;
  return c;
}

std::string calibration_json(const Calibration& c) {
  std::string o = "{\"dftracer_calibration\":2,\"peak_gflops\":" + json_num(c.peak_gflops) +
                  ",\"peak_gbps\":" + json_num(c.peak_gbps) + ",\"threads\":" + std::to_string(c.threads) +
                  ",\"host\":";
  append_json_string(o, c.host);
  o += ",\"peak_gflops_kernel\":";
  append_json_string(o, c.gflops_kernel);
  o += ",\"peak_gbps_kernel\":";
  append_json_string(o, c.gbps_kernel);
  o += ",\"gflops_1thread\":" + json_num(c.gflops_1thread) + ",\"gbps_1thread\":" + json_num(c.gbps_1thread) +
       ",\"note\":";
  append_json_string(o, c.note);
  o += ",\"torch\":";
  if (c.torch.empty()) o += "null";
  else append_json_string(o, c.torch);
  o += ",\"torch_note\":";
  append_json_string(o, c.torch_note);
  o += ",\"loaded\":" + std::string(c.load.loaded ? "true" : "false") + ",\"load\":{\"cores\":" +
       std::to_string(c.load.cores) + ",\"threads\":" + std::to_string(c.load.threads) +
       ",\"load1\":" + json_num(c.load.load1) + ",\"other_runnable\":" + json_num(c.load.other_runnable) +
       ",\"cpu_share\":" + json_num(c.load.cpu_share) + "},\"figures\":[";
  for (size_t i = 0; i < c.figures.size(); ++i) {
    const CalibrationFigure& f = c.figures[i];
    o += i ? ",{\"kernel\":" : "{\"kernel\":";
    append_json_string(o, f.kernel);
    o += ",\"threads\":" + std::to_string(f.threads) +
         (f.gflops > 0 ? ",\"gflops\":" + json_num(f.gflops) : ",\"gbps\":" + json_num(f.gbps)) + "}";
  }
  return o + "]}\n";
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
  std::string_view text_field;
  if (!doc["host"].get_string().get(text_field)) c.host = std::string(text_field);
  if (!doc["peak_gflops_kernel"].get_string().get(text_field)) c.gflops_kernel = std::string(text_field);
  if (!doc["peak_gbps_kernel"].get_string().get(text_field)) c.gbps_kernel = std::string(text_field);
  if (!doc["torch"].get_string().get(text_field)) c.torch = std::string(text_field);
  bool loaded = false;
  if (!doc["loaded"].get_bool().get(loaded)) c.load.loaded = loaded;
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

std::string calibrate_command(const std::vector<std::string>& dirs, const std::string& out, unsigned threads,
                              bool force, bool with_torch) {
  if (dirs.size() > 1) throw InputError("calibrate takes at most one directory, not " + std::to_string(dirs.size()));
  std::string path = out;
  if (path.empty() && !dirs.empty()) {
    struct stat st {};
    if (::stat(dirs[0].c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw InputError("calibrate: not a directory: " + dirs[0]);
    path = join_path(dirs[0], kCalibrationFileName);
  }
  if (path.empty()) path = default_calibration_path();
  Calibration c = measure_calibration(threads, force, with_torch);
  c.path = path;
  write_calibration(path, c);
  auto one_thread = [&](double v, const char* unit) {
    return c.threads > 1 && v > 0 ? "; 1 thread: " + fmt_num(v, 1) + unit : std::string();
  };
  std::string o = "peak float32 GFLOP/s: " + fmt_num(c.peak_gflops, 1) + " (" + c.gflops_kernel + ")" +
                  one_thread(c.gflops_1thread, " GFLOP/s") + "\npeak memory GB/s: " + fmt_num(c.peak_gbps, 1) +
                  " (" + c.gbps_kernel + ")" + one_thread(c.gbps_1thread, " GB/s") + "\n";
  o += c.torch.empty() ? "torch not measured: " + c.torch_note + "; the peaks are our kernels' alone\n"
                       : "torch " + c.torch + " measured beside our kernels\n";
  if (!c.note.empty()) o += c.note + "\n";
  if (c.load.loaded) o += "marked \"loaded\" (--force): " + c.load.line() + "\n";
  return o + "wrote " + path + "\n";
}

std::string above_peak_line(const Calibration& c) {
  return "! above 100 % of the peak: this run went faster than the calibration (" + c.path +
         (c.load.loaded ? ", measured on a loaded machine" : "") +
         ") says this machine can, so the calibration is too low: re-run 'dftracer-analyze calibrate' on a quiet "
         "machine, with the run's Python (torch importable) and thread count";
}

}  // namespace dftracer::analyze
