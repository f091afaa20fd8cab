// Writes N small finalized traces with the real writer (the core's C API,
// one session per file, re-initialised in this process), for the
// write-time index benchmark (bench_index.py):
//
//   gen_indexed_traces DIR [FILES=1000] [EVENTS_PER_FILE=1000]
//   -> DIR/f<i>-gen_indexed_traces-<pid>[-<n>].pfw.gz and their .idx
//
// Each file: steps of 8 nested op events under one step region, on two
// threads, with a few flushes so files have several gzip members.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "dftracer/dftracer.h"

namespace {

void ops(uint64_t base, size_t steps, uint64_t thread_offset) {
  const char* names[] = {"aten.mm", "aten.add", "aten.relu", "aten.mul", "aten.view", "aten.gelu", "aten.bmm", "aten.t"};
  dft_id cat = dft_intern_cstr("dynamo"), step = dft_intern_cstr("step"), loop = dft_intern_cstr("loop");
  for (size_t s = 0; s < steps; ++s) {
    uint64_t t0 = base + s * 100000 + thread_offset;
    for (int k = 0; k < 8; ++k)
      dft_complete_ns(dft_intern_cstr(names[k]), cat, t0 + 1000 + k * 10000, 5000 + (s * 37 + k * 11) % 4000, nullptr, 0);
    dft_complete_ns(step, loop, t0, 90000, nullptr, 0);
    if (s % 50 == 49) dft_flush();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gen_indexed_traces DIR [FILES] [EVENTS_PER_FILE]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const size_t files = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000;
  const size_t events = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000;
  const size_t steps = events / 9 / 2 + 1;  // 9 events a step, two threads
  for (size_t i = 0; i < files; ++i) {
    std::string prefix = dir + "/f" + std::to_string(i);
    if (dft_init_opt_in(prefix.c_str(), nullptr, static_cast<int64_t>(i)) != 0) {
      std::fprintf(stderr, "cannot start tracing to %s\n", prefix.c_str());
      return 1;
    }
    uint64_t base = 1700000000000000000ull + i * 1000000000ull;
    std::thread other(ops, base, steps, 500);
    ops(base, steps, 0);
    other.join();
    dft_finalize();
  }
  return 0;
}
