"""Child processes trace into their own files: os.fork, multiprocessing
(fork and spawn) with tracing started by initialize_log() (not the
environment), and torch DataLoader workers. No file holds another process's
events."""
import os

import pytest

from trace_reader import read_finalized, read_trace, trace_files


def pid_of(path):
    return int(os.path.basename(path).split("-")[-1].split(".")[0])


def events_by_pid(trace_dir):
    """{pid from file name: events}, checking every event of a file carries
    that file's pid."""
    out = {}
    for path in trace_files(trace_dir):
        pid = pid_of(path)
        events = read_trace(path)
        assert events and events[-1].get("name") == "end", f"{path} was not finalized"
        for e in events:
            assert e["pid"] == pid, f"{path} holds an event of pid {e['pid']}: {e}"
        out[pid] = events
    return out


def names(events):
    return [e["name"] for e in events if e.get("ph") == "X"]


def test_os_fork_child_gets_its_own_file(run_python, trace_dir):
    run_python("""
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "f.pfw"), None, -1)
with dft_fn("p", "before_fork"):
    pass
pid = os.fork()
if pid == 0:
    with dft_fn("p", "in_child"):
        pass
    log.finalize()
    os._exit(0)
with dft_fn("p", "in_parent"):
    pass
assert os.waitpid(pid, 0)[1] == 0
log.finalize()
""", env={"TRACE_DIR": trace_dir})
    by_pid = events_by_pid(trace_dir)
    assert len(by_pid) == 2
    parent = [p for p, ev in by_pid.items() if "in_parent" in names(ev)]
    child = [p for p, ev in by_pid.items() if "in_child" in names(ev)]
    assert len(parent) == 1 and len(child) == 1 and parent != child
    assert names(by_pid[parent[0]]).count("before_fork") == 1
    assert "before_fork" not in names(by_pid[child[0]])  # nothing written twice
    assert "in_child" not in names(by_pid[parent[0]])


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_children_trace_without_env(run_python, trace_dir, method):
    # Tracing starts with initialize_log(enable=True); the environment has no DFTRACER_*.
    run_python(f"""
import os, multiprocessing as mp
from dftracer.python import dftracer, dft_fn

fn = dft_fn("mp")

@fn.log
def child_work(i):
    return i * i

def main():
    log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "mp.pfw"), None, -1, enable=True)
    ctx = mp.get_context("{method}")
    pool = ctx.Pool(2)
    assert pool.map(child_work, range(8)) == [i * i for i in range(8)]
    pool.close()   # workers exit normally (terminate() would SIGTERM them)
    pool.join()
    p = ctx.Process(target=child_work, args=(3,))
    p.start(); p.join()
    assert p.exitcode == 0
    with dft_fn("mp", "parent_done"):
        pass
    log.finalize()

if __name__ == "__main__":
    main()
""", env={"TRACE_DIR": trace_dir, "DFTRACER_ENABLE": None}, timeout=300)
    by_pid = events_by_pid(trace_dir)
    parents = [p for p, ev in by_pid.items() if "parent_done" in names(ev)]
    assert len(parents) == 1
    children = {p: ev for p, ev in by_pid.items() if p not in parents}
    assert len(children) >= 2, sorted(by_pid)  # pool workers + the Process
    total = sum(names(ev).count("child_work") for ev in children.values())
    assert total == 9
    assert "child_work" not in names(by_pid[parents[0]])


def test_dataloader_workers_one_file_each(run_python, trace_dir):
    pytest.importorskip("torch")
    run_python("""
import os
import torch
from torch.utils.data import DataLoader, Dataset
from dftracer.python import dftracer, dft_fn

fn = dft_fn("data")

class Squares(Dataset):
    def __len__(self):
        return 32

    @fn.log
    def __getitem__(self, i):
        return torch.tensor([i * i])

def main():
    log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "dl.pfw"), None, -1, enable=True)
    loader = DataLoader(Squares(), batch_size=4, num_workers=2)
    seen = 0
    for batch in fn.iter(loader, name="epoch"):
        seen += len(batch)
    assert seen == 32
    log.finalize()

if __name__ == "__main__":
    main()
""", env={"TRACE_DIR": trace_dir, "DFTRACER_ENABLE": None}, timeout=300)
    by_pid = events_by_pid(trace_dir)
    assert len(by_pid) == 3, sorted(by_pid)
    main = [p for p, ev in by_pid.items() if "epoch.iter" in names(ev)]
    assert len(main) == 1
    workers = [p for p in by_pid if p not in main]
    per_worker = [names(by_pid[p]).count("Squares.__getitem__") for p in workers]
    assert sum(per_worker) == 32 and all(n > 0 for n in per_worker)
    assert "Squares.__getitem__" not in names(by_pid[main[0]])
    assert names(by_pid[main[0]]).count("epoch.iter") == 8


def test_children_inherit_the_prefix_when_the_app_name_has_a_hyphen(tmp_path, trace_dir):
    """Tracing started by the environment, then initialize_log() with no file:
    the prefix exported to children must be the one the core used, even when
    the app name (the interpreter's file name) contains '-'. Taking the file
    name apart on '-' gave "<dir>/run-my", and children wrote
    "run-my-my-python-<pid>.pfw"."""
    import shutil
    import subprocess
    import sys

    interpreter = tmp_path / "my-python"
    real = os.path.realpath(sys.executable)
    try:
        os.link(real, interpreter)
    except OSError:
        shutil.copy2(real, interpreter)
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "from dftracer.python import dftracer\n"
        "dftracer.initialize_log()\n"
        "print(os.environ['DFTRACER_LOG_FILE'])\n"
        "subprocess.run([sys.executable, '-c', 'import dftracer.python'], check=True)\n"
        "dftracer.get_instance().finalize()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    # The copy is not in a venv: give it this interpreter's module path.
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": os.path.join(trace_dir, "run")})
    proc = subprocess.run([str(interpreter), str(script)], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == os.path.join(trace_dir, "run")
    files = sorted(os.path.basename(p) for p in trace_files(trace_dir))
    assert len(files) == 2, files
    assert all(f.startswith("run-my-python-") for f in files), files


def test_pool_terminate_leaves_every_worker_trace_finished(run_python, trace_dir):
    """`With Pool(...)` ends with terminate(), which SIGTERMs
    the workers, some of them while they are already finalizing; each one's
    trace must still be finished (its `end` event and the closing `]`), the
    SIGTERM waiting for the finalize in progress. Three rounds of 4 workers."""
    run_python("""
import os, multiprocessing as mp
from dftracer.python import dftracer, dft_fn

fn = dft_fn("mp")

@fn.log
def child_work(i):
    return i * i

def main():
    log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "pool.pfw"), None, -1, enable=True)
    ctx = mp.get_context("fork")
    for _ in range(3):
        with ctx.Pool(4) as pool:
            assert pool.map(child_work, range(16)) == [i * i for i in range(16)]
    log.finalize()

if __name__ == "__main__":
    main()
""", env={"TRACE_DIR": trace_dir, "DFTRACER_ENABLE": None}, timeout=300)
    files = trace_files(trace_dir)
    assert len(files) >= 1 + 3 * 4 - 2, files  # the parent and (nearly) every worker wrote one
    for path in files:
        events = read_finalized(path)  # raises when `]` is missing
        assert any(e.get("name") == "end" for e in events), path
