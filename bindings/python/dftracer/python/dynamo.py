"""torch.compile capture: pydftracer's Dynamo API over our instrumenting backend.

    from dftracer.python import dftracer, dynamo, Dynamo, dftracer_dynamo_backend

    @dynamo.compile                          # bare, on a function or a forward
    def forward(self, x): ...

    @dynamo.compile(fullgraph=False, dynamic=None, name="encoder", phase="eval")
    def forward(self, x): ...                # with torch.compile options and tags

    d = Dynamo("resnet50", epoch=1, step=0, image_idx=0, image_size=(224, 224))
    model.forward = d.compile(model.forward)
    d.update(step=7)                         # every later op event says "step":7

    torch.compile(model, backend=dftracer_dynamo_backend)

Every ATen op of every forward, backward and inference graph becomes a
complete event (cat ``dynamo``, name ``function.<op overload>``) whose args
hold ``grad_enabled``, ``phase``, ``graph``, ``node``, ``module``, ``source``,
``shapes``, ``dtype``, ``flops``, ``bytes``, ``seq_nr`` and the tags. Each
graph call is an event (``graph.forward`` / ``graph.backward`` /
``graph.inference``) and each call of a ``Dynamo.compile``d function is one
(``dynamo.<function>`` or the given name). How it works: docs/capture.md.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from typing import Any, Callable

import torch

from .. import _core as _api
from .compile import compile_events, dynamo_backend, dynamo_graph_call, dynamo_modules, dynamo_nodes, optimizer_events
from . import current_step, torch_compat
from .ai_common import DFTracerAI
from .compile.dynamo_backend import _active_tags, graph_count, instrumented_graphs, make_backend, tracing_enabled
from .compile.dynamo_hooks import INFERENCE
from .inductor.inductor_backend import COMPILE_BACKEND_ENV, backend_name, make_inductor_backend
from .compile.dynamo_nodes import EXTRA_FLOP_FORMULAS
from .tags import TAG_KEYS

# The optimizer runs eagerly beside compiled graphs: record its steps.
optimizer_events.install()

CAT_DYNAMO = "dynamo"

__all__ = [
    "CAT_DYNAMO",
    "Dynamo",
    "EXTRA_FLOP_FORMULAS",
    "create_backend",
    "dftracer_dynamo_backend",
    "dftracer_inductor_backend",
    "dynamo",
    "graph_count",
    "instrumented_graphs",
]


def _json_value(v: Any) -> Any:
    if isinstance(v, float):
        # NaN and +-inf have no JSON form (json.dumps writes the invalid
        # `NaN`, which the core rejects): a diverged loss is written as null,
        # as the formatter writes non-finite record args.
        return v if math.isfinite(v) else None
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, (tuple, list)):
        return [_json_value(x) for x in v]
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return _json_value(v.item())
    return str(v)


def _tags_fragment(tags: dict) -> str:
    members = {k: _json_value(v) for k, v in tags.items() if v is not None}
    if not members:
        return ""
    return json.dumps(members, separators=(",", ":"), allow_nan=False)[1:-1]


class _TensorMethod:
    """Target of a ``call_method`` node rewritten as ``call_function`` for the
    graph pass (which instruments call_function nodes): calls the method and
    names the event as pydftracer does (``method.view``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__name__ = name
        self._dftracer_event_name = f"method.{name}"

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(obj, self.name)(*args, **kwargs)


def _methods_as_functions(gm: torch.fx.GraphModule) -> None:
    for node in gm.graph.nodes:
        if node.op == "call_method":
            node.op, node.target = "call_function", _TensorMethod(node.target)


def _make_no_aot_backend(default_tags: Callable[[], int]) -> Callable:
    """pydftracer's ``compile(f, autograd=False)``: no AOT autograd. The graph
    pass runs on Dynamo's own (torch-level) graph, so events are named after
    torch functions and Tensor methods (``function.conv2d``,
    ``function.relu``, ``method.view``, ``function.linear``); the backward
    runs in eager autograd, outside the graph, untraced by this backend. Each
    graph is recorded with phase ``inference`` (no forward/backward pairing)
    and the caller's grad mode."""

    def dftracer_dynamo_backend_no_aot(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any):
        compile_events.ours()  # a dftracer backend: no "other backend" note
        if not tracing_enabled() or torch_compat.boxed_nop is None:
            return gm.forward
        try:
            _methods_as_functions(gm)
            with dynamo_nodes.module_scope(dynamo_modules.resolve_safely(gm)):
                info = dynamo_backend.instrument(gm, INFERENCE, dynamo_backend.new_graph_id())
            gm.recompile()
        except Exception as e:  # e.g. the C++ side's graph slots are used up
            dynamo_backend._warn_once("instrument", f"a graph compiled by Dynamo.compile(autograd=False) "
                                      f"runs uninstrumented: {e}")
            gm.recompile()
            return gm.forward
        run = dynamo_graph_call.wrap(info, torch_compat.boxed_nop(gm, example_inputs))

        def call_graph(*args: Any) -> Any:
            return run(list(args))

        return torch.compiler.disable(dynamo_graph_call.enter(call_graph, default_tags),
                                      reason="dftracer: instrumented Dynamo graph")

    return dftracer_dynamo_backend_no_aot


def _region_args(tags: dict) -> dict:
    """The tags as args of the object's own region events (``with dynamo:``,
    ``@dynamo``); a tag that cannot be written there is left out."""
    out = {}
    for k, v in tags.items():
        if v is None:
            continue
        try:
            out[k] = v if isinstance(v, (bool, int, float, str)) else str(v)
        except Exception:  # noqa: BLE001 - str() of a user object may raise anything
            continue
    return out


class Dynamo(DFTracerAI):
    """pydftracer's ``Dynamo``: a ``DFTracerAI`` node (cat ``dynamo``) that
    also compiles.

    As a node: ``with dynamo:``, ``@dynamo``, ``start()/stop()``,
    ``enable()/disable()``, ``reset()``, ``iter()``, ``derive()``, ``init``,
    ``cat``/``name`` -- events named ``name`` (default ``"dynamo"``), cat
    ``dynamo``, with the tags as args.

    As a compiler: ``compile`` (``torch.compile`` with our backend). Its
    ``name`` names the region events of functions it compiles (unless the
    default ``"dynamo"``, then ``dynamo.<function>``); ``epoch``, ``step``,
    ``image_idx``, ``image_size`` and any extra keyword are tags written into
    the args of every op event its compiled functions produce; ``update``
    changes them between calls. ``enable=False`` (or ``disable()``) makes
    ``compile`` return the function untouched.
    """

    def __init__(
        self,
        name: str | None = None,
        epoch: int | None = None,
        step: int | None = None,
        image_idx: int | None = None,
        image_size: Any = None,
        enable: bool = True,
        backend: str | None = None,
        **tags: Any,
    ) -> None:
        super().__init__(cat=CAT_DYNAMO, name=name or CAT_DYNAMO, enable=enable)
        # "aot_eager" (every ATen op) or "inductor" (every kernel); None: DFTRACER_COMPILE_BACKEND, else aot_eager
        self.compiler = backend_name(backend)
        self.tags: dict[str, Any] = dict(zip(TAG_KEYS, (epoch, step, image_idx, image_size)))
        self.tags.update(tags)
        region_args = _region_args(self.tags)
        if region_args:
            self._sticky(region_args)
        self._version = 0
        self._lock = threading.Lock()
        self._ids: dict[tuple, int] = {}  # (version, site tags) -> fragment id
        self._backend: Callable | None = None
        self._backend_no_aot: Callable | None = None
        self._inductor_backends: dict = {}

    # pydftracer exposes the tags as attributes too.
    @property
    def epoch(self):
        return self.tags.get("epoch")

    @property
    def step(self):
        return self.tags.get("step")

    @property
    def image_idx(self):
        return self.tags.get("image_idx")

    @property
    def image_size(self):
        return self.tags.get("image_size")

    def update(
        self,
        epoch: int | None = None,
        step: int | None = None,
        image_idx: int | None = None,
        image_size: Any = None,
        args: dict | None = None,
        **tags: Any,
    ) -> "Dynamo":
        """Sets the given tags (None leaves a tag as it was) for later calls,
        and as args of this node's own events (pydftracer's ``args=`` dict
        and keywords alike)."""
        current_step.note(step)  # collectives' `step` (collectives.py)
        given = dict(zip(TAG_KEYS, (epoch, step, image_idx, image_size)))
        given.update(args or {})
        given.update(tags)
        with self._lock:
            for k, v in given.items():
                if v is not None:
                    self.tags[k] = v
            self._version += 1
            self._ids.clear()  # fragments of old tag values are not needed again
        region_args = _region_args(given)
        if region_args and self._enable:
            self._sticky(region_args)
        for child in self._children.values():
            child.update(epoch=epoch, step=step, image_idx=image_idx, image_size=image_size, args=args)
        return self

    def tags_id(self, site: tuple = ()) -> int:
        """Interned fragment of this object's tags plus ``site`` ((key, value)
        pairs); 0 when there are none or tracing is off. Interned once per
        distinct set of tag values, never per op."""
        if not tracing_enabled():
            return 0
        key = (self._version, site)
        i = self._ids.get(key)
        if i is None:
            merged = dict(self.tags)
            merged.update(site)
            try:
                frag = _tags_fragment(merged)
                i = dynamo_backend._core.dynamo_intern_fragment(frag) if frag else 0
            except Exception as e:  # runs inside the compiled call: never raise into the training step
                dynamo_backend._warn_once("tags", f"Dynamo tags {sorted(map(str, merged))} cannot be written "
                                          f"({type(e).__name__}: {e}); "
                                          "calls with these tags are traced without them")
                i = 0
            with self._lock:
                if key[0] == self._version:
                    self._ids[key] = i
        return i

    @property
    def backend(self) -> Callable:
        """A torch.compile backend whose events carry this object's tags."""
        if self._backend is None:
            self._backend = make_backend(self.tags_id)
        return self._backend

    @property
    def backend_no_aot(self) -> Callable:
        """The backend of ``compile(..., autograd=False)``: Dynamo's graph, no AOT."""
        if self._backend_no_aot is None:
            self._backend_no_aot = _make_no_aot_backend(self.tags_id)
        return self._backend_no_aot

    def backend_for(self, compiler: str | None = None, mode: str | None = None,
                    options: dict | None = None) -> Callable:
        """The backend for ``compiler`` ("aot_eager" or "inductor"; None: this
        object's), Inductor's with ``mode`` / ``options``."""
        compiler = backend_name(compiler) if compiler is not None else self.compiler
        if compiler != "inductor":
            return self.backend
        key = (mode, repr(sorted((options or {}).items())))
        if key not in self._inductor_backends:
            self._inductor_backends[key] = make_inductor_backend(self.tags_id, mode, options)
        return self._inductor_backends[key]

    def compile(
        self,
        fn: Callable | None = None,
        autograd: bool = True,
        *,
        fullgraph: bool = False,
        dynamic: bool | None = None,
        name: str | None = None,
        backend: str | None = None,
        mode: str | None = None,
        options: dict | None = None,
        **tags: Any,
    ) -> Callable:
        """``torch.compile`` with our backend, plus a region event per call.

        ``backend="inductor"`` (or this object's ``backend``, or
        ``DFTRACER_COMPILE_BACKEND=inductor``) compiles with Inductor and
        traces its kernels; ``mode`` / ``options`` go to Inductor.

        Usable bare (``@d.compile``) or with arguments
        (``@d.compile(fullgraph=True, name="enc", stage="train")``); on a
        function, a method (e.g. a module's ``forward`` in the class body) or
        an ``nn.Module`` (its ``forward`` is replaced, the module returned).
        ``autograd=False`` (pydftracer's second parameter) compiles without
        AOT autograd: see ``backend_no_aot``.
        """
        if fn is None:
            return functools.partial(self.compile, autograd=autograd, fullgraph=fullgraph, dynamic=dynamic,
                                     name=name, backend=backend, mode=mode, options=options, **tags)
        if not self._enable:
            return fn
        if isinstance(fn, torch.nn.Module):
            dynamo_modules.add_root(fn)  # module paths are paths of fn's named_modules()
            fn.forward = self.compile(fn.forward, autograd, fullgraph=fullgraph, dynamic=dynamic, name=name,
                                      backend=backend, mode=mode, options=options, **tags)
            return fn
        if not callable(fn):
            raise TypeError(f"dynamo.compile: expected a function or nn.Module, got {type(fn).__name__}")
        dynamo_backend.warn_if_unavailable()

        chosen = self.backend_for(backend, mode, options) if autograd else self.backend_no_aot
        compiled = torch.compile(fn, backend=chosen, fullgraph=fullgraph, dynamic=dynamic)
        qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or "fn"
        region = name or (self.name if self.name != CAT_DYNAMO else f"dynamo.{qualname}")
        site = tuple(sorted(tags.items(), key=lambda kv: kv[0]))
        core = dynamo_backend._core
        enabled, intern, ticks = _api.enabled, _api.intern, _api.ticks  # api.cc's, shared with dft_fn
        ids: list[int] = []  # [name id, fragment id], interned at first traced call

        @functools.wraps(fn)
        def traced(*args: Any, **kwargs: Any) -> Any:
            if core is None or not enabled():
                return compiled(*args, **kwargs)
            if not ids:
                ids.append(intern(region))
                ids.append(core.dynamo_intern_fragment(json.dumps({"fn": qualname}, separators=(",", ":"))[1:-1]))
            prev = _active_tags.tags
            tags_id = self.tags_id(site)
            _active_tags.tags = tags_id
            grad = torch.is_grad_enabled()
            t0 = ticks()
            try:
                return compiled(*args, **kwargs)
            finally:
                core.dynamo_region_end(ids[0], t0, ids[1], grad, tags_id)
                _active_tags.tags = prev

        traced._dftracer_compiled = compiled  # the torch.compile'd function
        return traced

    def count_parameters(self, module: Any) -> int | None:
        """Number of parameters of ``module`` (pydftracer)."""
        if hasattr(module, "parameters"):
            return int(sum(p.numel() for p in module.parameters()))
        return None

    def __repr__(self) -> str:
        tags = {k: v for k, v in self.tags.items() if v is not None}
        return f"Dynamo(name={self.name!r}, enable={self._enable}, tags={tags})"


def create_backend(
    name: str = "dynamo",
    epoch: int | None = None,
    step: int | None = None,
    image_idx: int | None = None,
    image_size: Any = None,
    enable: bool = True,
    autograd: bool = True,
    **tags: Any,
) -> Callable:
    """pydftracer's factory: a torch.compile backend with these tags.
    ``enable=False`` gives plain ``aot_eager``; ``autograd=False`` the backend
    without AOT autograd (Dynamo's torch-level graph, as ``compile(f,
    autograd=False)``)."""
    if not enable:
        return torch_compat.aot_eager or "aot_eager"
    d = Dynamo(name, epoch, step, image_idx, image_size, enable, **tags)
    return d.backend if autograd else d.backend_no_aot


# The default instance (``@dynamo.compile``) and the plain backend; the
# backend's events carry the default instance's tags (``dynamo.update(...)``)
# unless a Dynamo.compile wrapper is active on the thread.
dynamo = Dynamo()
dftracer_dynamo_backend = dynamo.backend
dftracer_inductor_backend = dynamo.backend_for("inductor")
