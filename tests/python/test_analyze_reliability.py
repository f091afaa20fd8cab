"""dftracer.analyze never destroys an input, never kills the interpreter on a
write error, and takes `threads` by one rule in every function."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import dftracer.analyze as da

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)


def _write_trace(path, n=3):
    events = [{"id": i, "name": f"function.op{i % 5}", "cat": "torch", "pid": 7, "tid": 8,
               "ts": 1.7e15 + 10.0 * i, "dur": 2.0, "ph": "X", "args": {"step": i}} for i in range(n)]
    with open(path, "w") as f:
        f.write("[\n" + "".join(json.dumps(e) + ",\n" for e in events))
    return str(path)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_merge_refuses_to_overwrite_an_input(tmp_path):
    src = _write_trace(tmp_path / "t.pfw")
    before = _read(src)
    os.link(src, tmp_path / "hard.pfw")
    for out in (src, str(tmp_path / "hard.pfw"), str(tmp_path / "." / "t.pfw")):
        with pytest.raises(OSError, match="refusing to overwrite it"):
            da.merge(src, out)
        assert _read(src) == before
    # The .idx sidecar of an input is an input too.
    gz = tmp_path / "z.pfw.gz"
    subprocess.run(["gzip", "-k", "-c", src], stdout=open(gz, "wb"), check=True)
    idx = str(gz) + ".idx"
    with open(idx, "w") as f:
        f.write(f"0 {os.path.getsize(gz)} 0 0\n")
    idx_before = _read(idx)
    with pytest.raises(OSError, match="refusing to overwrite it"):
        da.merge([str(gz)], idx)
    assert _read(idx) == idx_before


@pytest.mark.skipif(not os.access("/dev/full", os.W_OK), reason="no /dev/full")
def test_merge_write_error_raises_instead_of_killing_the_interpreter(tmp_path):
    # Two traces of ~1.5 MB each: merge's output blocks are written from both
    # reader threads. This used to call std::terminate (the interpreter died),
    # so it runs in a child interpreter.
    for name in ("a.pfw", "b.pfw"):
        _write_trace(tmp_path / name, n=12000)
    code = textwrap.dedent(f"""
        import dftracer.analyze as da
        try:
            da.merge({str(tmp_path)!r}, "/dev/full", threads=2)
        except OSError as e:
            print("OSError:", e)
        print("still alive")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "OSError: cannot write /dev/full: No space left on device" in r.stdout, r.stdout
    assert "still alive" in r.stdout


@pytest.mark.parametrize("bad", [0, -1, 1025, 10**6, 2**32 + 1])
def test_threads_out_of_range_is_a_value_error_everywhere(tmp_path, bad):
    src = _write_trace(tmp_path / "t.pfw")
    with pytest.raises(ValueError, match=f"threads must be between 1 and 1024, not {bad}"):
        da.summary(src, threads=bad)
    with pytest.raises(ValueError, match=f"threads must be between 1 and 1024, not {bad}"):
        da.events(src, threads=bad)  # threads=0 used to be taken as 1 here
    with pytest.raises(ValueError, match=f"threads must be between 1 and 1024, not {bad}"):
        da.merge(src, str(tmp_path / "m.json"), threads=bad)
    assert not os.path.exists(tmp_path / "m.json")


@pytest.mark.parametrize("bad", [2.5, "2", True])
def test_threads_that_are_not_integers_are_a_type_error(tmp_path, bad):
    src = _write_trace(tmp_path / "t.pfw")
    with pytest.raises(TypeError, match="threads must be an int or None"):
        da.summary(src, threads=bad)
    with pytest.raises(TypeError, match="threads must be an int or None"):
        da.events(src, threads=bad)


def test_threads_beyond_the_work_read_everything(tmp_path):
    src = _write_trace(tmp_path / "t.pfw", n=10)
    assert da.summary(src, threads=1024)["count"].sum() == 10
    assert da.summary(src, threads=None)["count"].sum() == 10
    assert sum(len(b) for b in da.events(src, threads=1024)) == 10
    assert sum(len(b) for b in da.events(src, threads=None)) == 10
    assert da.merge(src, str(tmp_path / "m.json"), threads=1024)["events_written"] >= 10


def _write_trace_with_long_line(path, long_bytes):
    with open(path, "w") as f:
        f.write("[\n")
        f.write(json.dumps({"name": "small", "ph": "X", "ts": 1, "dur": 1}) + ",\n")
        f.write(json.dumps({"name": "big", "ph": "X", "ts": 2, "dur": 1, "args": {"pad": "a" * long_bytes}}) + ",\n")
        f.write(json.dumps({"name": "after", "ph": "X", "ts": 3, "dur": 1}) + ",\n")
    return str(path)


def test_size_limits_skip_and_count_oversized_lines(tmp_path):
    src = _write_trace_with_long_line(tmp_path / "t.pfw", 2 << 20)
    with pytest.warns(da.SkippedInputWarning, match="1 line or document over the size limit"):
        df = da.summary(src, max_line_mib=1)
    assert sorted(df["name"]) == ["after", "small"]
    assert df.attrs["stats"]["oversized"] == 1
    assert df.attrs["stats"]["skipped_lines"] == 1
    assert sorted(da.summary(src)["name"]) == ["after", "big", "small"]  # default: 16 MiB
    it = da.events(src, max_line_mib=1)
    with pytest.warns(da.SkippedInputWarning):
        names = sorted(n for b in it for n in b["name"].astype(str))
    assert names == ["after", "small"]
    assert it.stats["oversized"] == 1
    with pytest.warns(da.SkippedInputWarning):
        assert da.merge(src, str(tmp_path / "m.json"), max_line_mib=1)["stats"]["oversized"] == 1
    with pytest.raises(ValueError, match="a size limit must be 1 to 1048576 MiB, not 0"):
        da.summary(src, max_line_mib=0)
    with pytest.raises(TypeError, match="max_document_mib must be an int or None"):
        da.summary(src, max_document_mib=1.5)


def test_a_huge_batch_size_is_not_reserved_up_front(tmp_path):
    # events(batch_size=10**8) used to reserve ~20 GB of columns before the
    # first event: under a 4 GiB address-space limit it raised MemoryError.
    trace = _write_trace(tmp_path / "t.pfw", n=50)
    code = textwrap.dedent(f"""
        import resource
        import dftracer.analyze as da
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        print(sum(len(b) for b in da.events({trace!r}, batch_size=10**8)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["50"]
