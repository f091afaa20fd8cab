"""A GPT-2 training step built from a config (transformers, random weights,
CPU): what the memory tests and bench/torch/bench_memory.py run.

    step = gpt2_train_step(TINY)          # 2 layers of width 64: ~540 allocation events
    step = gpt2_train_step(SMALL, checkpointing=True)
    step()                                # zero_grad, forward, loss, backward, SGD

The weights (torch.manual_seed(0)) and the batch (its own generator) are the
same on every call, so two steps built alike allocate alike.
"""
import torch
import transformers

# GPT-2's architecture, narrower and shallower, a shorter vocabulary and
# context; batch x tokens of input.
TINY = dict(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64, batch=4, tokens=64)
SMALL = dict(n_layer=4, n_embd=256, n_head=4, vocab_size=2048, n_positions=128, batch=2, tokens=64)  # a CPU step of a second


def gpt2_train_step(size, checkpointing=False):
    """A function taking one SGD training step of a GPT-2 of `size` (TINY,
    SMALL); with `checkpointing`, activation checkpointing on (non-reentrant)."""
    size = dict(size)
    batch, tokens = size.pop("batch"), size.pop("tokens")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(use_cache=False, **size)
    model = transformers.GPT2LMHeadModel(cfg)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ids = torch.randint(0, cfg.vocab_size, (batch, tokens), generator=torch.Generator().manual_seed(1))

    def step():
        opt.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()

    return step
