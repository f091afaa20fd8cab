/* A library the FUNCTION-mode suite dlopen's after dft_io_install(): its
 * I/O must be traced too (the dlopen hook patches it as it arrives). */
#include <fcntl.h>
#include <unistd.h>

__attribute__((visibility("default"))) long probe_read_file(const char* path) {
  char buf[256];
  long total = 0;
  ssize_t n;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  while ((n = read(fd, buf, sizeof buf)) > 0) total += n;
  close(fd);
  return total;
}
