"""initialize_log(logfile, data_dir, -1) limits I/O tracing to data_dir, as
pydftracer does, also when DFTRACER_ENABLE=1 started tracing on import: a
program that imports modules and reads files inside and outside data_dir
gets events for the data_dir files only. DFTRACER_DATA_DIR and data_dir
together trace the union of both (pydftracer's rule)."""
import os

from test_io_tracing import file_hashes, io_events
from trace_reader import read_trace, trace_files

# Imports after initialize_log (modules not imported yet by the interpreter's
# start or by dftracer): their .py/.pyc reads are Python's, not the data's.
PROGRAM = """
import os, sys
from dftracer.python import dftracer
log = dftracer.initialize_log(os.path.join({traces!r}, "run.pfw"), {data_dir!r}, -1)
import xml.dom.minidom, email.mime.text, http.cookiejar, sqlite3, decimal  # noqa: F401
for d in {read!r}:
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            f.read()
log.finalize()
"""


def make_dirs(tmp_path):
    dirs = {}
    for name in ("data", "other", "side"):
        d = tmp_path / name
        d.mkdir()
        for i in range(2):
            (d / f"{name}{i}.bin").write_bytes(b"x" * 1000)
        dirs[name] = str(d)
    return dirs


def traced_paths(run_python, trace_dir, dirs, data_dir, env=None):
    run_python(PROGRAM.format(traces=trace_dir, data_dir=data_dir, read=list(dirs.values())),
               env=env)
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    events = read_trace(files[0])
    fh = file_hashes(events)
    named = {h: p for p, h in fh.items()}
    return events, {named[e["args"]["fhash"]] for e in io_events(events) if e["args"].get("fhash") in named}


def test_data_dir_argument_limits_io_to_it(run_python, trace_dir, tmp_path):
    dirs = make_dirs(tmp_path)
    events, paths = traced_paths(run_python, trace_dir, dirs, dirs["data"])
    data = dirs["data"]
    assert paths, "no I/O event for the data_dir files"
    assert all(p == data or p.startswith(data + os.sep) for p in paths), sorted(paths)[:10]
    assert {os.path.join(data, "data0.bin"), os.path.join(data, "data1.bin")} <= paths
    # No FH record either for a path outside it (the imports, the other dirs).
    outside = [p for p in file_hashes(events) if not p.startswith(data)]
    assert not outside, outside[:10]


def test_data_dir_argument_and_environment_trace_both(run_python, trace_dir, tmp_path):
    dirs = make_dirs(tmp_path)
    _, paths = traced_paths(run_python, trace_dir, dirs, dirs["data"],
                            env={"DFTRACER_DATA_DIR": dirs["side"]})
    tops = {os.path.dirname(p) if p.endswith(".bin") else p for p in paths}
    assert tops == {dirs["data"], dirs["side"]}, sorted(paths)


def test_all_as_data_dir_traces_every_path(run_python, trace_dir, tmp_path):
    dirs = make_dirs(tmp_path)
    _, paths = traced_paths(run_python, trace_dir, dirs, "all")
    assert {os.path.join(dirs[n], f"{n}0.bin") for n in dirs} <= paths
    assert any(p.endswith((".py", ".pyc")) for p in paths), "the imports after initialize_log"


def test_the_guides_example_traces_no_import_of_the_capture(run_python, trace_dir, tmp_path):
    """The Dynamo guide's order: `from dftracer.python import dftracer, dynamo` (tracing
    already on from DFTRACER_ENABLE=1; dynamo's import brings torch._dynamo, sympy, ...)
    and then initialize_log(logfile, data_dir): the capture's import is dftracer's own
    I/O, not the program's, and nothing outside data_dir is in the trace."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "x.bin").write_bytes(b"x" * 100)
    run_python(f"""
import torch
from dftracer.python import dftracer, dynamo
log = dftracer.initialize_log({os.path.join(trace_dir, "dynamo_trace.pfw")!r}, {str(data)!r}, -1)
open({str(data / "x.bin")!r}, "rb").read()
log.finalize()
""")
    events = read_trace(trace_files(trace_dir)[0])
    assert set(file_hashes(events)) == {str(data / "x.bin")}
