// calibrate's second source of peaks: torch's own kernels (MKL/oneDNN
// matmul and convolution, ATen's copy and add), timed by a short script in a
// Python that can import torch (python_executable(): $DFTRACER_PYTHON, the
// python3 beside the analyzer, python3 on PATH). The analyzer links no
// torch; the ops a trace records run those kernels, so a peak below what
// they reach would make them read above 100 %.
#pragma once

#include <string>
#include <vector>

namespace dftracer::analyze {

// One timed kernel: GFLOP/s (gflops > 0) or GB/s (gbps > 0) at `threads`.
struct KernelFigure {
  std::string kernel;
  unsigned threads = 0;
  double gflops = 0, gbps = 0;
};

struct TorchFigures {
  std::vector<KernelFigure> figures;  // empty when torch could not be run
  std::string version;                // torch.__version__
  std::string python;                 // the interpreter that ran it
  std::string note;                   // why there are no figures (one line)
};

// Runs the script at each of `thread_counts` (torch.set_num_threads): mm at
// 512, 1024 and 2048 (and 4096 from 4 threads up), one conv2d, a 64 MiB copy
// and add; best of 3 trials each; a few seconds. Never throws: a Python
// without torch, a crash or `timeout_s` passing gives a note instead.
TorchFigures measure_torch(const std::vector<unsigned>& thread_counts, double timeout_s = 120);

}  // namespace dftracer::analyze
