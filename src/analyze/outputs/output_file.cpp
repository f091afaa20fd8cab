#include "output_file.hpp"

#include "path_check.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

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

namespace {

// The file a name stands for: a symlink's target, so that the rename
// replaces the file the user named and not the link (a dangling link: itself).
std::string resolved(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

mode_t default_file_mode() {
  mode_t mask = ::umask(0);  // the only way to read it; set back at once
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path) {
  refuse_nul_in_path(path);
  const std::string target = resolved(path);
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISFIFO(st.st_mode)) {
    open_fifo(target);
    return;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) fail(errno);
    return;
  }
  path_ = target;
  const size_t slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  std::string tmpl = dir + "." + base + ".tmp-XXXXXX";
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) fail(errno);
  temp_ = tmpl;
  // mkostemp makes it 0600; the output gets the mode an ordinary create would.
  if (::fchmod(fd, exists ? (st.st_mode & 07777) : default_file_mode()) != 0 || !(file_ = ::fdopen(fd, "wb"))) {
    int e = errno;
    ::close(fd);
    fail(e);
  }
}

// A FIFO: opening it for writing blocks until some process opens it for
// reading, forever if none does (a stale FIFO, a typo). The reader may well
// start just after us (`analyze -o p & cat p`), so a reader is waited for,
// but for at most kFifoReaderWaitMs; then the run fails with a clear error
// instead of hanging.
void OutputFile::open_fifo(const std::string& path) {
  constexpr int kFifoReaderWaitMs = 10000, kPollMs = 20;
  int fd = -1;
  for (int waited = 0;; waited += kPollMs) {
    fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0 || errno != ENXIO) break;  // ENXIO: no reader yet
    if (waited >= kFifoReaderWaitMs)
      throw InputError("cannot write " + path + ": no process opened the FIFO for reading within " +
                       std::to_string(kFifoReaderWaitMs / 1000) + " s");
    ::usleep(kPollMs * 1000);
  }
  if (fd < 0) fail(errno);
  // Writes block as to any pipe once the reader is there.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || !(file_ = ::fdopen(fd, "wb"))) {
    const int e = errno;
    ::close(fd);
    fail(e);
  }
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void OutputFile::fail(int err) {
  throw InputError("cannot write " + path_ + ": " + std::strerror(err ? err : EIO));
}

void OutputFile::commit() {
  std::FILE* f = file_;
  file_ = nullptr;
  bool ok = std::fflush(f) == 0 && !std::ferror(f);
  int e = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (!ok) fail(e);
  if (temp_.empty()) return;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail(errno);
  temp_.clear();
}

void write_output_file(const std::string& path, std::string_view text) {
  OutputFile out(path);
  if (!write_all(out.stream(), text)) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  out.commit();
}

void write_stdout(std::string_view text) {
  if (!write_all(stdout, text)) throw InputError(std::string("cannot write to standard output: ") + std::strerror(errno));
}

}  // namespace dftracer::analyze
