"""torch_compat: the torch internals the package uses, and what happens when
one is gone (one warning line, the traced program unaffected)."""
import json

import pytest

torch = pytest.importorskip("torch")

from trace_reader import read_trace, trace_files  # noqa: E402


def test_no_private_torch_names_outside_torch_compat():
    """Every `torch._*` access of the Python package goes through torch_compat."""
    import pathlib
    import re

    import dftracer.python as pkg

    offenders = []
    for path in pathlib.Path(pkg.__file__).parent.glob("*.py"):
        if path.name == "torch_compat.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            # torch._dynamo.reset() in user-facing messages is advice, not access
            if re.search(r"\btorch\._\w+[.(\[]", code) and "reset()" not in code and '"torch._dynamo"' not in code:
                offenders.append(f"{path.name}:{i}: {line.strip()}")
            elif re.search(r"from torch\._|import torch\._|functorch", code):
                offenders.append(f"{path.name}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_missing_dynamo_internals_degrade_with_one_warning_each(run_python, tmp_path):
    """Two internals are gone (simulated by removing the names only dftracer
    looks up; Dynamo holds its own references): Dynamo's resume-function
    table (graph metadata) and its compile-callback registry (eager tracing's
    pause while compiling). Compiling, running and backward still work, op
    events are written, and each missing internal is reported once, on one
    line, naming the torch version it was checked against."""
    code = f"""
        import json, torch
        import torch._dynamo
        import torch._dynamo.callback as callback
        import torch._dynamo.resume_execution as resume

        del resume.ContinueExecutionCache, callback.callback_handler

        from dftracer.python import dftracer, dftracer_dynamo_backend, trace_eager
        log = dftracer.initialize_log({str(tmp_path / "tc")!r}, None, -1)
        trace_eager()
        m, m2 = torch.nn.Linear(3, 3), torch.nn.Linear(3, 2)
        c, c2 = (torch.compile(k, backend=dftracer_dynamo_backend) for k in (m, m2))
        x = torch.randn(2, 3)
        outs = [c(x) for _ in range(3)]
        c2(x).sum().backward()
        log.finalize()
        print(json.dumps({{"same": all(torch.equal(o, m(x)) for o in outs)}}))
    """
    r = run_python(code, env={})
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"same": True}
    lines = [ln for ln in r.stderr.splitlines() if "[dftracer] warning:" in ln]
    frame = [ln for ln in lines if "ContinueExecutionCache" in ln]
    callbacks = [ln for ln in lines if "callback_handler" in ln]
    assert len(frame) == 1 and len(callbacks) == 1, r.stderr
    assert all("checked against torch" in ln for ln in frame + callbacks)
    (path,) = trace_files(str(tmp_path), "tc-*.pfw*")
    events = read_trace(path)
    assert sum(e.get("name") == "function.addmm.default" for e in events) == 4
    graphs = [json.loads(e["args"]["value"]) for e in events
              if e.get("ph") == "M" and e.get("name") == "dynamo.graph"]
    assert len(graphs) == 2 and all(g["frame"] not in ("", "?") for g in graphs), graphs
