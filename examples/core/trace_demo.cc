// A C++ program traced with the C++ API: nested regions on two threads,
// then a summary of what was written. Usage: dftracer_demo [log_prefix]
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "dftracer/dftracer.hpp"

namespace {

double work(int n) {
  DFT_FUNCTION("compute");
  double acc = 0;
  for (int i = 1; i <= n; ++i) acc += 1.0 / i;
  return acc;
}

void load_batch(int step) {
  DFT_REGION("load_batch", "io");
  static const dft_id k_step = dftracer::intern("step");
  (void)k_step;
  work(20000 + step);
}

}  // namespace

int main(int argc, char** argv) {
  const char* prefix = argc > 1 ? argv[1] : "./dftracer-demo";
  if (dft_init_opt_in(prefix, nullptr, -1) != 0) {
    std::fprintf(stderr, "tracing could not start (see the warning above)\n");
    return 1;
  }
  std::string path = dft_trace_path();
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([t] {
      dft_set_thread_name(t == 0 ? "loader" : "trainer");
      for (int step = 0; step < 1000; ++step) {
        DFT_REGION("step", "app");
        load_batch(step);
        work(5000);
      }
    });
  }
  for (auto& th : threads) th.join();
  dft_finalize();
  dft_stats st;
  dft_get_stats(&st);
  std::printf("trace: %s\nevents: %llu written, %llu dropped, %llu bytes\n", path.c_str(),
              static_cast<unsigned long long>(st.events_written), static_cast<unsigned long long>(st.events_dropped),
              static_cast<unsigned long long>(st.bytes_written));
  return 0;
}
