"""A process whose image ends without exit() -- _exit, _Exit, an exec --
keeps its trace: the hooks finalize first (src/capture/io/exit_hooks.c). dash ends
every `sh -c` with _exit, multiprocessing children with os._exit, and every
fork+exec replaces the child's image; each used to leave a file without its
events and without its end. A forked child that only exec'd leaves no file
at all (the exec'd program writes its own).

Every case runs real programs untraced and traced (PRELOAD; Python also in
FUNCTION mode) and compares stdout, stderr, exit status and the files they
wrote, then reads every trace file back as finalized."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import _clean_env
from test_io_signals import preload_library
from trace_reader import read_finalized, trace_files


def run_both(argv, tmp_path, mode="preload", extra_env=None, input_text=None, prepare=None, timeout=120,
             traces_in=None):
    """Runs argv in tmp_path/<mode>/data untraced and traced (`prepare(data)`
    first fills the data dir), tracing to <traces_in or tmp_path>/<mode>/traces;
    returns {label: (CompletedProcess, data dir, trace dir)}."""
    out = {}
    for label in ("untraced", mode):
        root = tmp_path / label
        data, traces = root / "data", (traces_in or tmp_path) / label / "traces"
        data.mkdir(parents=True)
        traces.mkdir(parents=True, exist_ok=True)
        if prepare is not None:
            prepare(data)
        env = _clean_env()
        env.update(extra_env or {})
        if label != "untraced":
            env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=str(traces / "t"), DFTRACER_DATA_DIR=str(data))
            if mode == "preload":
                env.update(DFTRACER_INIT="PRELOAD", LD_PRELOAD=preload_library())
        p = subprocess.run(argv, cwd=str(data), env=env, capture_output=True, text=True, timeout=timeout,
                           input=input_text)
        out[label] = (p, data, traces)
    return out


def files_of(directory):
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def assert_same_behaviour(runs, traced):
    (u, udata, _), (t, tdata, _) = runs["untraced"], runs[traced]
    assert (t.returncode, t.stdout, t.stderr) == (u.returncode, u.stdout, u.stderr)
    assert files_of(tdata) == files_of(udata)


def io_events(events, name=None):
    return [e for e in events if e.get("cat") in ("POSIX", "STDIO") and (name is None or e["name"] == name)]


def finalized_traces(traces):
    """{file name: events} of every trace file, each read as finalized."""
    files = trace_files(str(traces))
    assert files, "no trace file"
    return {os.path.basename(f): read_finalized(f) for f in files}


def test_dash_redirection_ending_in_exit_keeps_its_events(tmp_path):
    runs = run_both(["dash", "-c", "echo hi >> d.txt; echo there >> d.txt; echo out"], tmp_path)
    assert_same_behaviour(runs, "preload")
    traces = finalized_traces(runs["preload"][2])
    assert len(traces) == 1, list(traces)
    events = next(iter(traces.values()))
    fh = {e["args"]["value"]: e["args"]["name"] for e in events if e["name"] == "FH"}
    opened = [fh.get(e["args"].get("fhash")) for e in io_events(events) if e["name"].startswith("open")]
    assert opened.count(str(runs["preload"][1] / "d.txt")) == 2, io_events(events)


PYTHON_EXIT = r"""
import os, sys
fd = os.open("out.bin", os.O_WRONLY | os.O_CREAT, 0o644)
for _ in range(300):
    os.write(fd, b"x")
os.close(fd)
print("done", flush=True)
if sys.argv[1] == "exec-fails":
    try:
        os.execv("/nonexistent/program", ["x"])
    except OSError as e:
        print("exec failed", e.errno, flush=True)
    fd = os.open("after.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"y")
    os.close(fd)
os._exit(3)
"""


@pytest.mark.parametrize("mode", ["preload", "function"])
@pytest.mark.parametrize("case", ["exit", "exec-fails"])
def test_python_ending_in_os_exit_keeps_every_event(tmp_path, mode, case):
    code = PYTHON_EXIT if mode == "preload" else "import dftracer.python\n" + PYTHON_EXIT
    runs = run_both([sys.executable, "-c", code, case], tmp_path, mode)
    assert_same_behaviour(runs, mode)
    assert runs[mode][0].returncode == 3
    traces = finalized_traces(runs[mode][2])
    writes = [e for ev in traces.values() for e in io_events(ev, "write")]
    assert len(writes) == 300 + (case == "exec-fails"), len(writes)
    if case == "exec-fails":
        # Tracing went on after the failed exec: the second file has the later write.
        assert len(traces) == 2, list(traces)


def test_forked_children_that_exec_leave_no_stub(tmp_path):
    # xargs forks and execs sh for each job, sh (dash) redirects and ends in
    # _exit or execs echo's builtin... each job's files are finalized, and
    # none holds nothing but the tracer's own lines.
    script = 'echo "$1" > "f$1"; cat "f$1" >> all.txt'
    runs = run_both(["xargs", "-P4", "-I{}", "sh", "-c", script, "sh", "{}"], tmp_path,
                    input_text="\n".join(str(i) for i in range(12)) + "\n")
    (u, udata, _), (t, tdata, _) = runs["untraced"], runs["preload"]
    assert (t.returncode, t.stdout, t.stderr) == (u.returncode, u.stdout, u.stderr)
    assert sorted(files_of(tdata)) == sorted(files_of(udata))
    assert sorted((tdata / "all.txt").read_text().split()) == sorted((udata / "all.txt").read_text().split())
    traces = finalized_traces(runs["preload"][2])
    # The one file with nothing recorded is xargs's own (it reads a pipe): no
    # forked child's stub (xargs's and dash's children before their exec).
    empty = [n for n, ev in traces.items() if not [e for e in ev if e.get("ph") != "M" and e.get("cat") != "dftracer"]]
    assert len(empty) == 1 and empty[0].startswith("t-xargs-"), sorted(traces)
    assert len([n for n in traces if n.startswith("t-xargs-")]) == 1, sorted(traces)
    # Each job's shell records its redirection (and ends in _exit).
    fh = {e["args"]["value"]: e["args"]["name"] for ev in traces.values() for e in ev if e["name"] == "FH"}
    opened = {fh.get(e["args"].get("fhash")) for ev in traces.values() for e in io_events(ev)
              if e["name"].startswith("open")}
    assert {str(tdata / f"f{i}") for i in range(12)} <= opened, sorted(n for n in opened if n)


PERSISTENT_WORKERS = r"""
import os, sys
import torch
from torch.utils.data import DataLoader, Dataset

class Files(Dataset):
    def __init__(self):
        self.paths = sorted(n for n in os.listdir(".") if n.startswith("sample"))
    def __len__(self):
        return len(self.paths)
    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return torch.tensor(len(f.read()))

if __name__ == "__main__":
    loader = DataLoader(Files(), batch_size=2, num_workers=2, persistent_workers=True)
    for epoch in range(2):
        print(epoch, sum(int(b.sum()) for b in loader), flush=True)
    # Exit with the workers alive: the parent SIGTERMs them and torch's
    # handler ends each with _exit(0).
"""


@pytest.mark.parametrize("mode", ["function", "preload"])
def test_persistent_dataloader_workers_keep_their_reads(tmp_path, mode):
    pytest.importorskip("torch")
    code = PERSISTENT_WORKERS if mode == "preload" else "import dftracer.python\n" + PERSISTENT_WORKERS
    script = tmp_path / "loader.py"
    script.write_text(code)

    def samples(data):
        for i in range(16):
            (data / f"sample{i}.bin").write_bytes(b"s" * (100 + i))

    runs = run_both([sys.executable, str(script)], tmp_path, mode, prepare=samples, timeout=300)
    assert_same_behaviour(runs, mode)
    traces = finalized_traces(runs[mode][2])
    workers = {n: ev for n, ev in traces.items() if io_events(ev, "read") or io_events(ev, "fread")}
    fh = {e["args"]["value"]: e["args"]["name"] for ev in traces.values() for e in ev if e["name"] == "FH"}
    opened = [fh.get(e["args"].get("fhash")) for ev in workers.values() for e in io_events(ev)
              if e["name"].startswith("open")]
    samples = [o for o in opened if o and os.path.basename(o).startswith("sample")]
    # Two epochs of 16 samples, read by the two workers (each its own file).
    assert len(workers) == 2, sorted(traces)
    assert len(samples) == 32, len(samples)


# A process that changes its credentials or namespaces runs on untraced
# (src/capture/io/cred_hooks.c): glibc applies setresgid to every thread and aborted
# setpriv (SIGABRT) when the tracer's threads refused, and a new user
# namespace needs a single-threaded process (unshare failed with EINVAL).
CREDENTIAL_CHANGES = {
    "setpriv": ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "id"],
    "unshare": ["unshare", "-U", "-r", "id", "-u"],
}


@pytest.mark.parametrize("io", ["io", "no-io"])
@pytest.mark.parametrize("tool", sorted(CREDENTIAL_CHANGES))
def test_credential_and_namespace_changes_run_as_untraced(tmp_path, tool, io):
    argv = CREDENTIAL_CHANGES[tool]
    if subprocess.run(["which", argv[0]], capture_output=True).returncode != 0:
        pytest.skip(f"{argv[0]} is not installed")
    probe = subprocess.run(argv, capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"{argv[0]} needs privileges this machine lacks: {probe.stderr.strip()}")

    # `id` runs as nobody after setpriv and writes its own trace: in a
    # directory every user can reach (pytest's tmp_path is root's alone).
    shared = tempfile.mkdtemp(prefix="dft-cred-", dir="/tmp")
    try:
        os.chmod(shared, 0o1777)
        for label in ("untraced", "preload"):
            os.makedirs(os.path.join(shared, label, "traces"), mode=0o1777)
            os.chmod(os.path.join(shared, label, "traces"), 0o1777)
        runs = run_both(argv, tmp_path, extra_env={"DFTRACER_DISABLE_IO": "1"} if io == "no-io" else {},
                        traces_in=pathlib.Path(shared))
        check_credential_change(runs)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def check_credential_change(runs):
    # Same output: also no ld.so error when the new uid cannot read the
    # preload library (an installation under /root): it left LD_PRELOAD.
    assert_same_behaviour(runs, "preload")
    # The changing process's file had nothing in it (removed), the exec'd `id`
    # runs untraced: no file, and no stub left behind.
    files = trace_files(str(runs["preload"][2]))
    assert not files, files
