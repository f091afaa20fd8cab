"""Where the tests find the `dftracer-analyze` command: $DFTRACER_ANALYZE_BIN,
beside this interpreter or on PATH (the wheel installs it), or in a CMake build
directory of this checkout (newest first). Skips the test when none is built."""
import glob
import os
import shutil
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
