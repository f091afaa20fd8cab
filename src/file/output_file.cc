#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "dftracer/dftracer.h"

namespace dftracer {

bool OutputFile::create_new(const std::string& path) {
  close();
  // O_EXCL with O_CREAT already refuses a symlink as the last component;
  // O_NOFOLLOW says so explicitly.
  path_ = path;  // before open(): its errno is the caller's answer
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  return fd_ >= 0;
}

int OutputFile::write_all(const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd_, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return 0;
}

void OutputFile::close(bool warn_if_deleted) {
  if (fd_ < 0) return;
  struct stat st;
  if (warn_if_deleted && fstat(fd_, &st) == 0 && st.st_nlink == 0) {
    std::string msg = "trace file " + path_ + " was deleted while it was being written; its events are lost";
    dft_warn(msg.c_str());
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace dftracer
