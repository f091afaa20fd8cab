"""The training step the program said it is in, for events recorded outside
any tagged region: collectives (collectives.py) run inside DDP's backward hooks or
torch.distributed calls, where no Dynamo/dft_ai tag is active, yet the step
analysis (issue #16: stragglers per step) needs their `step`. Set by
`Dynamo.update(step=...)` and `dft_ai.update(step=...)`; one process-wide
value, read without a lock (a stale read mislabels at most one call).
"""

value = None


def note(step) -> None:
    """Records `step` (an int, or anything whose int() is exact) as current."""
    global value
    if step is None:
        return
    try:
        value = int(step)
    except (TypeError, ValueError):
        pass
