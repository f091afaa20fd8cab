#include "python_delegate.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace dftracer::analyze {

namespace {

bool wants_python(int argc, char** argv) {
  if (argc < 2) return false;
  if (std::strcmp(argv[1], "export") == 0) return true;
  if (std::strcmp(argv[1], "summary") != 0) return false;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--dask") == 0 || std::strncmp(argv[i], "--dask=", 7) == 0) return true;
  return false;
}

}  // namespace

std::string python_executable() {
  if (const char* p = std::getenv("DFTRACER_PYTHON"); p && *p) return p;
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    for (const char* name : {"python3", "python"})
      if (::access((dir + name).c_str(), X_OK) == 0) return dir + name;
  }
  return "python3";
}

int run_python_command(int argc, char** argv) {
  if (!wants_python(argc, argv)) return -1;
  std::string py = python_executable();
  std::vector<char*> args{const_cast<char*>(py.c_str()), const_cast<char*>("-m"),
                          const_cast<char*>("dftracer.analyze.cli")};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "dftracer-analyze: error: %s needs Python with dftracer installed: cannot run %s: %s\n",
               argv[1], py.c_str(), std::strerror(errno));
  return 2;
}

}  // namespace dftracer::analyze
