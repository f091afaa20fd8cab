"""pydftracer's tag keys are written once, in the extension (_core.TAG_KEYS);
every Python API that takes them as parameters agrees with that list, and
a tag given through each of them ends up in the event's args."""
import inspect

import pytest

from dftracer import _core
from dftracer.python import dft_fn
from dftracer.python.tags import TAG_KEYS

from trace_reader import read_trace, trace_files


def _tag_params(fn):
    return tuple(p for p in inspect.signature(fn).parameters if p in TAG_KEYS)


def test_tag_keys_come_from_the_extension():
    assert TAG_KEYS == tuple(_core.TAG_KEYS) == ("epoch", "step", "image_idx", "image_size")
    assert _tag_params(dft_fn.update) == TAG_KEYS


def test_dynamo_tag_parameters_agree():
    pytest.importorskip("torch")
    from dftracer.python.dynamo import Dynamo, create_backend

    for fn in (Dynamo.__init__, Dynamo.update, create_backend):
        assert _tag_params(fn) == TAG_KEYS, fn
    d = Dynamo("x", *range(len(TAG_KEYS)))
    assert {k: d.tags[k] for k in TAG_KEYS} == dict(zip(TAG_KEYS, range(len(TAG_KEYS))))


def test_every_tag_key_is_a_dft_fn_parameter_and_an_arg(run_python, tmp_path):
    """dft_fn(cat, name, <tag keys...>, enable) positionally and by keyword,
    update(), and a decorated function's parameters named like the keys:
    each key is written under its own name."""
    code = f"""
        from dftracer import _core
        from dftracer.python import dftracer, dft_fn
        keys = _core.TAG_KEYS
        log = dftracer.initialize_log({str(tmp_path / "tags")!r}, None, -1)
        with dft_fn("c", "positional", *range(1, len(keys) + 1)):
            pass
        with dft_fn("c", "keyword", **{{k: 10 + i for i, k in enumerate(keys)}}):
            pass
        f = dft_fn("c", "updated")
        f.update(**{{k: 20 + i for i, k in enumerate(keys)}})
        f.flush()
        src = "def g(" + ", ".join(keys) + "):\\n    return 0\\n"
        ns = {{}}
        exec(src, ns)
        dft_fn("c").log(ns["g"])(*range(30, 30 + len(keys)))
        log.finalize()
    """
    run_python(code, env={})
    (path,) = trace_files(str(tmp_path), "tags-*.pfw*")
    by_name = {e["name"]: e.get("args", {}) for e in read_trace(path) if e.get("ph") == "X"}
    for name, base in (("positional", 1), ("keyword", 10), ("updated", 20), ("g", 30)):
        got = {k: by_name[name].get(k) for k in TAG_KEYS}
        assert got == {k: base + i for i, k in enumerate(TAG_KEYS)}, (name, by_name[name])
