"""Module paths per call: one compiled graph, several instances of a module class.

Dynamo compiles a module's ``forward`` frame once per class, not per
instance: when a child module's frame is compiled on its own (a graph break
in a child called from its parent's loop, ``for m in self.model: x = m(x)``),
the second and later instances of that class run the graph compiled for the
first, and the module paths resolved at compile time (dynamo_modules) are
the first instance's. The graph's inputs tell the instances apart: the
frame's module's parameters and buffers are graph inputs (Dynamo inlines
built-in modules and lifts their tensors).

``find(paths, example_inputs)`` (at the Dynamo graph, compile time) picks
the first graph input that is a parameter or buffer of the frame's own
module and notes its name under that module (``conv.weight``). Each ATen
graph (forward, inference; a backward whose inputs keep that tensor as a
saved primal) reads it at the same input; ``InstanceSlots.pick(args)``, per
call, looks the tensor's data address up among the instances seen: a call for the
compile-time instance uses the graph's own table, a call for another instance
uses a variant of it (registered at its first call) whose module paths under
the frame's module are that instance's path, found by the tensor's name in
the compiled model (``model.2.conv.weight`` -> ``model.2``). A call at seen
sizes for a seen instance costs one input read, one ``data_ptr()`` and one
dict lookup (a Python call more than a graph of one instance). A frame
module with no tensors of its own, or a backward graph that receives none of
them (Inductor on CPU saves a convolution's weight as a channels-last copy),
keeps the compile-time instance's paths.

Only graphs of a frame whose own module is a submodule of the compiled
model (its path is not "") get per-call instances: the root module's frame
has the same paths for every instance.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx

from .dynamo_hooks import BACKWARD, INFERENCE


@dataclass
class InstanceInput:
    """Which Dynamo graph input names the instance of the frame's module."""

    index: int  # position among the Dynamo graph's inputs
    name: str  # the tensor's name under the frame's module (``conv.weight``)
    own_path: str  # the compile-time instance's path in the compiled model
    shape: tuple  # for checking the ATen graph's input at that position
    roots: list  # weakrefs to the modules whose named tensors are searched
    tensor: Any  # weakref to the compile-time instance's tensor


def find(paths: Any, example_inputs: list) -> InstanceInput | None:
    """The graph input that identifies the frame module's instance, or None
    (no frame module below the root, or none of its tensors is an input)."""
    if paths is None or not paths.frame or paths.own is None:
        return None
    own = paths.own()
    if own is None:
        return None
    names = {id(t): n for n, t in itertools.chain(own.named_parameters(remove_duplicate=False),
                                                  own.named_buffers(remove_duplicate=False))}
    for i, x in enumerate(example_inputs):
        n = names.get(id(x)) if isinstance(x, torch.Tensor) else None
        if n is not None:
            return InstanceInput(i, n, paths.frame, tuple(x.shape), list(paths.roots), weakref.ref(x))
    return None


def current() -> InstanceInput | None:
    """The InstanceInput of the Dynamo graph whose ATen graphs are being
    compiled on this thread (dynamo_nodes.module_scope), or None."""
    from . import dynamo_nodes

    scope = dynamo_nodes._module_scope.paths
    return getattr(scope, "instance", None)


def aten_input_index(gm: torch.fx.GraphModule, phase: int, key: InstanceInput) -> int:
    """Position of the instance's tensor among an ATen graph's inputs: AOT
    names a forward's (and a backward's saved) primal ``primals_<i+1>``, an
    inference graph's input ``arg<i>_1``; -1 when the graph does not take it."""
    want = f"arg{key.index}_1" if phase == INFERENCE else f"primals_{key.index + 1}"
    for j, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        if n.name == want:
            v = n.meta.get("val")
            shape = tuple(v.shape) if isinstance(v, torch.Tensor) else None
            try:
                same = shape is not None and len(shape) == len(key.shape) and all(
                    int(a) == int(b) for a, b in zip(shape, key.shape))
            except Exception:  # a symbolic size: trust the name
                same = shape is not None and len(shape) == len(key.shape)
            return j if same else -1
    return -1


def renamer(old: str, new: str) -> Callable[[Any], Any]:
    """Maps a module path under `old` to the same path under `new`."""

    def rename(path: Any) -> Any:
        if isinstance(path, str) and (path == old or path.startswith(old + ".")):
            return new + path[len(old):]
        return path

    return rename


class InstanceSlots:
    """Per call: the slot of the table of the instance this call runs for.

    Instances are told apart by the address of their tensor's data: a
    backward graph receives its saved primal as an alias of the parameter
    under Inductor (another tensor object, the same data)."""

    def __init__(self, key: InstanceInput, index: int, first: torch.Tensor, base: Callable[[list], int],
                 variant: Callable[[Callable[[Any], Any]], Callable[[list], int]]):
        """`first`: the compile-time instance's tensor; `base(args)`: the
        graph's own slot (at the call's sizes); `variant(rename)`: registers
        the tables of an instance whose paths are `rename`d, returns its
        `pick(args)`."""
        self.key = key
        self.index = index
        self._variant = variant
        self._base = base
        self._lock = threading.Lock()
        self.pickers: dict = {}
        self._add(first, base)

    def _add(self, t: torch.Tensor, picker: Callable[[list], int]) -> None:
        ptr = t.data_ptr()
        self.pickers[ptr] = picker
        weakref.finalize(t, _drop, weakref.ref(self), ptr).atexit = False

    def pick(self, args: list) -> int:
        t = args[self.index]
        try:
            p = self.pickers.get(t.data_ptr())
        except Exception:  # not a plain tensor: the graph's own paths
            p = self._base
        return p(args) if p is not None else self._new(t, args)

    def _new(self, t: Any, args: list) -> int:
        with self._lock:
            p = self.pickers.get(t.data_ptr())
            if p is None:
                found = self._owner_of(t)
                if found is None:  # not a tensor of the compiled model: the graph's own paths
                    p = self._base
                    self._add(t, p)  # while `t` lives: the search is not paid again
                else:
                    path, tensor = found
                    p = self._variant(renamer(self.key.own_path, path))
                    self._add(tensor, p)
        return p(args)

    def _owner_of(self, t: Any) -> tuple | None:
        """(the instance's path, its tensor): the module whose tensor holds
        `t`'s data, named in a root of the compiled model."""
        if not isinstance(t, torch.Tensor):
            return None
        ptr, shape, suffix = t.data_ptr(), t.shape, "." + self.key.name
        for ref in self.key.roots:
            root = ref()
            if root is None:
                continue
            for n, x in itertools.chain(root.named_parameters(remove_duplicate=False),
                                        root.named_buffers(remove_duplicate=False)):
                if x.data_ptr() == ptr and x.shape == shape:
                    if n == self.key.name:
                        return "", x
                    if n.endswith(suffix):
                        return n[:-len(suffix)], x
        return None


def _drop(ref: Any, key: int) -> None:
    owner = ref()
    if owner is not None:
        owner.pickers.pop(key, None)


def make_instances(info: Any, gm: torch.fx.GraphModule, phase: int, key: InstanceInput | None,
                   fragments: Callable[[Callable[[Any], Any], dict | None], list],
                   register: Callable[[list, int], int]) -> None:
    """Gives `info` (a registered graph) per-instance tables when `key` says
    which of its inputs names the instance. `fragments(rename, env)`: its
    entries' fragments with paths renamed, at sizes env (None: the
    compile-time ones); `register(fragments, pair_slot)` registers a table."""
    from . import dynamo_sizes
    from .dynamo_graphs import free_with
    from .dynamo_hooks import FORWARD

    first = key.tensor() if key is not None else None
    if first is None:
        return
    index = aten_input_index(gm, phase, key)
    if index < 0:
        return
    pair = info.slot if phase == FORWARD else (info.forward.slot if info.forward is not None else -1)
    if phase == BACKWARD and pair < 0:
        return
    base_sized = info.sized
    base = base_sized.pick if base_sized is not None else (lambda args, s=info.slot: s)
    ref = weakref.ref(info)  # info owns what is built here: no cycle back to it

    def free(slot: int) -> None:
        owner = ref()
        if owner is not None:
            free_with(owner, slot)

    def variant(rename: Callable[[Any], Any]) -> Callable[[list], int]:
        slot = register(fragments(rename, None), pair)
        free(slot)
        if base_sized is None:
            return lambda args: slot
        sized = dynamo_sizes.SizedSlots(base_sized.sizes, slot,
                                        lambda env: register(fragments(rename, env), pair), free)
        return sized.pick

    info.instances = InstanceSlots(key, index, first, base, variant)
