"""A signal that reaches a vfork child before its exec is the child's alone.

The child runs in its parent's memory until it execs, with a signal table of
its own. CPython's _posixsubprocess sets SIG_DFL there for every signal,
which gives it the tracer's handler; that handler used to wake the PARENT's
signal thread (its semaphore is in the shared memory), which then finalized
and killed the parent, while the child ran on with a 10 s alarm armed that
outlived its exec. Now the child dies of the signal as untraced and the
parent runs on, its trace intact. A C program under PRELOAD (vfork is
hooked on x86-64 only; the handler's check is on every architecture).
"""
import os
import shutil
import subprocess

import pytest

from conftest import _clean_env
from test_io_signals import preload_library
from trace_reader import read_trace, trace_files

PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static volatile pid_t child;
static void on_int(int s) { (void)s; }
static void* killer(void* a) {
  (void)a;
  while (!child) {
  }
  kill(child, SIGINT);
  return 0;
}
int main(void) {
  signal(SIGINT, on_int); /* the program's own handler, as CPython's */
  pthread_t t;
  pthread_create(&t, 0, killer, 0);
  pid_t p = vfork();
  if (p == 0) {
    signal(SIGINT, SIG_DFL); /* as _posixsubprocess's reset_signal_handlers */
    child = getpid();
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, 0);
    char b[64];
    int n = snprintf(b, sizeof b, "child alarm: %u\n", alarm(0));
    write(1, b, n);
    _exit(3);
  }
  int st;
  waitpid(p, &st, 0);
  pthread_join(t, 0);
  printf("child %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  struct sigaction now;
  sigaction(SIGINT, 0, &now);
  printf("parent handler kept %d\n", now.sa_handler == on_int);
  FILE* f = fopen(".", "r"); /* an event after the child's signal */
  if (f) fclose(f);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("traced", [False, True])
def test_a_signal_in_a_vfork_child_kills_the_child_not_the_parent(traced, tmp_path):
    src = tmp_path / "vf.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "vf"
    subprocess.run(["cc", "-O0", "-pthread", "-o", str(exe), str(src)], check=True)
    env = _clean_env()
    if traced:
        env.update(DFTRACER_ENABLE="1", DFTRACER_INIT="PRELOAD", DFTRACER_LOG_FILE=str(tmp_path / "t"),
                   LD_PRELOAD=preload_library())
    p = subprocess.run([str(exe)], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=60)
    # As untraced: the child dies of SIGINT before it prints, the parent exits 0.
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert p.stdout == "child signal 2\nparent handler kept 1\n", p.stdout
    if traced:
        files = trace_files(str(tmp_path))
        assert len(files) == 1, files
        events = read_trace(files[0])
        assert [e for e in events if e["name"] == "end"], "the parent's trace was not finalized at its exit"
