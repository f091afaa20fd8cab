/*
 * The program io_image_end_test runs under LD_PRELOAD=libdftracer_preload.so:
 * each mode writes IN/<mode>.bin (a traced write under DFTRACER_DATA_DIR),
 * then ends its image or changes its credentials the way the mode names,
 * for the hooks of exit_hooks.c and cred_hooks.c (also in the ASan+UBSan
 * build). Exit status 0 when the program saw what an untraced run sees.
 *   _exit IN / _Exit IN   end with _exit(0) / _Exit(0)
 *   exec IN SELF          execv(SELF, {SELF, "after", IN}): the new image
 *                         writes IN/after.bin and returns
 *   execfail IN           execv of a missing file fails (errno ENOENT kept);
 *                         then writes IN/again.bin and returns
 *   execl IN SELF         execl(SELF, SELF, "after", IN, NULL)
 *   forkexit IN           a forked child writes IN/child.bin and _exit(0)s
 *   setuid IN             setuid(getuid()), setgroups of the current list:
 *                         then the process has one thread (/proc/self/task)
 *                         and LD_PRELOAD names no library of ours; writes
 *                         IN/later.bin (untraced) and returns
 *   unshare IN            unshare(CLONE_NEWUSER) (EPERM accepted: a sandbox
 *                         may refuse it; EINVAL, a second thread, is not),
 *                         then as setuid: one thread, LD_PRELOAD cleared
 *   after IN              writes IN/after.bin and returns
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  if (write(fd, "0123456789", 10) != 10) exit(2);
  close(fd);
}

static int threads_of_this_process(void) {
  DIR* d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

int main(int argc, char** argv) {
  if (argc < 3) return 64;
  const char* mode = argv[1];
  const char* in = argv[2];
  if (strcmp(mode, "after") == 0) {
    write_file(in, "after");
    return 0;
  }
  write_file(in, mode[0] == '_' ? mode + 1 : mode);
  if (strcmp(mode, "_exit") == 0) _exit(0);
  if (strcmp(mode, "_Exit") == 0) _Exit(0);
  if (strcmp(mode, "exec") == 0 && argc >= 4) {
    char* const args[] = {argv[3], (char*)"after", (char*)in, NULL};
    execv(argv[3], args);
    return 3;
  }
  if (strcmp(mode, "execl") == 0 && argc >= 4) {
    execl(argv[3], argv[3], "after", in, (char*)NULL);
    return 3;
  }
  if (strcmp(mode, "execfail") == 0) {
    char* const args[] = {(char*)"missing", NULL};
    errno = 0;
    if (execv("/nonexistent/io_image_end_missing", args) != -1 || errno != ENOENT) return 4;
    write_file(in, "again");
    return 0;
  }
  if (strcmp(mode, "forkexit") == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      write_file(in, "child");
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 5;
    return 0;
  }
  if (strcmp(mode, "setuid") == 0 || strcmp(mode, "unshare") == 0) {
    if (mode[0] == 'u') {
      if (unshare(CLONE_NEWUSER) != 0 && errno != EPERM) return 10;
    } else {
      if (setuid(getuid()) != 0) return 6;
      gid_t groups[256];
      int n = getgroups(256, groups);
      if (n < 0 || (setgroups((size_t)n, groups) != 0 && errno != EPERM)) return 7;
    }
    if (threads_of_this_process() != 1) return 8;
    const char* pre = getenv("LD_PRELOAD");
    if (pre != NULL && strstr(pre, "libdftracer_preload") != NULL) return 9;
    write_file(in, "later");
    return 0;
  }
  return 64;
}
