"""Where the tests find the `dftracer-analyze` command: $DFTRACER_ANALYZE_BIN,
beside this interpreter or on PATH (the wheel installs it), or in a CMake build
directory of this checkout (newest first). Skips the test when none is built."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def analyzer():
    # This interpreter's own install before PATH: a dftracer-analyze of another
    # install on PATH (an older build) would test the wrong code.
    cands = [os.environ.get("DFTRACER_ANALYZE_BIN"), os.path.join(os.path.dirname(sys.executable), "dftracer-analyze"),
             shutil.which("dftracer-analyze")]
    cands += sorted(glob.glob(os.path.join(ROOT, "build*", "src", "analyze", "dftracer-analyze")),
                    key=os.path.getmtime, reverse=True)
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    pytest.skip("dftracer-analyze not built (set DFTRACER_ANALYZE_BIN)")


def analyzer_json(*args, timeout=300):
    """The command's JSON answer (`--format json --no-progress`); fails the test with its stderr."""
    p = subprocess.run([analyzer(), *args, "--format", "json", "--no-progress"], capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# Forks and execs the command from a fresh, small interpreter and prints its
# rusage's ru_maxrss. Measured from pytest's own process instead, Linux counts
# the peak of the memory the child had before exec (pytest's, hundreds of MiB
# once torch is imported) in the child's ru_maxrss.
_RSS_SHIM = """
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def analyzer_peak_rss_kib(args, expect_ok=True):
    """The peak resident size (KiB) of the analyzer run with `args`, that process alone."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _RSS_SHIM, analyzer(), *args], capture_output=True, text=True,
                         timeout=600, check=True).stdout.split()
    if expect_ok:
        assert out[0] == "0", f"dftracer-analyze {' '.join(args)} exited {out[0]}"
    return int(out[1])
