"""Where the signal thread cannot start (pthread_create fails: a thread
limit), no signal handler of the tracer's is installed, and a forked child
whose signal thread cannot start gives the handlers it inherited their
default action back: a signal then kills as untraced. The handler used to be
installed all the same: it posted a semaphore nobody waited on, and a
program that sent itself SIGTERM ran on (for up to the 10 s alarm).

A preloaded shim makes the first pthread_create the tracer's core makes (the
signal thread's: the hooks are installed before the writer starts) fail,
in the process or only in its forked child."""
import os
import shutil
import signal
import subprocess

import pytest

from conftest import _clean_env
from test_io_signals import preload_library

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef int (*fn_t)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
static pid_t failed_in;
int pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*start)(void*), void* arg) {
  static fn_t real;
  if (!real) real = (fn_t)dlsym(RTLD_NEXT, "pthread_create");
  Dl_info info;
  const char* where = getenv("SHIM_FAIL");  /* "parent" or "child" */
  static pid_t first_pid;
  if (!first_pid) first_pid = getpid();
  int in_child = getpid() != first_pid;
  if (where && failed_in != getpid() && (in_child == (strcmp(where, "child") == 0)) &&
      dladdr(__builtin_return_address(0), &info) && info.dli_fname && strstr(info.dli_fname, "libdftracer_core")) {
    failed_in = getpid();
    return EAGAIN;
  }
  return real(t, a, start, arg);
}
"""

PROGRAM = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static void die_by_own_signal(void) {
  kill(getpid(), SIGTERM);
  write(1, "ran on\n", 7);
  _exit(0);
}
int main(int argc, char** argv) {
  if (strcmp(argv[1], "child") == 0) {
    pid_t p = fork();
    if (p == 0) die_by_own_signal();
    int st;
    waitpid(p, &st, 0);
    printf("child %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    return 0;
  }
  die_by_own_signal();
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("where", ["parent", "child"])
def test_no_handler_without_a_signal_thread(where, tmp_path):
    (tmp_path / "shim.c").write_text(SHIM)
    (tmp_path / "prog.c").write_text(PROGRAM)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "shim.so"), str(tmp_path / "shim.c"), "-ldl"],
                   check=True)
    subprocess.run(["cc", "-o", str(tmp_path / "prog"), str(tmp_path / "prog.c")], check=True)
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_INIT="PRELOAD", DFTRACER_LOG_FILE=str(tmp_path / "t"),
               LD_PRELOAD=str(tmp_path / "shim.so") + ":" + preload_library(), SHIM_FAIL=where)
    p = subprocess.run([str(tmp_path / "prog"), where], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       timeout=60)
    if where == "parent":
        assert (p.returncode, p.stdout) == (-signal.SIGTERM, ""), (p.returncode, p.stdout, p.stderr)
        assert "cannot start the signal thread" in p.stderr
    else:
        assert (p.returncode, p.stdout) == (0, "child signal 15\n"), (p.returncode, p.stdout, p.stderr)
