"""A forked child that cannot create its trace file (the descriptor limit
is reached) says so once for its whole process tree, not once a child: under
`ulimit -n 5` a program forking children that write used to print one
warning per child into its stderr. The program itself runs as untraced."""
import resource
import subprocess
import sys

from conftest import _clean_env
from test_io_signals import preload_library

# 0-2 and the two files take the five descriptors: a forked child cannot
# create its trace file.

PROGRAM = r"""
import os
f = open("a.txt", "w")
g = open("b.txt", "w")
for i in range(4):
    pid = os.fork()
    if pid == 0:
        os.write(f.fileno(), b"x")
        os._exit(0)
    os.waitpid(pid, 0)
print("done")
"""


def run(tmp_path, label):
    work = tmp_path / label
    (work / "traces").mkdir(parents=True)
    env = _clean_env()
    if label == "traced":
        env.update(DFTRACER_ENABLE="1", DFTRACER_INIT="PRELOAD", LD_PRELOAD=preload_library(),
                   DFTRACER_LOG_FILE=str(work / "traces" / "t"), DFTRACER_DATA_DIR=str(work))

    def limit_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (5, 5))

    return subprocess.run([sys.executable, "-S", "-c", PROGRAM], cwd=str(work), env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=limit_descriptors)


def test_children_over_the_descriptor_limit_warn_once(tmp_path):
    untraced, traced = run(tmp_path, "untraced"), run(tmp_path, "traced")
    assert (traced.returncode, traced.stdout) == (untraced.returncode, untraced.stdout) == (0, "done\n")
    assert untraced.stderr == ""
    lines = traced.stderr.splitlines()
    assert len(lines) == 1, traced.stderr
    assert lines[0].startswith("[dftracer] warning: cannot create trace file") and "said once" in lines[0], lines
    assert (tmp_path / "traced" / "a.txt").read_text() == (tmp_path / "untraced" / "a.txt").read_text() == "xxxx"
