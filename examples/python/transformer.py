"""A transformer encoder (transformers' BertModel, from a config, random
weights) traced in training and inference with the torch.compile backend.

    DFTRACER_ENABLE=1 DFTRACER_LOG_FILE=traces/transformer python examples/python/transformer.py
    -> traces/transformer-<app>-<pid>.pfw.gz

Module paths in the op events name the encoder layer, the attention block and
the projection (e.g. "encoder.layer.1.attention.self.query"), so time, FLOPs
and bytes can be summed per layer. Nothing is downloaded: the model comes from
a BertConfig. Without transformers installed, torch's nn.TransformerEncoder is
used instead.

The batches come from files, as in training: token shards written as .npy
files under --data-dir (default: a temporary directory, removed at the end),
read by a DataLoader with --workers processes (default 2). Each worker writes
its own trace file holding its reads; the main process's train_step regions
hold a `DataLoader.next` region (cat "dataloader": the step's data time).
I/O is traced under the data directory only: the script sets
DFTRACER_DATA_DIR to it unless the variable is set already.
"""
import argparse
import json
import os
import time
import shutil
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Classifier(nn.Module):
    def __init__(self, layers, hidden, heads, vocab=1000, classes=2):
        super().__init__()
        try:
            import transformers

            cfg = transformers.BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                          num_attention_heads=heads, intermediate_size=4 * hidden,
                                          max_position_embeddings=512)
            self.encoder = transformers.BertModel(cfg, add_pooling_layer=False)
            self.hf = True
        except ImportError:
            self.embed = nn.Embedding(vocab, hidden)
            layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.hf = False
        self.head = nn.Linear(hidden, classes)

    def forward(self, ids, mask):
        if self.hf:
            h = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        else:
            h = self.encoder(self.embed(ids), src_key_padding_mask=mask == 0)
        return self.head(h[:, 0])


class TokenShards(Dataset):
    """One sample per .npy file: token ids, attention mask and label."""

    def __init__(self, root, samples, seq, vocab=1000):
        self.paths = [os.path.join(root, f"sample{i:05d}.npy") for i in range(samples)]
        rng = np.random.default_rng(0)
        for i, path in enumerate(self.paths):
            if not os.path.exists(path):
                np.save(path, np.concatenate([rng.integers(0, vocab, seq), np.ones(seq, dtype=np.int64), [i % 2]]))
        self.seq = seq

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        row = torch.from_numpy(np.load(self.paths[i]))
        return row[:self.seq], row[self.seq:2 * self.seq], row[2 * self.seq]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--data-dir", default=None, help="where the sample files are written and read (default: a temporary dir)")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--trace-prefix", default=None, help="trace file prefix (starts tracing without DFTRACER_ENABLE)")
    p.add_argument("--times", default=None, help="write the iterations' perf_counter spans here (JSON)")
    a = p.parse_args()

    data_dir = a.data_dir or tempfile.mkdtemp(prefix="dftracer-example-data-")
    os.makedirs(data_dir, exist_ok=True)
    # Read when dftracer is imported: only the samples' I/O, not every file
    # the interpreter and torch.compile open.
    os.environ.setdefault("DFTRACER_DATA_DIR", os.path.abspath(data_dir))
    from dftracer.python import dft_fn, dftracer, dftracer_dynamo_backend, dynamo

    log = dftracer.initialize_log(a.trace_prefix, None, -1) if a.trace_prefix else None
    torch.manual_seed(0)
    model = Classifier(a.layers, a.hidden, a.heads)
    # The plain backend: events carry the default `dynamo` instance's tags.
    compiled = torch.compile(model, backend=dftracer_dynamo_backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    samples = TokenShards(data_dir, a.batch * (a.steps + 1), a.seq)
    loader = DataLoader(samples, batch_size=a.batch, num_workers=a.workers)
    batches = iter(loader)

    model.train()
    spans = []  # each iteration's perf_counter start and end: the loop's own clock
    for step in range(a.steps):
        t0 = time.perf_counter()
        dynamo.update(epoch=0, step=step)
        with dft_fn("app", name="train_step"):
            with dft_fn("dataloader", name="DataLoader.next"):  # waiting for the workers' reads
                ids, mask, labels = next(batches)
            opt.zero_grad()
            loss = F.cross_entropy(compiled(ids, mask), labels)
            loss.backward()
            with dft_fn("app", name="optimizer.step"):
                opt.step()
        spans.append([t0, time.perf_counter()])  # the region's end: the step's, for the last step
        print(f"step {step} loss {loss.item():.4f}")
    if a.times:
        with open(a.times, "w") as f:
            json.dump({"steps": spans}, f)

    model.eval()
    with dft_fn("dataloader", name="DataLoader.next"):
        ids, mask, _ = next(batches)
    with torch.inference_mode():
        with dft_fn("app", name="inference"):
            probs = compiled(ids, mask).softmax(-1)
    print("p(class 1)", [round(v, 3) for v in probs[:, 1].tolist()])
    del batches  # the workers exit (and close their trace files) here
    if log is not None:
        log.finalize()
    if a.data_dir is None:
        shutil.rmtree(data_dir, ignore_errors=True)
    path = os.environ.get("DFTRACER_LOG_FILE") or a.trace_prefix
    if path:
        print("trace:", path + "-*.pfw*")


if __name__ == "__main__":
    main()
