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
- ``torch.compile(model)``'s wrapper is its model: paths are the model's;
- a module called with no module call open during a backward (activation
  checkpointing's recompute) has its path in the outermost root that holds
  it, as in the forward it recomputes.

The thread's outermost module call is also one event, ``nn.Module: <class>``
(phase forward, inference with grad off), holding the Python time between
its ops: its name goes with the call's first ``set_module``, which records
it (docs/torch.md, "What is recorded").

Paths are resolved by identity and cached per (module the caller runs in,
module called): a call pays two dict lookups, a tuple and one C call at
its start, one C call at its end. A root's ``named_modules()`` is read once
(again when a module called was registered under its caller after that). A
module no root holds is cached weakly per caller from its second call. No
cache keeps a module alive (a weak dict's value never holds its key).

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
# module called as a root during a backward -> (weakly) its ctx in the root that holds it
_in_model: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_ext = None
_intern = None
_set_module = None
_is_compiling = None
_graph_task_id = None


class _Root:
    """One root module's paths: module -> path, path -> _Ctx."""

    __slots__ = ("module", "paths", "by_path", "call_name")

    def __init__(self, module):
        self.module = weakref.ref(module)
        # The event of a call of it as the thread's outermost module call
        self.call_name = _intern("nn.Module: " + type(module).__name__)
        self.paths = None  # built on the first lookup of a child
        self.by_path = {}

    def path_of(self, m):
        if self.paths is None:
            self.rebuild()
        path = self.paths.get(m)
        if path is None and m is self.module():
            return ""
        return path

    def rebuild(self):
        # Not the root itself: this is reached from _roots' value for the
        # root, and a weak dict's value holding its key keeps it alive.
        root = self.module()
        self.paths = {} if root is None else {mod: path for path, mod in root.named_modules() if mod is not root}

    def ctx(self, path):
        c = self.by_path.get(path)
        if c is None:
            c = self.by_path[path] = _Ctx(self, path)
        return c


class _Ctx:
    """One module path under one root: its interned id, and the ctx of each
    module called while it is the innermost (the (caller, callee) cache)."""

    __slots__ = ("root", "id", "kids", "strays", "__weakref__")

    def __init__(self, root, path):
        self.root = root
        self.id = _intern(path)
        self.kids = {}
        # Modules called in it that no open call's root holds (held outside
        # the model, reused): weakly, as nothing here may keep them alive.
        self.strays = None


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


def _recompute_ctx(module):
    """The ctx of `module` called with no module call open during a backward
    (activation checkpointing's recompute, a hook calling a module): its path
    in the outermost root that holds it, as its forward named it; a root of
    its own when no root holds it."""
    ref = _in_model.get(module)
    c = ref() if ref is not None else None
    if c is not None:
        return c
    best, best_path = None, ""
    for root in {id(r.root): r.root for r in list(_roots.values())}.values():
        path = root.path_of(module)
        if path and len(path) > len(best_path):  # deeper in it: an outer root
            best, best_path = root, path
    if best is None:
        return _root_ctx(module)
    c = best.ctx(best_path)
    try:
        _in_model[module] = weakref.ref(c)  # weakly: the root's paths hold `module`
    except TypeError:
        pass
    return c


def _compiled_model(module):
    # The OptimizedModule registers its model as "_orig_mod"; getattr of a
    # missing name would raise inside nn.Module.__getattr__ (microseconds).
    try:
        if "_orig_mod" not in module._modules:
            return None
    except Exception:  # noqa: BLE001
        return None
    from .. import torch_compat

    return torch_compat.compiled_module_of(module)


def _resolve(stack, module):
    """The ctx of `module` called with `stack` open (outermost first)."""
    top = stack[-1][1]
    if top.strays is not None:
        c = top.strays.get(module)
        if c is not None and not _registered_under(stack[-1][0], module):
            return c
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
            if path:  # a root called inside itself is not cached: its own ctx would hold it
                top.kids[module] = found  # held by a module the cache's owner is under: no leak
            return found
    c = _roots.get(module)
    if c is None:
        return _root_ctx(module)  # first call (a module made in this forward, maybe): not cached here
    try:
        if top.strays is None:
            top.strays = weakref.WeakKeyDictionary()
        top.strays[module] = c  # called again: a module kept outside the model
    except TypeError:
        pass
    return c


def _registered_under(parent, module):
    try:
        return module in parent._modules.values()  # identity: Module keeps object's __eq__
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
        elif _graph_task_id() == -1:
            c = _root_ctx(module)
            stack.append((module, c))
            _set_module(c.id, 1, c.root.call_name)  # the thread's outermost call: one event
            return None
        else:
            c = _recompute_ctx(module)
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
    global _handles, _ext, _intern, _set_module, _is_compiling, _graph_task_id
    if _handles is not None:
        return
    import torch
    from torch.nn.modules import module as nn_module

    _ext, _intern, _set_module = ext, ext.intern, ext.set_module
    _is_compiling = torch.compiler.is_compiling
    # -1 outside a backward (the engine's current graph task, on any of its threads)
    _graph_task_id = getattr(torch._C, "_current_graph_task_id", lambda: -1)
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
