"""`python -m dftracer`: a program that never imports dftracer, traced as
it is -- its eager ops, optimizer steps and collections in a file under the
-o prefix, its arguments, `__name__` and exit status its own; the Python
processes it starts (multiprocessing's spawn) trace into their own files,
the sitecustomize the launcher's shadows still runs; --no-children and a
DFTRACER_ENABLE other than 1 turn tracing off where they say."""
import os
import subprocess
import sys

import pytest
from trace_reader import complete_events, read_trace, trace_files

torch = pytest.importorskip("torch")

# Never imports dftracer. A spawned child runs one op; the main process a
# short eager training loop, then exits with the status it was given.
PROGRAM = r"""
import json, multiprocessing as mp, os, sys, torch

def child(out):
    torch.ones(3).sum()
    with open(out, "w") as f:
        f.write(str(os.getpid()))

if __name__ == "__main__":
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    for _ in range(3):
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()
    p = mp.get_context("spawn").Process(target=child, args=(sys.argv[1] + ".child",))
    p.start()
    p.join()
    with open(sys.argv[1], "w") as f:
        json.dump({"argv": sys.argv, "name": __name__, "pid": os.getpid(), "child": p.exitcode}, f)
    sys.exit(int(sys.argv[2]))
"""


def launch(tmp_path, *launcher_args, env=None, module=False, status=3):
    from conftest import _clean_env

    (tmp_path / "prog.py").write_text(PROGRAM)
    traces = tmp_path / "traces"
    traces.mkdir(exist_ok=True)
    out = tmp_path / "out.json"
    full_env = _clean_env()
    full_env.pop("PYTHONPATH", None)
    full_env.update(env or {})
    target = ["-m", "prog"] if module else [str(tmp_path / "prog.py")]
    proc = subprocess.run([sys.executable, "-m", "dftracer", "-o", str(traces / "run"), *launcher_args, *target,
                           str(out), str(status)], cwd=str(tmp_path), env=full_env, capture_output=True, text=True,
                          timeout=300)
    return proc, traces, out


def events_by_pid(traces):
    return {int(os.path.basename(p).split("-")[-1].split(".")[0]): read_trace(p) for p in trace_files(str(traces))}


@pytest.mark.parametrize("module", [False, True], ids=["script", "module"])
def test_an_unmodified_program_is_traced_with_its_children(tmp_path, module):
    import json

    proc, traces, out = launch(tmp_path, module=module)
    assert proc.returncode == 3, proc.stderr
    got = json.loads(out.read_text())
    assert got["name"] == "__main__" and got["child"] == 0
    assert got["argv"][1:] == [str(out), "3"]
    assert os.path.basename(got["argv"][0]) == "prog.py"
    child_pid = int((tmp_path / "out.json.child").read_text())
    files = events_by_pid(traces)
    # and multiprocessing's resource tracker, a Python process spawn starts: a helper, no ops
    assert {got["pid"], child_pid} <= set(files), files.keys()
    for pid, evs in files.items():
        if pid not in (got["pid"], child_pid):
            assert complete_events(evs, cat="aten") == [], pid
    main = files[got["pid"]]
    ops = complete_events(main, cat="aten")
    assert any(e["name"] == "aten::linear" and e["args"].get("phase") == "forward" for e in ops)
    assert len([e for e in main if e.get("name") == "Optimizer.step#SGD.step"]) == 3
    assert any(e["name"] == "aten::sum" for e in complete_events(files[child_pid], cat="aten"))


def test_no_children_and_a_kill_switch(tmp_path):
    import json

    proc, traces, out = launch(tmp_path, "--no-children", status=0)
    assert proc.returncode == 0, proc.stderr
    assert list(events_by_pid(traces)) == [json.loads(out.read_text())["pid"]]  # neither child nor tracker
    for f in os.listdir(traces):
        os.remove(traces / f)
    proc, traces, out = launch(tmp_path, env={"DFTRACER_ENABLE": "0"}, status=0)
    assert proc.returncode == 0, proc.stderr
    assert trace_files(str(traces)) == [] and json.loads(out.read_text())["child"] == 0


def test_the_sitecustomize_it_shadows_still_runs(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "marker"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'a').write('ran\\n')\n")
    proc, traces, out = launch(tmp_path, env={"PYTHONPATH": str(site)}, status=0)
    assert proc.returncode == 0, proc.stderr
    # the launcher's own interpreter ran it, and each Python process the
    # program started (the child, multiprocessing's resource tracker), each
    # of those traced: one file each beside the launcher's
    runs = marker.read_text().count("ran\n")
    assert runs >= 3 and len(trace_files(str(traces))) == runs


def test_usage_errors_exit_2(tmp_path):
    for args in ([], ["--bogus", "x.py"], ["-o"], [str(tmp_path / "missing.py")]):
        proc = subprocess.run([sys.executable, "-m", "dftracer", *args], capture_output=True, text=True, timeout=60,
                              cwd=str(tmp_path))
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("python -m dftracer: ") and "usage:" in proc.stderr, proc.stderr
        # refused before tracing started: no trace file in the working directory
        assert not list(tmp_path.iterdir()), (args, list(tmp_path.iterdir()))


def test_torchrun_under_the_launcher_traces_each_rank(tmp_path):
    """torchrun's workers are new interpreters it starts: each rank's file
    holds its all_reduce, and the agent's file none."""
    from conftest import _clean_env

    (tmp_path / "ddp.py").write_text(
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.ones(4) * dist.get_rank()\n"
        "dist.all_reduce(t)\n"
        "dist.destroy_process_group()\n")
    traces = tmp_path / "traces"
    env = _clean_env()
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-m", "dftracer", "-o", str(traces / "run"), "-m", "torch.distributed.run",
                           "--standalone", "--nproc_per_node", "2", str(tmp_path / "ddp.py")],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    files = events_by_pid(traces)
    with_comm = [evs for evs in files.values() if any(e["name"] == "all_reduce" for e in complete_events(evs, "comm"))]
    assert len(files) == 3 and len(with_comm) == 2, {p: len(e) for p, e in files.items()}
