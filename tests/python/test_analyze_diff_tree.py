"""diff and the module tree end to end, on runs the real tracer writes: a
2-layer transformer encoder compiled with our backend, trained a few steps.

- diff of a run against itself is all zeros; against a run with doubled layer
  width the linear layers' matmuls come first.
- The module tree sums to the traced time of the op events with a module, and
  forward and backward ops of a module share its node.
- The CLI's JSON and the Python API give the same numbers.
"""
import json
import re
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import trace_files

import dftracer.analyze as da

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

pytest.importorskip("pandas")

TRAINING = """
import os, torch
from dftracer.python import dftracer, dft_fn, dftracer_dynamo_backend
torch.manual_seed(0)
torch.set_num_threads(1)
width = int(os.environ["WIDTH"])
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
# No dropout: its random masks are noise beside the small matmuls this diff is about.
layer = torch.nn.TransformerEncoderLayer(d_model=width, nhead=2, dim_feedforward=4 * width, dropout=0.0,
                                         batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step_fn = torch.compile(model, backend=dftracer_dynamo_backend)
x = torch.randn(8, 32, width)
for step in range(4):
    with dft_fn("train", "train_step", step=step):
        loss = step_fn(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
log.finalize()
"""

# The linear layers' ops, as the backend names them (function.mm.default).
LINEAR_OPS = re.compile(r"function\.(aten\.)?(mm|addmm)(\.default)?$")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(narrow, wide): the same training at width 64 and 128."""
    from conftest import run_python_in

    base = tmp_path_factory.mktemp("diff")
    out = []
    for width in (64, 128):
        d = base / f"w{width}"
        d.mkdir()
        run_python_in(str(base), TRAINING, env={"TRACE_DIR": str(d), "WIDTH": str(width)}, timeout=300)
        files = trace_files(str(d))
        assert len(files) == 1, files
        out.append(files[0])
    return out


def cli_json(*args):
    p = subprocess.run([analyzer_exe(), *args, "--format", "json", "--no-progress"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_diff_of_a_run_against_itself_is_all_zeros(runs):
    narrow, _ = runs
    for by in ("name", "module", "phase"):
        df = da.diff(narrow, narrow, by=by)
        assert len(df) > 1, by
        assert (df["count_a"] > 0).all() and (df["count_delta"] == 0).all(), by
        assert (df["self_delta_us"] == 0).all() and (df["total_delta_us"] == 0).all(), by
        assert (df["self_a_us"] == df["self_b_us"]).all(), by
        assert df.attrs["totals"]["traced_a_us"] == df.attrs["totals"]["traced_b_us"] > 0


def test_diff_against_doubled_width_puts_the_linear_layers_first(runs):
    narrow, wide = runs
    df = da.diff(narrow, wide, by="name")
    # Impact order: |self delta| never grows down the rows.
    assert (df["self_delta_us"].abs().diff().dropna() <= 0).all()
    # Among the ops (compile work and the I/O of imports vary by tens of ms
    # from run to run on a loaded machine, more than these small ops change).
    ops = df[df["name"].str.startswith("function.")]
    assert LINEAR_OPS.match(ops["name"].iloc[0]), ops.head(8).to_string()
    assert ops["self_delta_us"].iloc[0] > 0
    by_module = da.diff(narrow, wide, by="module")
    modules = by_module[by_module["module"] != "(none)"]  # the events that are not ops
    top = modules["module"].iloc[0]
    # nn.Linear modules (linear1/2) or attention (its in/out projections are linear ops).
    assert any(part in top for part in ("linear", "self_attn")), modules.head(8).to_string()


def test_diff_cli_json_and_python_api_agree(runs):
    narrow, wide = runs
    for by in ("name", "module"):
        df = da.diff(narrow, wide, by=by)
        doc = cli_json("diff", narrow, wide, "--by", by)
        assert [r[by] for r in doc["rows"]] == list(df[by])
        for col in da.DIFF_COLUMNS:
            cli = [r[col] for r in doc["rows"]]
            api = [None if v != v else v for v in df[col].tolist()]  # NaN is JSON null
            assert cli == api, col
        assert doc["a"]["traced_us"] == df.attrs["totals"]["traced_a_us"]
        assert doc["b"]["traced_us"] == df.attrs["totals"]["traced_b_us"]


def op_events_with_module(path):
    """(sum of their dur_ns, {phase: set of modules}) from the events themselves."""
    dur_ns, modules = 0, {}
    for batch in da.events(path, ph="X", raw_args=False):
        mods = batch["module"].astype(object)
        for module, phase, dur in zip(mods, batch["phase"].astype(object), batch["dur_ns"]):
            if isinstance(module, str) and module:
                dur_ns += int(dur)
                modules.setdefault(phase, set()).add(module)
    return dur_ns, modules


def test_module_tree_sums_to_the_op_events_time(runs):
    narrow, _ = runs
    tree = da.module_tree(narrow)
    assert list(tree.columns) == ["path", "depth", "self_us", "total_us", "count", "share"]
    dur_ns, modules = op_events_with_module(narrow)
    roots = tree[tree["depth"] == 0]
    assert roots["total_us"].sum() == pytest.approx(dur_ns / 1000, abs=1e-6)
    assert tree.attrs["totals"]["tree_us"] == dur_ns / 1000
    assert roots["share"].sum() == pytest.approx(1.0)
    # Every node's total is its own self plus its children's totals.
    totals = dict(zip(tree["path"], tree["total_us"]))
    for path, self_us, total in zip(tree["path"], tree["self_us"], tree["total_us"]):
        kids = [p for p in totals if p.startswith(path + ".") and "." not in p[len(path) + 1:]]
        assert total == pytest.approx(self_us + sum(totals[k] for k in kids), abs=1e-6), path
    # Forward and backward ops of a module share its node: every module the
    # backward ops name is one the forward ops name too, and it is in the tree.
    assert modules.get("backward"), modules.keys()
    assert modules["backward"] <= modules["forward"]
    assert modules["backward"] <= set(tree["path"])
    # Both encoder layers under one "...layers" node (torch.compile(model) names the root "fn").
    layer_paths = [p for p in tree["path"] if p.endswith("layers.0") or p.endswith("layers.1")]
    assert len(layer_paths) == 2 and len({p.rsplit(".", 1)[0] for p in layer_paths}) == 1, list(tree["path"])


def test_module_tree_cli_json_nests_the_api_numbers(runs):
    narrow, _ = runs
    tree = da.module_tree(narrow)
    doc = cli_json("summary", narrow, "--by", "module", "--tree")
    flat = []

    def walk(node):
        flat.append((node["path"], node["depth"], node["self_us"], node["total_us"], node["count"], node["share"]))
        for c in node["children"]:
            walk(c)

    for r in doc["roots"]:
        walk(r)
    assert flat == list(tree.itertuples(index=False, name=None))
    assert doc["tree_us"] == tree.attrs["totals"]["tree_us"]
