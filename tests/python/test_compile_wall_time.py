"""Compile time is wall time: with Inductor, the main thread's
async_compile.wait overlaps the worker threads' compile_file, so adding self
time over threads gave "compile 98.3 % (103.950 s)" for 44.5 s of wall clock.
`summary --by category`, the steps and the report's answer give each
category's wall time (never more than the run or the step) and the threads'
sum beside it, labelled."""
import json
import subprocess
import sys
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analyzer_cli import analyzer  # noqa: E402

S = 1_000_000  # us


def ev(name, cat, tid, ts_us, dur_us, **args):
    a = ",".join(f'"{k}":{json.dumps(v)}' for k, v in args.items())
    return (f'{{"name":"{name}","cat":"{cat}","pid":7,"tid":{tid},"ts":{1_700_000_000_000_000 + ts_us},'
            f'"dur":{dur_us},"ph":"X","args":{{{a}}}}}')


def inductor_like_trace(path):
    """Step 0: 44.5 s of compile on the main thread (dynamo trace, then
    async_compile.wait) while two workers compile kernels for 29.75 s each;
    then 3 steps of forward/backward kernels, 1 s each."""
    lines = ["["]
    lines.append(ev("dynamo.trace", "compile", 7, 0, 15 * S))
    lines.append(ev("async_compile.wait", "compile", 7, 15 * S, 29_500_000))
    for tid in (8, 9):
        lines.append(ev("compile_file", "compile", tid, 15 * S, 29_500_000))
    for step in range(4):
        t0 = (0 if step == 0 else 45 * S + (step - 1) * S)
        start = 44_500_000 if step == 0 else t0
        lines.append(ev("kernel.fwd", "dynamo", 7, start, 300_000, phase="forward", step=step))
        lines.append(ev("kernel.bwd", "dynamo", 7, start + 300_000, 400_000, phase="backward", step=step))
        end = 45 * S if step == 0 else t0 + S
        lines.append(ev("train_step", "app", 7, t0, end - t0))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n]\n")


def run(*args):
    out = subprocess.run([analyzer(), *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_compile_is_wall_time_in_summary_steps_and_report(tmp_path):
    path = tmp_path / "inductor.pfw"
    inductor_like_trace(path)
    doc = json.loads(run("summary", "--by", "category", "--format", "json", str(path)))
    rows = {r["category"]: r for r in doc["rows"]}
    assert doc["span_us"] == 48 * S
    assert rows["compile"]["wall_us"] == 44.5 * S  # not 15 + 29.5 + 2 * 29.5
    assert rows["compile"]["thread_us"] == 103.5 * S
    assert rows["compile"]["wall_share"] <= 1
    assert sum(r["wall_us"] for r in doc["rows"]) == doc["span_us"]
    table = run("summary", "--by", "category", str(path))
    assert table.splitlines()[0].split() == ["category", "wall_ms", "wall%", "thread_ms", "count"]

    steps = json.loads(run("summary", "--by", "step", "--format", "json", str(path)))["steps"]
    assert steps[0]["compile_us"] == 44.5 * S and steps[0]["compile_us"] <= steps[0]["duration_us"]
    assert steps[0]["compile_thread_us"] == 103.5 * S
    assert steps[0]["compile_share"] == 44.5 / 45

    answer = run("report", "-o", str(tmp_path / "r.html"), str(path))
    line = next(l for l in answer.splitlines() if l.startswith("Compile vs run"))
    assert "compile 92.7% (44.500 s of 48.000 s)" in line, line
    assert "compile thread time 103.500 s (threads added)" in line, line
