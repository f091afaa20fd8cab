"""The training step the program said it is in, for events recorded outside
any tagged region: collectives (collectives.py) run inside DDP's backward hooks or
torch.distributed calls, where no Dynamo/dft_ai tag is active, yet the step
analysis (stragglers per step) needs their `step`. Set by
`Dynamo.update(step=...)` and `dft_ai.update(step=...)`; one process-wide
value, read without a lock (a stale read mislabels at most one call).

Each change of the value is also written as an instant event `step` (cat
"dftracer", args.step): the analyzer starts a step there, so a step holds
everything from one update(step=...) to the next -- the backward, the
optimizer and the data loading too, not only the events that carry the tag.
"""
from .. import _core

value = None


def note(step) -> None:
    """Records `step` (an int, or anything whose int() is exact) as current."""
    global value
    if step is None:
        return
    try:
        new = int(step)
    except (TypeError, ValueError):
        return
    if new != value:
        value = new
        if _core.enabled():
            _core.instant("step", "dftracer", {"step": new})
