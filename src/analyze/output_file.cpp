#include "output_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dftracer::analyze {

namespace {

bool same_file(const struct stat& a, const std::string& path) {
  struct stat b {};
  return ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// fwrite + fflush, then the stream's error flag: stdio may keep a failed write
// in its buffer until the flush.
bool write_all(std::FILE* f, std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), f) != text.size()) return false;
  return std::fflush(f) == 0 && !std::ferror(f);
}

}  // namespace

void refuse_input_as_output(const std::string& out, const std::vector<std::string>& inputs) {
  struct stat o {};
  if (::stat(out.c_str(), &o) != 0) return;  // not there yet: it cannot be an input
  for (const std::string& in : inputs) {
    for (const std::string& p : {in, in + ".idx"}) {
      if (same_file(o, p))
        throw InputError("output " + out + " is the input " + p + "; refusing to overwrite it");
    }
  }
}

void write_output_file(const std::string& path, std::string_view text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  bool ok = write_all(f, text);
  int e = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (!ok) throw InputError("cannot write " + path + ": " + std::strerror(e));
}

void write_stdout(std::string_view text) {
  if (!write_all(stdout, text)) throw InputError(std::string("cannot write to standard output: ") + std::strerror(errno));
}

}  // namespace dftracer::analyze
