"""torch_compat: the torch internals the package uses, and what happens when
one is gone (one warning line, the traced program unaffected)."""
import json

import pytest

torch = pytest.importorskip("torch")

from trace_reader import read_trace, trace_files  # noqa: E402


def test_no_private_torch_names_outside_torch_compat():
    """Every `torch._*` access of the Python package goes through torch_compat,
    in its subpackages too, and through a torch module imported under another
    name (`import torch.autograd.profiler as tap; tap._enable_profiler`)."""
    import pathlib
    import re

    import dftracer.python as pkg

    offenders = []
    for path in sorted(pathlib.Path(pkg.__file__).parent.rglob("*.py")):
        if path.name == "torch_compat.py":
            continue
        text = path.read_text()
        # names bound to a torch module or member: `import torch.x as a`, `from torch.x import a`
        aliases = set(re.findall(r"^\s*import torch[\w.]* as (\w+)", text, re.M))
        for names in re.findall(r"^\s*from torch[\w.]* import \(?([\w, ]+)", text, re.M):
            aliases.update(n.split(" as ")[-1].strip() for n in names.split(",") if n.strip())
        private = re.compile(r"\b(%s)\._\w+" % "|".join(map(re.escape, sorted(aliases)))) if aliases else None
        for i, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            where = f"{path.relative_to(pathlib.Path(pkg.__file__).parent)}:{i}: {line.strip()}"
            # torch._dynamo.reset() in user-facing messages is advice, not access
            if re.search(r"\btorch\._\w+[.(\[]", code) and "reset()" not in code and '"torch._dynamo"' not in code:
                offenders.append(where)
            elif re.search(r"from torch\._|import torch\._|functorch", code):
                offenders.append(where)
            elif private is not None and private.search(code):
                offenders.append(where)
    assert not offenders, "\n".join(offenders)


def test_missing_profiler_start_stop_degrades_with_one_warning(run_python, tmp_path):
    """torch's profiler's _enable_profiler is gone (the name removed from
    torch.autograd.profiler): eager tracing with memory capture still traces
    ops and their bytes, and says once, on one line, what is lost."""
    code = f"""
        import json, torch
        import torch.autograd.profiler as tap

        del tap._enable_profiler
        from dftracer.python import dftracer, trace_eager
        log = dftracer.initialize_log({str(tmp_path / "pa")!r}, None, -1)
        with trace_eager(memory=True):
            torch.ones(256).neg()
        with trace_eager(memory=True):
            torch.ones(256).neg()
        log.finalize()
        print(json.dumps({{"wrapped": hasattr(tap, "_enable_profiler")}}))
    """
    r = run_python(code, env={})
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"wrapped": False}
    lines = [ln for ln in r.stderr.splitlines() if "[dftracer] warning:" in ln]
    assert len(lines) == 1, r.stderr
    assert "_enable_profiler" in lines[0] and "checked against torch" in lines[0]
    assert "torch.profiler cannot start" in lines[0]
    (path,) = trace_files(str(tmp_path), "pa-*.pfw*")
    neg = [e for e in read_trace(path) if e.get("name") == "aten::neg" and "alloc_bytes" in e.get("args", {})]
    assert [e["args"]["alloc_bytes"] for e in neg] == [1024, 1024]


@pytest.mark.parametrize("version, wrapped", [("1.13.1", False), ("2.0.0", True)])
def test_profiler_start_stop_is_wrapped_from_torch_2_0(run_python, tmp_path, version, wrapped):
    """The profiler patch is applied from the torch release the layout is
    known from; an older torch gets the one warning line and no patch."""
    code = f"""
        import json, torch
        import torch.autograd.profiler as tap

        original = tap._enable_profiler
        torch.__version__ = {version!r}
        from dftracer.python import dftracer, trace_eager
        log = dftracer.initialize_log({str(tmp_path / "pv")!r}, None, -1)
        with trace_eager(memory=True):
            torch.ones(8).neg()
        log.finalize()
        print(json.dumps({{"wrapped": tap._enable_profiler is not original}}))
    """
    r = run_python(code, env={})
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"wrapped": wrapped}
    lines = [ln for ln in r.stderr.splitlines() if "[dftracer] warning:" in ln]
    if wrapped:
        assert lines == [], r.stderr
    else:
        assert len(lines) == 1 and "needs torch >= 2.0" in lines[0], r.stderr


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


def test_backend_still_traces_after_torch_profiler_imports_inductor_under_trace_eager(run_python, tmp_path):
    """trace_eager() waits for torch._dynamo to be imported and then hooks its
    compile callbacks. torch.profiler's start imports torch._inductor, whose
    own import chain imports torch._dynamo: our hook used to run right there
    and import torch_compat, whose backend imports then hit torch's partially
    initialised torch._inductor.standalone_compile. The ImportError was taken
    for a missing API, and dftracer_dynamo_backend ran every graph eagerly,
    untraced, for the rest of the process. Now: no warning, op events."""
    code = f"""
        import json, sys, torch
        from dftracer.python import dftracer
        from dftracer.python.eager import trace_eager
        assert "torch._dynamo" not in sys.modules
        with trace_eager():  # before torch._dynamo is imported
            pass
        m = torch.nn.Linear(3, 3)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            m(torch.randn(2, 3))
        from dftracer.python import dftracer_dynamo_backend
        log = dftracer.initialize_log({str(tmp_path / "pi")!r}, None, -1)
        c = torch.compile(m, backend=dftracer_dynamo_backend)
        x = torch.randn(2, 3)
        same = torch.equal(c(x), m(x))
        log.finalize()
        print(json.dumps({{"same": same}}))
    """
    r = run_python(code, env={})
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"same": True}
    assert "not usable" not in r.stderr, r.stderr
    events = [e for f in trace_files(str(tmp_path)) for e in read_trace(f)]
    ops = [e for e in events if e.get("cat") == "dynamo" and e.get("ph") == "X" and "addmm" in e.get("name", "")]
    assert ops, sorted({(e.get("cat"), e.get("name")) for e in events})[:40]
