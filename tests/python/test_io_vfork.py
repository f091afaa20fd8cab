"""A subprocess started by CPython (vfork since 3.10) leaves the parent's
tracing state alone. The vfork child runs in the parent's memory until it
execs: its dup2() of a log file onto stdout/stderr, its chdir() to `cwd=` and
its closes used to act on the parent's descriptor table and working
directory, and were recorded as the parent's (src/capture/io/vfork_hook.c). Runs in
FUNCTION mode and under PRELOAD; reads the parent's trace back."""
import os
import subprocess
import sys

import pytest

from conftest import _clean_env
from test_io_signals import preload_library
from trace_reader import read_trace, trace_files

PROGRAM = r"""
import os, subprocess, sys
data = sys.argv[1]
os.chdir(os.path.dirname(data))
with open(os.path.join(data, "child.log"), "w") as log:
    subprocess.run(["/bin/echo", "from the child"], stdout=log, stderr=log, cwd=os.path.join(data, "sub"),
                   check=True)
    print("parent stdout line", flush=True)
    os.write(2, b"parent stderr line\n")
    log.write("parent line\n")
with open(os.path.join(os.path.basename(data), "rel.bin"), "wb") as f:  # relative to the parent's cwd
    f.write(b"x" * 10)
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="vfork is hooked on x86-64 only")
@pytest.mark.parametrize("mode", ["function", "preload"])
def test_a_subprocess_leaves_the_parents_descriptors_and_directory_alone(mode, tmp_path):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    traces = tmp_path / "traces"
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=str(traces / "t"), DFTRACER_DATA_DIR=str(data))
    code = PROGRAM
    if mode == "function":
        code = "import dftracer.python\n" + code
    else:
        env.update(DFTRACER_INIT="PRELOAD", LD_PRELOAD=preload_library())
    p = subprocess.run([sys.executable, "-c", code, str(data)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout == "parent stdout line\n" and "parent stderr line" in p.stderr
    assert (data / "child.log").read_text() == "from the child\nparent line\n"
    # The parent's file (under PRELOAD echo writes its own, t-echo-<pid>).
    parent = [f for f in trace_files(str(traces)) if os.path.basename(f).startswith("t-python")]
    assert len(parent) == 1, trace_files(str(traces))
    events = read_trace(parent[0])
    fh = {e["args"]["value"]: e["args"]["name"] for e in events if e["name"] == "FH"}
    io = [e for e in events if e.get("cat") in ("POSIX", "STDIO")]
    log = [e for e in io if fh.get(e["args"].get("fhash")) == str(data / "child.log")]
    # The parent's own calls on the log: open, its write of "parent line", close. Nothing the
    # child did (dup2 onto 1 and 2), and no write on the parent's stdout or stderr as the log.
    assert not [e for e in io if e["name"] in ("dup2", "dup3", "chdir")], io
    assert not [e for e in log if e["args"].get("fd") in (1, 2)], log
    writes = [e for e in log if e["name"] == "write"]
    assert [w["args"]["ret"] for w in writes] == [len("parent line\n")]
    assert [e["name"] for e in log if e["name"] in ("open", "open64", "close")] == ["open64", "close"]
    # The relative open is named from the parent's directory, not the child's cwd=.
    assert str(data / "rel.bin") in fh.values(), fh
    assert not [n for n in fh.values() if "/sub/" in n], fh
