"""The C++ hooks of the capture backend as the Python side sees them.

``_core`` is the extension when it has the hooks (``dynamo_mark``,
``dynamo_begin``/``dynamo_end``, ``dynamo_register_graph``; see
src/capture/compile and bindings/python/src/dynamo_hooks.cc), else None: then
the backend is plain aot_eager and nothing is recorded. The phase numbers are
the C++ side's.
"""

from __future__ import annotations

from .. import torch_compat

FORWARD, BACKWARD, INFERENCE = 0, 1, 2


def _load_core():
    try:
        from dftracer import _core
    except ImportError:
        return None
    if not hasattr(_core, "dynamo_mark"):
        return None
    return _core


_core = _load_core()
if _core is not None:
    # The hook nodes have no users; registering them as side-effecting keeps
    # every dead-code elimination pass from removing them.
    torch_compat.mark_side_effectful(_core.dynamo_mark)


def tracing_enabled() -> bool:
    return _core is not None and bool(_core.enabled())
