"""A SIGKILLed process's trace (no `end`, no `]`) keeps what was flushed
before the kill, and both our analyzer and DFTracer's own tools read it up
to there: every gzip member complete, every line JSON. The program waits
past several flush intervals before killing itself, so the kill never falls
inside a member's write."""
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import _clean_env
from reference_tools import SKIP_REASON, have_tools
from test_dftracer_tools import ours, tool
from trace_reader import read_trace, trace_files

pytestmark = pytest.mark.skipif(not have_tools(), reason=SKIP_REASON)

PROGRAM = """
import os, signal, time
from dftracer.python import dft_fn
for i in range(5000):
    with dft_fn("app", "flushed"):
        pass
time.sleep(1)  # ten flush intervals: all of it written, the writer idle
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("compression", ["1", "0"])
def test_a_sigkilled_trace_reads_up_to_the_kill(tmp_path, compression):
    traces = tmp_path / "traces"
    traces.mkdir()
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(PROGRAM))
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_TRACE_COMPRESSION=compression, DFTRACER_LOG_FILE=str(traces / "t"))
    p = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    files = trace_files(str(traces))
    assert len(files) == 1, files
    path = files[0]
    events = read_trace(path)  # every line JSON, the gzip members complete
    assert sum(e["name"] == "flushed" for e in events) == 5000
    assert "end" not in {e["name"] for e in events}
    want = ours(path)
    assert want["by_name"]["flushed"][0] == 5000
    gz_dir = tmp_path / "gz"
    gz_dir.mkdir()
    gz = gz_dir / (os.path.basename(path) + ("" if path.endswith(".gz") else ".gz"))
    if path.endswith(".gz"):
        gz.write_bytes(open(path, "rb").read())
    else:  # the tools read gzip only (test_dftracer_tools.py)
        import gzip
        gz.write_bytes(gzip.compress(open(path, "rb").read()))
    out = tool("dftracer_validate", "--files", str(gz), cwd=str(tmp_path))
    m = re.search(r"Validated 1 file\(s\): (\d+) passed, (\d+) failed", out)
    assert m and m.group(1, 2) == ("1", "0"), out
    out = tool("dftracer_event_count", "-d", str(gz_dir), "--index-dir", str(tmp_path), cwd=str(tmp_path))
    assert int(out.strip().splitlines()[-1]) == want["timed"], out
