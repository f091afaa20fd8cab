// Built against an installed dftracer: records a region and checks the
// trace file exists (the test runs it).
#include <cstdio>
#include <string>

#include "dftracer/dftracer.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || dft_init_opt_in(argv[1], nullptr, -1) != 0) return 2;
  std::string path = dft_trace_path();
  { DFT_REGION("consumer", "app"); }
  dft_finalize();
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 3;
  std::fclose(f);
  std::printf("%s\n", path.c_str());
  return 0;
}
