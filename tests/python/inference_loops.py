"""Inference loops with nothing that marks a step (no region, no
update(step=...), no optimizer): one forward per batch under no_grad or
inference_mode, as serving and evaluation loops are written. For
test_inference_steps.py. Run as a script:

    python inference_loops.py SHAPE OUT_DIR

traces into OUT_DIR/run-*.pfw and writes OUT_DIR/loop.times (JSON):
{"iterations": [[t0, t0b, t1a, t1, 0], ...]} in perf_counter seconds, as
step_shapes.py writes them: the event that starts the iteration's step (its
batch's fetch, else its first graph call or op) lies between t0 and t0b, the
iteration's last traced work between t1a and t1 (brackets around the calls,
so a preempted thread moves a bracket's end, not the event out of it).

Shapes (SHAPE is MODE-GRAD[-loader][-break][-multi][-recompile|-midrecompile][-tight][-gpt2]):
  MODE    compile  torch.compile(m) (Inductor), the capture's hooks on
          capture  torch.compile(m, backend=dftracer_dynamo_backend)
          eager    no compile; the LibTorch observer (DFTRACER_TRACE_EAGER=1)
  GRAD    nograd   `with torch.no_grad():` around each forward
          infmode  `with torch.inference_mode():` around each forward
  loader  batches from a DataLoader (no workers) instead of a tensor made
          before the loop
  break   the model's forward has a graph break (two graphs per call)
  multi   the model is called on three inputs per iteration (an encoder
          run on a query and two passages): three calls, one iteration
  recompile  the last iteration's batch has another size: its call
          recompiles (a new graph) before it runs
  midrecompile  8 iterations, from the fourth on the batch has another
          size: that call recompiles (new graphs, which the later calls use)
  tight   no untraced work after the forward: the next iteration's first
          call follows the last one's result read (`float(y[0, 0])`, with
          grad mode on) about as closely as one call follows another
  gpt2    the model is a 2-layer GPT-2 built from a config (transformers),
          on token ids made from the batch: eager, its view, transpose and
          dropout ops last 0 us on some calls and 1 on others

Every iteration but a tight one's ends with 6 ms of untraced work (post-processing, a reply);
the model is built and warmed by nothing before the loop.
"""
import json
import os
import sys
import time

STEPS = 6


def main():
    shape, out_dir = sys.argv[1], sys.argv[2]
    mode, grad, *extra = shape.split("-")
    import torch
    from dftracer.python import dftracer
    log = dftracer.initialize_log(os.path.join(out_dir, "run"), None, -1)
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(64, 256)
            self.b = torch.nn.Linear(256, 8)

        def forward(self, x):
            h = torch.relu(self.a(x))
            if "break" in extra:
                torch._dynamo.graph_break()
            return self.b(h).softmax(-1)

    m = Net().eval()
    if "gpt2" in extra:  # a transformer: some of its ops last 0 us on some calls and 1 on others
        import transformers

        gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128,
                                                                   n_positions=64)).eval()
        m = lambda x: gpt2(input_ids=(x.abs() * 100).long() % 128).logits[:, -1]  # noqa: E731
    if mode == "compile":
        fwd = torch.compile(m)
    elif mode == "capture":
        from dftracer.python import dftracer_dynamo_backend
        fwd = torch.compile(m, backend=dftracer_dynamo_backend)
    else:
        fwd = m
    ctx = torch.no_grad if grad == "nograd" else torch.inference_mode
    steps = 8 if "midrecompile" in extra else STEPS
    data = torch.randn(steps * 16, 64)
    if "loader" in extra:
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=16)
        it = iter(loader)
        batch = lambda: next(it)[0]  # noqa: E731
    else:
        x = data[:16].clone()
        batch = lambda: x  # noqa: E731
    others = [data[16:32].clone(), data[32:48].clone()] if "multi" in extra else []  # made before the loop
    its = []
    time.sleep(0.02)  # setup before the loop: outside every step
    for i in range(steps):
        t0 = time.perf_counter()
        xb = batch()
        if "midrecompile" in extra and i >= 3:
            xb = xb[:5]
        if "recompile" in extra and i == STEPS - 1:
            xb = xb[:5]
        with ctx():
            for xc in [xb] + others:
                y = fwd(xc)
        t1 = time.perf_counter()
        its.append([t0, t1, t0, t1, 0])
        if "tight" not in extra:
            time.sleep(0.006)  # untraced work after the forward (post-processing): in the step
        float(y[0, 0])
    if "loader" in extra:
        try:
            next(it)  # the loader's end, as a for loop sees it
        except StopIteration:
            pass
    time.sleep(0.02)  # after the loop: outside every step
    log.finalize()
    with open(os.path.join(out_dir, "loop.times"), "w") as f:
        json.dump({"iterations": its}, f)


if __name__ == "__main__":
    main()
