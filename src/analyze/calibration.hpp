// This machine's peaks for the efficiency figures (efficiency.hpp), measured,
// never taken from a vendor's sheet: `dftracer-analyze calibrate` times a
// float32 matrix multiply and a memory triad on every CPU it may run on
// (calibrate_kernels.cpp) and stores the best of a few trials as JSON.
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

struct Calibration {
  double peak_gflops = 0;  // float32 matmul, all CPUs, best trial
  double peak_gbps = 0;    // triad a = b + s * c, bytes read + written, best trial
  unsigned threads = 0;    // CPUs the kernels ran on
  std::string host;        // where it was measured (gethostname)
  std::string path;        // the file it was read from or written to
  bool valid() const { return peak_gflops > 0 && peak_gbps > 0; }
};

// Runs the two kernels on `threads` threads (0 = the CPUs of the affinity
// mask); takes about two seconds.
Calibration measure_calibration(unsigned threads);

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

// `dftracer-analyze calibrate [DIR] [-o FILE]`: measures and writes to FILE,
// else DIR/dftracer-calibration.json, else default_calibration_path();
// returns the lines it prints. Throws InputError (DIR not a directory, more
// than one DIR, a write that failed).
std::string calibrate_command(const std::vector<std::string>& dirs, const std::string& out, unsigned threads);

}  // namespace dftracer::analyze
