"""The analyzer on hostile inputs: sizes it must not trust, damaged
compressed data beside an intact index, paths and names that must not
change what is read or how much is written."""
import json
import os
import subprocess
import zlib

import pytest

from analyzer_cli import analyzer


def _event(name, ts, dur=5, tid=1):
    return json.dumps({"id": 0, "name": name, "cat": "c", "pid": 1, "tid": tid, "ts": ts, "dur": dur,
                       "ph": "X"}).encode() + b"\n"


def _run(args):
    """(exit status, stdout, stderr) of the analyzer run with `args`."""
    p = subprocess.run([analyzer()] + args, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def _peak_rss_kib(args):
    """The peak resident size of the analyzer run with `args`, that process alone (wait4's rusage)."""
    p = subprocess.Popen([analyzer()] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss


@pytest.mark.parametrize("first_member_alone", [False, True])
def test_a_huge_first_line_is_skipped_and_counted_with_bounded_memory(tmp_path, first_member_alone):
    # A 256 MiB line opening a .pfw.gz (it compresses to ~250 KB) was taken
    # for a whole JSON document: held whole (twice), then no event read and
    # nothing counted as skipped. It is one oversized line, like any other.
    path = tmp_path / "t.pfw.gz"
    with open(path, "wb") as f:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        f.write(c.compress(b'{"name":"'))
        block = b"a" * (1 << 20)
        for _ in range(256):
            f.write(c.compress(block))
        f.write(c.compress(b'","ph":"X","ts":1,"dur":1}\n'))
        if first_member_alone:  # the events in a member of their own
            f.write(c.flush())
            c = zlib.compressobj(6, zlib.DEFLATED, 31)
        f.write(c.compress(b"".join(_event("op", 1000 + i) for i in range(10))))
        f.write(c.flush())
    assert os.path.getsize(path) < 2 << 20
    rc, out, err = _run(["summary", "--format", "json", str(path)])
    assert rc == 0, err
    assert json.loads(out)["complete_events"] == 10
    assert err.strip().splitlines() == ["dftracer-analyze: skipped 1 line or document over the size limit "
                                        "(read 10 events from 1 files)"]
    # The default line limit is 16 MiB: the memory held stays near it, far below the line.
    assert _peak_rss_kib(["summary", str(path)]) < 120 << 10
