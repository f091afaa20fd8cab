"""What op and kernel events are attributed to, across a zoo of small models.

    python bench/attribution_zoo.py [--backends aot_eager,inductor] [--models gpt2,bert,...] [--calls 2]

Builds each model from a config with random weights and tiny sizes (no
download: transformers configs, torch.nn), compiles it with the capture
backend (``dftracer_dynamo_backend``, "aot_eager") and with the Inductor
capture backend (``dftracer_inductor_backend``), runs ``--calls`` steps
(training: forward, backward; inference: forward under no_grad) with tracing
on, and prints per model and backend:

* ``events``: op events (aot_eager) or kernel events (Inductor) per call;
* ``real``: the share of them whose ``module`` is a path of the model's
  ``named_modules()`` (the root's "" included; target >= 0.95);
* ``empty``: the share whose module is "" (no submodule applies);
* ``flops``: the events' FLOPs per call over FlopCounterMode's for the same
  step run eagerly (target within 1 %); the dynamic-shape model checks each
  sequence length on its own.

Models: GPT-2, BERT, T5, ViT, Llama (transformers), an LSTM, a small CNN, a
model whose child modules hold a graph break (called in a loop), a
dynamic-shape model (``dynamic=True``, two sequence lengths), activation
checkpointing, bf16 autocast, a compiled AdamW step. Not here: YOLOv8
(ultralytics is not installed) and DETR (its backbone needs timm / weights).
"""
import argparse
import collections
import contextlib
import os
import shutil
import sys
import tempfile
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
import trace_reader  # noqa: E402

B, S = 2, 16  # batch, sequence length


# ------------------------------------------------------------------ models
def _hf(name):
    import transformers as t

    if name == "gpt2":
        m = t.GPT2LMHeadModel(t.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128, n_positions=64))
        return m, lambda: {"input_ids": torch.randint(0, 128, (B, S))}
    if name == "bert":
        m = t.BertForMaskedLM(t.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                           intermediate_size=64, vocab_size=128, max_position_embeddings=64))
        return m, lambda: {"input_ids": torch.randint(0, 128, (B, S))}
    if name == "t5":
        m = t.T5ForConditionalGeneration(t.T5Config(d_model=32, d_ff=64, d_kv=16, num_layers=2, num_heads=2,
                                                    vocab_size=128, decoder_start_token_id=0))
        return m, lambda: {"input_ids": torch.randint(0, 128, (B, S)),
                           "decoder_input_ids": torch.randint(0, 128, (B, S // 2))}
    if name == "vit":
        m = t.ViTForImageClassification(t.ViTConfig(image_size=32, patch_size=8, hidden_size=32,
                                                    num_hidden_layers=2, num_attention_heads=2,
                                                    intermediate_size=64, num_labels=10))
        return m, lambda: {"pixel_values": torch.randn(B, 3, 32, 32)}
    if name == "llama":
        m = t.LlamaForCausalLM(t.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=2, num_key_value_heads=2, vocab_size=128,
                                             max_position_embeddings=64))
        return m, lambda: {"input_ids": torch.randint(0, 128, (B, S))}
    raise KeyError(name)


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1))
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(16, 32, batch_first=True)
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


class BreakChild(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)

    def forward(self, x):
        y = self.fc(x)
        if y.sum().item() > 1e9:  # a graph break in a child's forward
            y = y * 2
        return torch.relu(y)


class GraphBreak(torch.nn.Module):
    """Children called in a loop, each with a graph break (a YOLO-like parent)."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([BreakChild() for _ in range(3)])
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.down = torch.nn.Linear(64, 32)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


class Checkpointed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Mlp() for _ in range(2)])

    def forward(self, x):
        for b in self.blocks:
            x = x + torch.utils.checkpoint.checkpoint(b, x, use_reentrant=False)
        return x


class Spec:
    """One zoo entry: builds (model, inputs()), how a step runs it."""

    def __init__(self, name, build, train=True, dynamic=False, autocast=False, optimizer=False, lengths=(S,)):
        self.name, self.build, self.train = name, build, train
        self.dynamic, self.autocast, self.optimizer, self.lengths = dynamic, autocast, optimizer, lengths


def _plain(cls, shape):
    return lambda: (cls(), lambda n=S: {"x": torch.randn(*[n if d == "S" else d for d in shape])})


ZOO = [
    Spec("gpt2", lambda: _hf("gpt2")),
    Spec("bert", lambda: _hf("bert"), train=False),
    Spec("t5", lambda: _hf("t5")),
    Spec("vit", lambda: _hf("vit"), train=False),
    Spec("llama", lambda: _hf("llama")),
    Spec("lstm", _plain(Lstm, (B, "S", 16)), train=False),
    Spec("cnn", _plain(Cnn, (B, 3, 16, 16))),
    Spec("graph_break", _plain(GraphBreak, (B, 32))),
    Spec("dynamic", _plain(Mlp, (B, "S", 32)), train=False, dynamic=True, lengths=(16, 32)),
    Spec("checkpoint", _plain(Checkpointed, (B, 32))),
    Spec("bf16_autocast", _plain(Cnn, (B, 3, 16, 16)), train=False, autocast=True),
    Spec("adamw", _plain(Mlp, (B, 32)), optimizer=True),
]


# ------------------------------------------------------------------- steps
def _output_sum(out):
    if isinstance(out, torch.Tensor):
        return out.float().sum()
    logits = getattr(out, "logits", None)
    if logits is None and isinstance(out, (tuple, list)):
        logits = out[0]
    if logits is None:
        logits = out.last_hidden_state
    return logits.float().sum()


def _step(spec, fn, inputs, opt=None, step=None):
    """One step: forward (under no_grad for inference), and for training the
    backward and, for the optimizer entry, the (compiled) optimizer step."""
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if spec.autocast else contextlib.nullcontext()
    if not spec.train:
        with torch.no_grad(), ctx:
            fn(**inputs)
        return
    with ctx:
        loss = _output_sum(fn(**inputs))
    loss.backward()
    if step is not None:
        step()
        opt.zero_grad()


def _reference_flops(spec, model, inputs, opt):
    from dftracer.python.dynamo_nodes import EXTRA_FLOP_FORMULAS

    # the CPU flash-attention ops FlopCounterMode lacks, with its own formulas
    with FlopCounterMode(display=False, custom_mapping=EXTRA_FLOP_FORMULAS) as fc:
        _step(spec, model, inputs, opt, opt.step if opt is not None else None)
    return fc.get_total_flops()


def _events(tmp, prefix):
    out = []
    for path in trace_reader.trace_files(tmp, f"{prefix}-*.pfw*"):
        out.extend(trace_reader.read_trace(path))
    return [e for e in out if e.get("ph") == "X" and e.get("cat") == "dynamo"
            and (e["name"].startswith("function.") or e["name"].startswith("kernel."))]


def run_one(spec, backend_name, calls, tmp):
    from dftracer.python import dftracer, dftracer_dynamo_backend, dftracer_inductor_backend

    backend = dftracer_inductor_backend if backend_name == "inductor" else dftracer_dynamo_backend
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, make_inputs = spec.build()
    model.train(spec.train)
    names = {n for n, _ in model.named_modules()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3) if spec.optimizer else None
    rows = []
    for length in spec.lengths:
        torch.manual_seed(1)
        inputs = make_inputs(length) if spec.dynamic else make_inputs()
        ref = _reference_flops(spec, model, inputs, opt)
        if opt is not None:
            opt.zero_grad()
        prefix = os.path.join(tmp, f"{spec.name}-{backend_name}-{length}")
        log = dftracer.initialize_log(prefix, None, -1, enable=True)
        t0 = time.perf_counter()
        try:
            if length == spec.lengths[0]:
                compiled = torch.compile(model, backend=backend, dynamic=True if spec.dynamic else None)
                step = torch.compile(opt.step, backend=backend) if opt is not None else None
            for _ in range(calls):
                _step(spec, compiled, inputs, opt, step)
        finally:
            log.finalize()
        secs = time.perf_counter() - t0
        evs = _events(tmp, os.path.basename(prefix))
        mods = [e["args"].get("module", "") for e in evs]
        real = sum(m in names for m in mods)
        flops = sum(int(e["args"].get("flops", 0) or 0) for e in evs) / calls
        rows.append({
            "model": spec.name + (f" (seq {length})" if spec.dynamic else ""),
            "mode": "train" if spec.train else "infer", "backend": backend_name,
            "events": len(evs) / calls,
            "real": real / len(mods) if mods else float("nan"),
            "empty": mods.count("") / len(mods) if mods else float("nan"),
            "flops": flops / ref if ref else (float("nan") if flops == 0 else float("inf")),
            "ref_gflop": ref / 1e9, "secs": secs,
            "phases": dict(collections.Counter(e["args"].get("phase") for e in evs)),
        })
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="aot_eager,inductor")
    ap.add_argument("--models", default=",".join(s.name for s in ZOO))
    ap.add_argument("--calls", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="zoo-")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(tmp, "inductor-cache"))
    import warnings
    warnings.filterwarnings("ignore")
    import logging
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
    wanted = a.models.split(",")
    specs = [s for s in ZOO if s.name in wanted]
    print(f"{'model':18} {'mode':5} {'backend':9} {'events':>7} {'real':>6} {'empty':>6} {'flops/ref':>9} "
          f"{'ref MFLOP':>9} {'s':>6}  phases", flush=True)
    worst = []
    try:
        for spec in specs:
            for backend in a.backends.split(","):
                try:
                    rows = run_one(spec, backend, a.calls, tmp)
                except Exception as e:  # one model's failure is a row, not the end of the run
                    print(f"{spec.name:18} {'':5} {backend:9} failed: {type(e).__name__}: {str(e)[:120]}",
                          flush=True)
                    worst.append((spec.name, backend, "failed"))
                    continue
                for r in rows:
                    print(f"{r['model']:18} {r['mode']:5} {r['backend']:9} {r['events']:7.0f} {r['real']:6.3f} "
                          f"{r['empty']:6.3f} {r['flops']:9.4f} {r['ref_gflop'] * 1e3:9.3f} {r['secs']:6.1f}  "
                          f"{r['phases']}", flush=True)
                    if r["events"] and (r["real"] < 0.95 or (r["ref_gflop"] and abs(r["flops"] - 1) > 0.01)):
                        worst.append((r["model"], backend, f"real {r['real']:.3f}, flops {r['flops']:.4f}"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("below target:", worst if worst else "none")


if __name__ == "__main__":
    main()
