// OutputFile: a file descriptor a sink writes to, with the two things every
// file sink needs: write() all of it (EINTR, short writes) and, at close,
// a warning when the file was deleted while it was being written.
#ifndef DFTRACER_SRC_FILE_OUTPUT_FILE_H_
#define DFTRACER_SRC_FILE_OUTPUT_FILE_H_

#include <cstddef>
#include <string>

namespace dftracer {

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile() { close(); }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Creates `path`, which must not exist yet. False (errno set) when it
  // cannot; errno EEXIST when the name is taken (a file, or a symlink, even a
  // dangling one: the last component is never followed). Never truncating
  // an existing file is what keeps two processes that were given the same
  // pid (process_id, or a reused pid) from overwriting each other's trace,
  // and a planted symlink from aiming our writes at another file.
  bool create_new(const std::string& path);
  bool is_open() const { return fd_ >= 0; }
  // Writes all `len` bytes. 0 on success, else the errno of the failure
  // (ENOSPC for a write that wrote nothing).
  int write_all(const char* data, size_t len);
  // Closes; warns when `warn_if_deleted` and the file had been unlinked.
  void close(bool warn_if_deleted = false);
  // The descriptor, or -1 when closed.
  int fd() const { return fd_; }
  // Forgets the descriptor without closing it: the number means another
  // file (or none) in this thread's descriptor table (TraceSink).
  void forget() { fd_ = -1; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_OUTPUT_FILE_H_
