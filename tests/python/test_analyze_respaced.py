"""Every analyzer answer is the same whatever whitespace and key order a
trace's JSON has: each trace (a GPT-2 training run our tracer wrote with
allocation capture, compiled graphs, steps, Python regions and I/O, in
nanoseconds; DFTracer's own traces; a Kineto trace of a GPU job) is
rewritten by respaced_traces in each style and every command and
dftracer.analyze function must answer as on the original.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from analyzer_cli import analyzer
from respaced_traces import STYLES, respace_trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")

GPT2_RUN = """
import os, sys
sys.path.insert(0, os.environ["TESTS_DIR"])
import torch, transformers
from dftracer.python import dftracer, dft_fn, dft_ai, dftracer_dynamo_backend
from gpt2_training import TINY
out = os.environ["OUT_DIR"]
log = dftracer.initialize_log(os.path.join(out, "gpt2"), out, -1)
size = dict(TINY)
batch, tokens = size.pop("batch"), size.pop("tokens")
torch.manual_seed(0)
model = transformers.GPT2LMHeadModel(transformers.GPT2Config(use_cache=False, **size)).train()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
ids = torch.randint(0, size["vocab_size"], (batch, tokens), generator=torch.Generator().manual_seed(1))
head = torch.compile(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()), backend=dftracer_dynamo_backend)
data = os.path.join(out, "batch.bin")
for step in range(3):
    dft_ai.update(step=step)
    with dft_fn("train", "step", step=step):
        with open(data, "wb") as f:
            f.write(ids.numpy().tobytes())
        with open(data, "rb") as f:
            f.read()
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss + head(torch.randn(4, 64)).sum() * 0
        loss.backward()
        opt.step()
log.log_metadata_event("model", "gpt2-tiny")
log.finalize()
"""


@pytest.fixture(scope="module")
def gpt2_trace(tmp_path_factory):
    """A JSON-lines trace of three GPT-2 training steps, times in nanoseconds."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("gpt2")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update(DFTRACER_ENABLE="1", DFTRACER_TRACE_EAGER="1", DFTRACER_MEMORY="1", DFTRACER_TIME_RESOLUTION="ns",
               DFTRACER_TRACE_COMPRESSION="0", TESTS_DIR=os.path.dirname(os.path.abspath(__file__)), OUT_DIR=str(d))
    subprocess.run([sys.executable, "-c", GPT2_RUN], env=env, check=True, timeout=600, capture_output=True)
    files = sorted(f for f in os.listdir(d) if f.endswith(".pfw"))
    assert len(files) == 1, files
    return os.path.join(d, files[0])


@pytest.fixture(scope="module")
def indexed_trace(tmp_path_factory):
    """A compressed trace with its write-time index (a compiled MLP's steps, no memory capture: the index answers)."""
    pytest.importorskip("torch")
    from training_run import TRAINING

    d = tmp_path_factory.mktemp("indexed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update(DFTRACER_ENABLE="1", DFTRACER_TRACE_COMPRESSION="1", TRACE_PREFIX=os.path.join(d, "mlp"))
    subprocess.run([sys.executable, "-c", TRAINING], env=env, check=True, timeout=600, capture_output=True)
    files = sorted(f for f in os.listdir(d) if f.endswith(".pfw.gz"))
    assert len(files) == 1 and os.path.exists(os.path.join(d, files[0] + ".idx")), os.listdir(d)
    return os.path.join(d, files[0])


def copy_as(src, d, name):
    """`src` copied to d/name, with its write-time index when it has one."""
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, name)
    shutil.copyfile(src, dst)
    if os.path.exists(src + ".idx"):
        shutil.copyfile(src + ".idx", dst + ".idx")
    return dst


def run_cli(args, base):
    """(exit status, stdout, stderr) of dftracer-analyze, with `base` (the
    trace's directory) written as <DIR> so two copies compare."""
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(base, "no-cache"))  # no calibration: rates without a roofline
    p = subprocess.run([analyzer(), *args, "--no-progress"], capture_output=True, text=True, timeout=300, env=env)
    return p.returncode, p.stdout.replace(base, "<DIR>"), p.stderr.replace(base, "<DIR>")


def cli_answers(trace, other, tmp):
    """Every command's answer on `trace` (and `diff` against `other`)."""
    base = os.path.dirname(trace)
    html = os.path.join(tmp, "report.html")
    cmds = {
        **{f"summary --by {by}": ["summary", trace, "--by", by, "--format", "json"]
           for by in ("name", "module", "category", "step", "cat,args.step")},
        "summary --efficiency": ["summary", trace, "--efficiency", "--format", "json"],
        "summary --by module --tree": ["summary", trace, "--by", "module", "--tree"],
        "memory": ["memory", trace, "--format", "json"],
        "diff": ["diff", trace, other, "--format", "json"],
        "report": ["report", trace, "-o", html],
        "device": ["device", trace, "--format", "json"],
        "ranks": ["ranks", trace, "--format", "json"],
        "io": ["io", trace, "--format", "json"],
        "summary --from/--to": ["summary", trace, "--from", "+1ms", "--to", "-1ms", "--format", "json"],
    }
    out = {}
    for k, args in cmds.items():
        rc, so, se = run_cli(args, base)
        out[k] = (rc, so.replace(os.path.dirname(other), "<OTHER>"), se.replace(os.path.dirname(other), "<OTHER>"))
    merged = os.path.join(tmp, "merged.json")
    out["merge"] = run_cli(["merge", trace, "-o", merged], base)
    if out["merge"][0] == 0:  # the events it wrote, as JSON values (their text keeps the input's spacing)
        with open(merged) as f:
            out["merge output"] = json.load(f)
        os.remove(merged)
    return out


# How the input was read, not what it says: differs between the copies
# (their sizes; the original's write-time index, which the copies lack).
SIZE_STATS = ("input_bytes", "json_bytes", "indexed_files")


def frame(df):
    """A DataFrame as comparable plain data: its columns, rows and attrs (the input's byte counts left out)."""
    attrs = dict(df.attrs)
    if isinstance(attrs.get("stats"), dict):
        attrs["stats"] = {k: v for k, v in attrs["stats"].items() if k not in SIZE_STATS}
    return list(df.columns), df.astype(object).where(df.notna(), None).values.tolist(), repr(attrs)


def all_events(da, trace):
    """events() of the trace, every batch, each event's args decoded (its raw text is the writer's)."""
    import json

    import pandas as pd

    with da.events(trace) as batches:
        df = pd.concat(list(batches), ignore_index=True)
        stats = {k: v for k, v in batches.stats.items() if k not in SIZE_STATS}
    df["args"] = [json.loads(a) if isinstance(a, str) and a else a for a in df["args"].astype(object)]
    return frame(df), repr(stats)


def api_answers(trace):
    import warnings

    da = pytest.importorskip("dftracer.analyze")
    if da._ext is None:
        pytest.skip("dftracer was built without the analyzer")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, call in {
            "summary": lambda: da.summary(trace),
            "summary by step": lambda: da.summary(trace, by="step"),
            "steps": lambda: da.steps(trace),
            "memory": lambda: da.memory(trace),
            "device": lambda: da.device(trace),
            "ranks": lambda: da.ranks(trace),
            "events": lambda: all_events(da, trace),
        }.items():
            try:
                r = call()
            except Exception as e:  # the same error for both
                out[name] = ("error", type(e).__name__, str(e).replace(os.path.dirname(trace), "<DIR>"))
                continue
            if isinstance(r, tuple):
                out[name] = r
            elif hasattr(r, "attrs"):
                out[name] = frame(r)
            elif isinstance(r, dict):
                out[name] = {k: frame(v) if hasattr(v, "attrs") else
                             repr({s: n for s, n in v.items() if s not in SIZE_STATS}) if k == "stats" else repr(v)
                             for k, v in r.items()}
            else:
                out[name] = repr(r).replace(os.path.dirname(trace), "<DIR>")
    return out


def unindexed(answer):
    """An answer with "read from the write-time index" said as "read from the events": the same numbers."""
    if isinstance(answer, str):
        return answer.replace('"index":true', '"index":false').replace("'index': True", "'index': False")
    if isinstance(answer, (tuple, list)):
        return type(answer)(unindexed(a) for a in answer)
    if isinstance(answer, dict):
        return {k: unindexed(v) for k, v in answer.items()}
    return answer


def trace_cases():
    yield "gpt2", None
    yield "indexed", None
    for rel in ("dftracer-samples/test-2023.pfw.gz", "dftracer-samples/cm1-DEFAULT-3537780-preload.pfw.gz",
                "dftracer-2.2-pydftracer.pfw.gz", "dftracer-2.2-pydftracer-ns.pfw.gz", "kineto/alexnet_trace.json.gz"):
        yield os.path.basename(rel), os.path.join(DATA, rel)


@pytest.mark.parametrize("name,path", list(trace_cases()), ids=[c[0] for c in trace_cases()])
def test_every_answer_is_the_same_whatever_the_json_spacing(name, path, tmp_path, request):
    if path is None:
        path = request.getfixturevalue("gpt2_trace" if name == "gpt2" else "indexed_trace")
    base = os.path.basename(path)
    orig = copy_as(path, str(tmp_path / "orig"), base)
    other = copy_as(os.path.join(DATA, "dftracer-2.2-pydftracer.pfw.gz"), str(tmp_path / "orig_other"), "other.pfw.gz")
    want_cli = cli_answers(orig, other, str(tmp_path))
    want_api = api_answers(orig)
    assert want_cli["summary --by name"][0] == 0, want_cli["summary --by name"]
    if name == "indexed":  # answered from its write-time index; the rewritten copies have none
        assert '"index":true' in want_cli["summary --by name"][1]
    for style in STYLES:
        d = str(tmp_path / style)
        os.makedirs(d)
        assert respace_trace(orig, os.path.join(d, base), style) > 0
        od = str(tmp_path / (style + "_other"))
        os.makedirs(od)
        respace_trace(other, os.path.join(od, "other.pfw.gz"), style)
        got_cli = cli_answers(os.path.join(d, base), os.path.join(od, "other.pfw.gz"), str(tmp_path))
        for k in want_cli:
            assert got_cli[k] == unindexed(want_cli[k]), f"{style}: {k}"
        got_api = api_answers(os.path.join(d, base))
        for k in want_api:
            assert got_api[k] == unindexed(want_api[k]), f"{style}: dftracer.analyze.{k}"
