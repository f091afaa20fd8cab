// This machine's peaks for the efficiency figures (efficiency.hpp), measured,
// never taken from a vendor's sheet: `dftracer-analyze calibrate` times our
// float32 matrix multiply and memory triad (calibrate_kernels.cpp) and, when
// a Python with torch is there, torch's own mm, conv2d, copy and add
// (calibrate_torch.cpp), at 1 thread and at every CPU it may run on, and
// stores the best figure of each kind as the peak, with every figure, as
// JSON. A peak must be at least what the best kernel on the machine reaches,
// or the ops that run that kernel read above 100 %.
//
// Where a calibration is looked for, first hit wins:
//   1. a file named explicitly (--calibration FILE, calibration=...);
//   2. beside the trace: <dir of an input>/dftracer-calibration.json;
//   3. the user's cache: $XDG_CACHE_HOME/dftracer/calibration.json
//      (~/.cache/dftracer/calibration.json without XDG_CACHE_HOME).
#pragma once

#include <string>
#include <vector>

namespace dftracer::analyze {

inline constexpr const char* kCalibrationFileName = "dftracer-calibration.json";

// One measurement calibrate took (ours or torch's), as stored in the file.
struct CalibrationFigure {
  std::string kernel;
  unsigned threads = 0;
  double gflops = 0, gbps = 0;  // the one that is > 0 is what it measured
};

// The machine's load as calibrate saw it (see check_load()).
struct LoadCheck {
  unsigned cores = 0;          // online CPUs
  unsigned threads = 0;        // what calibrate runs on
  double load1 = 0;            // the 1-minute load average (for the record)
  double other_runnable = 0;   // median of a few readings of runnable tasks, less this one
  double cpu_share = 1;        // our kernels' CPU time over threads x wall (1 when not measured)
  bool loaded = false;         // other_runnable > cores - threads, or cpu_share < kMinCpuShare
  std::string line() const;    // one line saying so
};

inline constexpr double kMinCpuShare = 0.85;

struct Calibration {
  double peak_gflops = 0;  // the best float32 matmul/conv figure at any thread count
  double peak_gbps = 0;    // the best memory figure (bytes read + written) at any thread count
  unsigned threads = 0;    // CPUs the kernels ran on
  std::string host;        // where it was measured (gethostname)
  std::string path;        // the file it was read from or written to
  // What gave each peak, and the best 1-thread figures.
  std::string gflops_kernel, gbps_kernel;
  double gflops_1thread = 0, gbps_1thread = 0;
  std::vector<CalibrationFigure> figures;  // every measurement
  std::string torch;                       // torch's version, "" when it was not measured
  std::string torch_note;                  // why torch was not measured
  std::string note;                        // a 1-thread figure above every N-thread one, said here
  LoadCheck load;
  bool valid() const { return peak_gflops > 0 && peak_gbps > 0; }
};

// /proc/loadavg, or the file $DFTRACER_LOADAVG names (a test's fake load):
// `samples` readings 50 ms apart of its runnable count (the 4th field's
// numerator, less this reader), their median taken; the machine is loaded
// when that exceeds the cores calibrate leaves free (online CPUs minus
// `threads`). The 1-minute average (1st field) is recorded, not used: it
// lags by a minute and still holds calibrate's own previous run.
LoadCheck check_load(unsigned threads, int samples = 5);

// Takes the peaks from `c.figures`: the best GFLOP/s and GB/s at any thread
// count (an N-thread peak below a 1-thread one is raised to it, and
// c.note says so), with the kernel that gave each.
void take_peaks(Calibration& c);

// Runs our kernels at 1 and `threads` threads (0 = the CPUs of the affinity
// mask), then torch's (calibrate_torch.hpp) unless `with_torch` is false,
// and takes the peaks. A loaded machine (check_load, or our kernels' CPU
// share below kMinCpuShare) is said on stderr and measured again, up to 3
// times; still loaded, it throws InputError, unless `force`: then the
// result has load.loaded set. A few seconds.
Calibration measure_calibration(unsigned threads, bool force = false, bool with_torch = true);

// The JSON document written by `calibrate`.
std::string calibration_json(const Calibration& c);
// Writes calibration_json() to `path`, creating its directory. Throws InputError.
void write_calibration(const std::string& path, const Calibration& c);
// Reads a file written by write_calibration. Throws InputError with one line
// naming the file and what was wrong (unreadable, not JSON, a peak <= 0).
Calibration read_calibration(const std::string& path);

// Where `calibrate` writes by default (the user's cache dir, see above).
std::string default_calibration_path();
// The calibration file for `inputs` by the order above ("" when none exists);
// `explicit_path`, when not empty, must exist (InputError otherwise).
std::string find_calibration(const std::vector<std::string>& inputs, const std::string& explicit_path);

// `dftracer-analyze calibrate [DIR] [-o FILE] [--force] [--no-torch]`:
// measures (measure_calibration) and writes to FILE, else
// DIR/dftracer-calibration.json, else default_calibration_path(); returns
// the lines it prints. Throws InputError (DIR not a directory, more than
// one DIR, a loaded machine without `force`, a write that failed).
std::string calibrate_command(const std::vector<std::string>& dirs, const std::string& out, unsigned threads,
                              bool force = false, bool with_torch = true);

// The line that follows an efficiency above 100 % of the peak (`summary
// --efficiency`, the report's roofline): the calibration, not the run, is
// wrong.
std::string above_peak_line(const Calibration& c);

}  // namespace dftracer::analyze
