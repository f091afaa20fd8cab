"""The most common training loop, Hugging Face's `Trainer`, traced eagerly
with nothing but the environment (DFTRACER_ENABLE=1, DFTRACER_TRACE_EAGER=1):
a GPT-2 built from a config, gradient accumulation over 2 micro-batches,
gradient clipping, an evaluation every 3 optimizer steps and one at the end,
logging every 2.

What a user reads must match what the Trainer did: one step per optimizer
step (6), each holding its 2 micro-batches' forward and backward calls; the
evaluations' model calls (under no_grad) in no step; no `inference` work
inside a training step (the clipping, under no_grad, is the update's); and
`summary --by step` splits each step into forward, backward and optimizer
time.
"""
import pytest
from analyzer_cli import analyzer_json
from trace_reader import read_trace, trace_files

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")  # the Trainer's dependency: scripts/setup.sh installs it
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

STEPS, ACCUMULATE, EVAL_EVERY, EVAL_BATCHES = 6, 2, 3, 4

PROGRAM = f"""
import os, torch
import dftracer.python  # noqa: F401  (DFTRACER_TRACE_EAGER applies once torch is imported too)
import transformers as t

class Tokens(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        ids = torch.randint(0, 256, (32,), generator=torch.Generator().manual_seed(i))
        return {{"input_ids": ids, "labels": ids.clone()}}

torch.manual_seed(0)
torch.set_num_threads(1)
model = t.GPT2LMHeadModel(t.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64))
args = t.TrainingArguments(
    output_dir=os.path.join(os.environ["TRACE_DIR"], "out"), per_device_train_batch_size=4,
    per_device_eval_batch_size=4, gradient_accumulation_steps={ACCUMULATE}, max_steps={STEPS}, logging_steps=2,
    eval_strategy="steps", eval_steps={EVAL_EVERY}, max_grad_norm=1.0, report_to=[], use_cpu=True,
    save_strategy="no", dataloader_num_workers=0, disable_tqdm=True)
t.Trainer(model=model, args=args, train_dataset=Tokens(256), eval_dataset=Tokens({4 * EVAL_BATCHES})).train()
"""


def test_trainer_steps_are_its_optimizer_steps_with_their_micro_batches(tmp_path):
    from conftest import run_python_in

    d = tmp_path / "trace"
    d.mkdir()
    run_python_in(str(tmp_path), PROGRAM, env={"TRACE_DIR": str(d), "DFTRACER_LOG_FILE": str(d / "run"),
                                                "DFTRACER_TRACE_EAGER": "1", "DFTRACER_DISABLE_IO": "1"},
                  timeout=300)
    [path] = trace_files(str(d))
    check_trainer_steps(path)


SAVING = PROGRAM.replace('save_strategy="no"', 'save_strategy="steps", save_steps=EVERY').replace(
    'eval_strategy="steps"', 'eval_strategy="no"').replace(
    f"max_steps={STEPS}", "max_steps=SAVING_STEPS")
SAVE_EVERY, SAVING_STEPS = 3, 8


def test_a_trainer_saving_checkpoints_keeps_them_out_of_its_steps(tmp_path):
    """The Trainer saving every 3 optimizer steps (`save_pretrained`'s
    safetensors weights, then the optimizer's, scheduler's and RNG's
    `torch.save`, then its JSON): each save lies between two steps, with its
    file I/O. Before: `save_pretrained` finding tied weights ran views with
    grad mode on, which began the next step and made it hold the save (twice
    the usual step, flagged slow); after a save shorter than a step, the
    step began at the optimizer step before it."""
    from conftest import run_python_in

    d = tmp_path / "trace"
    d.mkdir()
    code = SAVING.replace("EVERY", str(SAVE_EVERY)).replace("SAVING_STEPS", str(SAVING_STEPS))
    run_python_in(str(tmp_path), code, env={"TRACE_DIR": str(d), "DFTRACER_LOG_FILE": str(d / "run"),
                                             "DFTRACER_TRACE_EAGER": "1"}, timeout=300)
    [path] = trace_files(str(d))
    records = read_trace(path)
    names = {e["args"]["value"]: e["args"]["name"] for e in records if e.get("name") == "FH" and e.get("ph") == "M"}
    events = [e for e in records if e.get("ph") == "X"]
    doc = analyzer_json("summary", path, "--by", "step")
    [proc] = doc["processes"]
    assert proc["source"] == "optimizer" and proc["steps"] == SAVING_STEPS, proc
    steps = [(round(r["start_us"] * 1000), round((r["start_us"] + r["duration_us"]) * 1000)) for r in doc["steps"]]

    def in_a_step(e):
        return any(a < e["ts_ns"] + e["dur_ns"] and e["ts_ns"] < b for a, b in steps)

    saves = [e for e in events if e.get("cat") == "checkpoint" and e["name"] == "GPT2LMHeadModel.save_pretrained"]
    assert len(saves) == len(range(SAVE_EVERY, SAVING_STEPS + 1, SAVE_EVERY)) + 1, saves  # and one at the end
    ckpt = [e for e in events if e.get("cat") == "checkpoint"]
    assert len([e for e in ckpt if e["name"] == "torch.save"]) >= 3 * len(saves), sorted(e["name"] for e in ckpt)
    assert not [e for e in ckpt if in_a_step(e)], "a checkpoint event inside a step"
    io = [e for e in events if e.get("cat") in ("POSIX", "STDIO") and "checkpoint-" in
          names.get(e.get("args", {}).get("fhash"), "")]
    assert len(io) > 10 * len(saves), len(io)
    inside = [(e["name"], names[e["args"]["fhash"]]) for e in io if in_a_step(e)]
    assert not inside, inside[:5]
    for r in doc["steps"]:  # (not whether a step is flagged slow: on a loaded machine a preemption can)
        assert r["checkpoint_us"] == 0, r


def test_a_first_iteration_whose_loss_detach_lasts_zero_microseconds_keeps_its_step(tmp_path):
    """A real trace of PROGRAM (2-core AMD EPYC, other tests running beside
    it): every later step detaches its loss twice (1-4 us each); in the first
    iteration one of them, and the torch `detach` it runs, lasted 0 in whole
    microseconds. The first step once went looking for it past the iteration
    into the model's `.to()` under no_grad (inference work inside a step)."""
    import os
    import shutil

    path = tmp_path / "run-1.pfw.gz"
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "data", "steps", "hf-trainer-first-detach-zero-length.pfw.gz"),
                path)
    check_trainer_steps(str(path))


def check_trainer_steps(path):
    events = [e for e in read_trace(path) if e.get("ph") == "X"]

    doc = analyzer_json("summary", path, "--by", "step")
    [proc] = doc["processes"]
    assert proc["source"] == "optimizer" and proc["steps"] == STEPS, proc
    steps = [(round(r["start_us"] * 1000), round((r["start_us"] + r["duration_us"]) * 1000)) for r in doc["steps"]]

    def step_of(e):
        return [i for i, (a, b) in enumerate(steps) if a <= e["ts_ns"] < b]

    calls = [e for e in events if e.get("cat") == "torch" and e["name"] == "nn.Module: GPT2LMHeadModel"]
    train = [e for e in calls if e["args"].get("phase") == "forward"]
    evals = [e for e in calls if e["args"].get("phase") == "inference"]
    assert len(train) == STEPS * ACCUMULATE and len(evals) == EVAL_BATCHES * (STEPS // EVAL_EVERY), \
        [e["args"].get("phase") for e in calls]
    backward = [e for e in events if e.get("cat") == "torch" and e["name"] == "Tensor.backward"]
    for i in range(STEPS):
        assert sum(step_of(e) == [i] for e in train) == ACCUMULATE, i
        assert sum(step_of(e) == [i] for e in backward) == ACCUMULATE, i
    assert all(step_of(e) == [] for e in evals), "an evaluation's model call inside a training step"
    # Inside a step nothing is inference: the clipping (no_grad, between the
    # last backward() and the optimizer step) is the update's.
    inside = [e for e in events if step_of(e) and e.get("args", {}).get("phase") == "inference"]
    assert not inside, sorted({e["name"] for e in inside})
    clip = [e for e in events if e["name"] == "aten::linalg_vector_norm" and step_of(e)]
    assert clip and all(e["args"].get("phase") == "optimizer" for e in clip)
    for r in doc["steps"]:
        assert r["forward_us"] > 0 and r["backward_us"] > 0 and r["optimizer_us"] > 0, r
