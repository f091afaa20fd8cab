"""A Llama-style decoder (transformers.LlamaForCausalLM from a small
LlamaConfig, random weights: nothing is downloaded) trained for a few steps
with the capture backend, no regions: `dynamo.update(step=...)` at the top of
each iteration is all the analyzer needs to find the steps.

    DFTRACER_ENABLE=1 DFTRACER_LOG_FILE=traces/llama python examples/python/llama.py
    dftracer-analyze summary --by step traces/
    dftracer-analyze report traces/ -o llama.html

--times FILE writes each iteration's perf_counter start and end (JSON), the
loop's own clock to check the analyzer's steps against.
"""
import argparse
import json
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--times", default=None, help="write the iterations' perf_counter spans here (JSON)")
    a = p.parse_args()

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from dftracer.python import dftracer_dynamo_backend, dynamo

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1000, hidden_size=a.hidden, intermediate_size=4 * a.hidden,
                      num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.heads // 2,
                      max_position_embeddings=4 * a.seq)
    model = LlamaForCausalLM(cfg)
    compiled = torch.compile(model, backend=dftracer_dynamo_backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq))
    spans = []
    for step in range(a.steps):
        t0 = time.perf_counter()
        dynamo.update(step=step)
        opt.zero_grad()
        loss = compiled(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f} {1e3 * (time.perf_counter() - t0):.1f} ms")
        spans.append([t0, time.perf_counter()])  # the iteration's end: after all of its body
    if a.times:
        with open(a.times, "w") as f:
            json.dump({"steps": spans}, f)


if __name__ == "__main__":
    main()
