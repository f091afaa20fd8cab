"""Module attribution of eager ops: which ``nn.Module`` each eager ATen op ran in.

torch's global module hooks (``register_module_forward_pre_hook`` and
``register_module_forward_hook(..., always_call=True)``, so a forward that
raises still closes its call) keep a per-thread stack of the module calls
open on the thread, and hand the innermost one's path to the observer
(``_eager.set_module(id, depth)``), which writes it on each op as
``args.module`` -- the same arg, with the same paths, as the compiled graphs'
op events (docs/capture.md, "Module paths"):

- a path is the module's path in the ``named_modules()`` of the first module
  on the thread's call stack (outermost first) that holds it: the outermost
  module being called is ``""`` (shown as ``(root)``), ``transformer.h.0.attn``
  under it; a module no module on the stack holds (one called directly from
  the program, another model called inside a forward, a module made inside a
  forward) is a root itself (``""``); a module registered under two names (a
  shared module) has its first name, as ``named_modules()`` gives it;
- ``torch.compile(model)``'s wrapper is its model: paths are the model's.

Paths are resolved by identity and cached per (module the caller runs in,
module called): a call pays two dict lookups, a tuple and one C call at
its start, one C call at its end. A root's ``named_modules()`` is read once
(again when a module called was registered under its caller after that).

Inside code Dynamo compiles the hooks do nothing (``torch.compiler.is_compiling()``
is a constant there, so they add no graph break nor guard on dftracer's
state): compiled graphs' ops carry their own module.
"""
from __future__ import annotations

import threading
import warnings
import weakref

__all__ = ["install", "uninstall", "installed"]

_tls = threading.local()
_handles = None
_roots: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # root module -> its "" _Ctx
_ext = None
_intern = None
_set_module = None
_is_compiling = None


class _Root:
    """One root module's paths: module -> path, path -> _Ctx."""

    __slots__ = ("module", "paths", "by_path")

    def __init__(self, module):
        self.module = weakref.ref(module)
        self.paths = None  # built on the first lookup of a child
        self.by_path = {}

    def path_of(self, m):
        if self.paths is None:
            self.rebuild()
        return self.paths.get(m)

    def rebuild(self):
        root = self.module()
        self.paths = {} if root is None else {mod: path for path, mod in root.named_modules()}

    def ctx(self, path):
        c = self.by_path.get(path)
        if c is None:
            c = self.by_path[path] = _Ctx(self, path)
        return c


class _Ctx:
    """One module path under one root: its interned id, and the ctx of each
    module called while it is the innermost (the (caller, callee) cache)."""

    __slots__ = ("root", "id", "kids")

    def __init__(self, root, path):
        self.root = root
        self.id = _intern(path)
        self.kids = {}


def _root_ctx(module):
    c = _roots.get(module)
    if c is None:
        model = _compiled_model(module)
        if model is not None and model is not module:
            c = _root_ctx(model)
        else:
            c = _Root(module).ctx("")
        try:
            _roots[module] = c
        except TypeError:  # not weak-referenceable: resolved again on each call
            pass
    return c


def _compiled_model(module):
    orig = getattr(module, "_orig_mod", None)
    if orig is None:
        return None
    from .. import torch_compat

    return torch_compat.compiled_module_of(module)


def _resolve(stack, module):
    """The ctx of `module` called with `stack` open (outermost first)."""
    top = stack[-1][1]
    seen = set()
    for _, c in stack:
        root = c.root
        if id(root) in seen:
            continue
        seen.add(id(root))
        path = root.path_of(module)
        if path is None and _registered_under(stack[-1][0], module):
            root.rebuild()  # registered after the root's paths were read
            path = root.path_of(module)
        if path is not None:
            found = root.ctx(path)
            top.kids[module] = found  # held by a module the cache's owner is under: no leak
            return found
    return _root_ctx(module)


def _registered_under(parent, module):
    try:
        return any(child is module for child in parent._modules.values())
    except Exception:  # noqa: BLE001
        return False


def _pre_hook(module, args):
    if _is_compiling():
        return None
    try:
        try:
            stack = _tls.stack
        except AttributeError:
            stack = _tls.stack = []
        if stack:
            c = stack[-1][1].kids.get(module)
            if c is None:
                c = _resolve(stack, module)
        else:
            c = _root_ctx(module)
        stack.append((module, c))
        _set_module(c.id, len(stack))
    except Exception:  # noqa: BLE001  (tracing never breaks the traced program)
        pass
    return None


def _post_hook(module, args, output):
    if _is_compiling():
        return None
    try:
        stack = _tls.stack
        if stack[-1][0] is not module:
            # An unbalanced end: a pre-hook registered before ours raised (ours
            # did not run), or a BaseException skipped inner ends. Close this
            # call and any left open inside it; an end with no start is ignored.
            for i in range(len(stack) - 2, -1, -1):
                if stack[i][0] is module:
                    del stack[i + 1:]
                    break
            else:
                return None
        stack.pop()
        _set_module(stack[-1][1].id if stack else 0, len(stack))
    except Exception:  # noqa: BLE001
        pass
    return None


def install(ext) -> None:
    """Registers the global module hooks (idempotent)."""
    global _handles, _ext, _intern, _set_module, _is_compiling
    if _handles is not None:
        return
    import torch
    from torch.nn.modules import module as nn_module

    _ext, _intern, _set_module = ext, ext.intern, ext.set_module
    _is_compiling = torch.compiler.is_compiling
    # torch warns on every torch.compile(module) call while any global module
    # hook is registered (its wrapper's hooks fire too); ours map the wrapper
    # to its model, so the warning would be noise the traced program did not have.
    warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks",
                            category=UserWarning)
    _handles = (nn_module.register_module_forward_pre_hook(_pre_hook),
                nn_module.register_module_forward_hook(_post_hook, always_call=True))


def uninstall() -> None:
    """Removes the hooks; module calls open now carry no module from here on."""
    global _handles, _tls
    if _handles is None:
        return
    for h in _handles:
        h.remove()
    _handles = None
    _tls = threading.local()  # every thread's stack starts empty at the next install
    if _ext is not None:
        _ext.set_module(0, 0)  # this thread's; another thread's is reset by its next module call


def installed() -> bool:
    return _handles is not None
