"""Module paths of op events, resolved against the module the user compiled.

Dynamo writes each node's module stack (``node.meta["nn_module_stack"]``)
as {key: (source, class)}. The source is relative to the frame Dynamo
compiled -- ``L['self'].layers[0]``, ``L['args'][0].model`` when ``forward``
was reached through a ``*args`` wrapper, ``L['s'].conv`` in a child module's
frame compiled on its own after a graph break -- so it is no path of the
user's model. The key is ``str(id(module))`` (``@n`` added for the module's
later calls in the frame), so a path is resolved by identity: the module's
path in a root module's ``named_modules()``. The roots, in order:

  1. the module compiled by the innermost ``torch.compile(module)`` whose
     call is on the Python stack (its OptimizedModule's ``_orig_mod``);
  2. modules given to ``Dynamo.compile`` (``dynamo.compile(model)``);
  3. the modules being called on the Python stack (the ``self`` of
     ``Module.__call__``'s frames) and the modules among the compiled
     frame's arguments, outermost first.

The first root whose ``named_modules()`` holds the module gives its path. A
key no root holds keeps Dynamo's source, cleaned
(``dynamo_nodes.clean_module_path``). Nodes of the compiled frame outside
any submodule get the frame's own module's path (a child frame compiled on
its own: ``model.1``; the root's own ``forward``: "").

Runs once per Dynamo graph, at compile time (a stack walk and one
``named_modules()`` per root it needs); the AOT compilers, the lazy backward
compile included, read the result through ``dynamo_nodes.module_scope``.
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from .. import torch_compat

_explicit: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()
_CALL_CODES = {torch.nn.Module._wrapped_call_impl.__code__, torch.nn.Module._call_impl.__code__}


@dataclass
class ModulePaths:
    """What the graph pass needs to name the modules of one Dynamo graph."""

    paths: dict = field(default_factory=dict)  # nn_module_stack key -> path in the root
    frame: str | None = None  # path of the compiled frame's own module ("" for the root)
    optimizer: bool = False  # the compiled frame is a method of a torch.optim.Optimizer (opt.step)
    own: Any = None  # weakref to the compiled frame's own module (its `self`), None when none
    roots: list = field(default_factory=list)  # weakrefs to the roots searched, in order
    # Set by the backend (dynamo_instances.find): which graph input tells
    # which instance of the frame's module class a call runs for.
    instance: Any = None


def add_root(module: torch.nn.Module) -> None:
    """Makes `module` a root for module paths (Dynamo.compile on a module)."""
    try:
        _explicit.add(module)
    except TypeError:  # not weak-referenceable: it is still found on the stack
        pass


def _module_id(key: str) -> int | None:
    head = str(key).split("@", 1)[0]
    return int(head) if head.isdigit() else None


def _called_modules() -> list:
    """Modules whose ``__call__`` is on the Python stack, innermost first."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        if f.f_code in _CALL_CODES:
            m = f.f_locals.get("self")
            if isinstance(m, torch.nn.Module) and (not out or out[-1] is not m):
                out.append(m)
        f = f.f_back
    return out


def _frame_modules(local_vars: dict) -> list:
    """Modules among the compiled frame's locals (``self``, ``*args`` elements)."""
    out = []
    for v in local_vars.values():
        for x in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(x, torch.nn.Module):
                out.append(x)
    return out


def _frame_self(local_vars: dict, code_first_arg: str | None) -> Any:
    v = local_vars.get(code_first_arg) if code_first_arg else None
    if isinstance(v, torch.nn.Module):
        return v
    v = local_vars.get("self")
    return v if isinstance(v, torch.nn.Module) else None


def compiled_model() -> Any:
    """The model whose call is compiling now: the module of the innermost
    ``torch.compile(module)`` on the Python stack, else the innermost module
    given to ``Dynamo.compile`` there; None for a compiled function."""
    called = _called_modules()
    for m in called:
        orig = torch_compat.compiled_module_of(m)
        if orig is not None:
            return orig
    for m in called:
        if m in _explicit:
            return m
    return None


def roots() -> list:
    """The candidate roots of the graph Dynamo is compiling now, in order."""
    called = _called_modules()
    first: list = []
    for m in called:  # innermost torch.compile(module) first
        orig = torch_compat.compiled_module_of(m)
        if orig is not None:
            first.append(orig)
            break
    local_vars = torch_compat.frame_locals()
    rest = list(reversed(called)) + _frame_modules(local_vars)
    out, seen = [], set()
    for m in first + list(_explicit) + rest:
        if id(m) not in seen and torch_compat.compiled_module_of(m) is None:
            seen.add(id(m))
            out.append(m)
    return out


def resolve(gm: torch.fx.GraphModule) -> ModulePaths:
    """Paths of the modules in `gm`'s module stacks, by identity (see the
    module doc); keys it cannot resolve are left out."""
    ids: dict[int, list] = {}
    for n in gm.graph.nodes:
        for key in (n.meta.get("nn_module_stack") or {}):
            i = _module_id(key)
            if i is not None:
                ids.setdefault(i, []).append(key)
    local_vars = torch_compat.frame_locals()
    code = torch_compat.root_frame_code()  # a resume function's original function
    first_arg = code.co_varnames[0] if code is not None and code.co_argcount else None
    out = ModulePaths()
    if first_arg is not None and isinstance(local_vars.get(first_arg), torch.optim.Optimizer):
        out.optimizer = True
    own = _frame_self(local_vars, first_arg)
    if own is not None:
        ids.setdefault(id(own), [])
    if not ids:
        return out
    found: dict[int, str] = {}
    for root in roots():
        out.roots.append(_weak(root))
        for path, m in root.named_modules():
            if id(m) in ids and id(m) not in found:
                found[id(m)] = path
        if len(found) == len(ids):
            break
    for i, keys in ids.items():
        if i in found:
            for k in keys:
                out.paths[k] = found[i]
    if own is not None:
        out.frame = found.get(id(own))
        out.own = _weak(own)
    return out


def _weak(m: Any) -> Any:
    try:
        return weakref.ref(m)
    except TypeError:
        return lambda: m


def resolve_safely(gm: torch.fx.GraphModule) -> ModulePaths | None:
    """resolve(gm), or None (Dynamo's sources, cleaned) if it fails: module
    paths must never fail a compile."""
    try:
        return resolve(gm)
    except Exception as e:  # noqa: BLE001
        torch_compat.degraded("module paths by identity (dynamo_modules.resolve)", e,
                              "module paths are Dynamo's sources, relative to the compiled frame")
        return None
