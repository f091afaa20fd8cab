"""A dynamic-shape graph's call at sizes it has seen finds its table with
no Python call (plain dict subscripts in the graph wrapper), here with
several size symbols, and every call still records the FLOPs of its own
sizes."""
import sys

import pytest

torch = pytest.importorskip("torch")

from dftracer.python import dftracer_dynamo_backend  # noqa: E402
from dftracer.python.dynamo_graphs import instrumented_graphs  # noqa: E402

from test_dynamo_helpers import op_events, traced  # noqa: E402


def _python_calls(fn):
    """Names of the Python functions dftracer's package runs during fn()."""
    names = []

    def prof(frame, event, arg):
        if event == "call" and "dftracer" in frame.f_code.co_filename:
            names.append(frame.f_code.co_name)

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return names


def test_seen_sizes_are_found_without_a_python_call(tmp_path):
    torch._dynamo.reset()
    w = torch.randn(8, 8)

    def f(x):
        return (x @ w).relu()

    c = torch.compile(f, backend=dftracer_dynamo_backend, dynamic=True)
    shapes = [(2, 3, 8), (4, 5, 8)]  # two symbolic sizes (the batch and the rows)
    with traced(tmp_path) as events:
        with torch.no_grad():
            for s in shapes + shapes:
                c(torch.randn(*s))
            x = torch.randn(*shapes[0])
            calls = _python_calls(lambda: c(x))
    info = instrumented_graphs()[-1]
    assert info.sized is not None and len(info.sized.indices) > 1, info.sized.sizes.sources  # SymInt size inputs
    assert not {"pick", "new", "__missing__"} & set(calls), calls
    mm = [e for e in op_events(events) if e["args"]["flops"]]
    expected = [2 * b * r * 8 * 8 for b, r, _ in shapes + shapes + shapes[:1]]
    assert [e["args"]["flops"] for e in mm] == expected
