"""Static node table of an ATen graph, built once per graph at compile time.

For every op node (every ``call_function`` node) of an AOT-autograd graph this
module works out what the trace should say about it -- event name, module
path, source line, input shapes and dtypes, FLOPs, bytes moved, autograd
``seq_nr`` -- and formats it ONCE into a JSON-members fragment
(``"phase":"forward","graph":3,"node":17,"module":"encoder.layer.0",...``).
The fragment is interned by the core; at run time a hook passes only the node
index and the writer thread pastes the fragment into the event's ``args``.

FLOPs come from PyTorch's own formulas (``torch.utils.flop_counter``'s
``flop_registry``, the table ``FlopCounterMode`` uses), evaluated on the
fake tensors in ``node.meta["val"]``. The only additions are the CPU variants
of scaled-dot-product attention, which ``FlopCounterMode`` does not list
(it counts 0 for attention on CPU): they take the same arguments as the
flash-attention entries, so they get the same registered formulas.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
import re
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import torch
from torch.utils import flop_counter
from torch.utils._pytree import tree_flatten, tree_map

from . import dynamo_sizes
from ..torch_compat import HigherOrderOperator, OpOverload, size_hint

aten = torch.ops.aten

PHASES = ("forward", "backward", "inference")


def _extra_flop_formulas() -> dict:
    """Shape formulas (unwrapped, as FlopCounterMode's ``custom_mapping`` takes them)
    for ops missing from ``flop_registry`` that share a registered formula."""
    extra = {}
    pairs = (
        ("_scaled_dot_product_flash_attention_for_cpu", "sdpa_flop"),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", "sdpa_backward_flop"),
    )
    for op_name, formula_name in pairs:
        op = getattr(aten, op_name, None)
        formula = getattr(flop_counter, formula_name, None)
        if op is not None and formula is not None:
            # The module attribute is the registered (shape-wrapped) formula;
            # custom_mapping wants the shape formula underneath.
            extra[op] = getattr(formula, "__wrapped__", formula)
    return extra


# Public so tests (and users) can give FlopCounterMode the same table:
# FlopCounterMode(custom_mapping=EXTRA_FLOP_FORMULAS).
EXTRA_FLOP_FORMULAS = _extra_flop_formulas()
_FLOP_FORMULAS: dict = dict(flop_counter.flop_registry)
_FLOP_FORMULAS.update({k: flop_counter.shape_wrapper(v) for k, v in EXTRA_FLOP_FORMULAS.items()})


def _hint(x: Any) -> Any:
    """Concrete value of a SymInt (its compile-time hint); other values as is."""
    if isinstance(x, torch.SymInt):
        return size_hint(x)
    return x


def _hinted(t: Any) -> Any:
    """A tensor with concrete sizes for the flop formulas: fake tensors with
    symbolic sizes become meta tensors of the hinted sizes."""
    if isinstance(t, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in t.shape):
        return torch.empty([_hint(s) for s in t.shape], dtype=t.dtype, device="meta")
    return t


def _dim(s: Any) -> Any:
    if isinstance(s, torch.SymInt):
        expr = s.node.maybe_as_int()
        return expr if expr is not None else str(s)
    return int(s)


def op_event_name(target: Any) -> str:
    """pydftracer's event name: ``function.<op overload>`` (``function.convolution.default``,
    ``function.getitem``); ops outside ``aten`` keep their namespace."""
    named = getattr(target, "_dftracer_event_name", None)
    if named:  # a Tensor-method node of Dynamo.compile(autograd=False): "method.view"
        return named
    if target is operator.getitem:
        return "function.getitem"
    if isinstance(target, OpOverload):
        if target.namespace == "aten":
            return "function." + target.__name__
        return f"function.{target.namespace}.{target.__name__}"
    if isinstance(target, HigherOrderOperator):
        return "function." + target.name()
    name = getattr(target, "__name__", None) or type(target).__name__
    return "function." + name


_ROOT_RE = re.compile(r"^[LG]\[['\"]([^'\"]*)['\"]\]")
_MODULES_RE = re.compile(r"\._modules\[['\"]([^'\"]*)['\"]\]")
_INDEX_RE = re.compile(r"\[['\"]?([^\]'\"]*)['\"]?\]")
_GETATTR_RE = re.compile(r"getattr\(([^(),]*), ['\"]([^'\"]*)['\"]\)")


_WRAPPER_ARG_RE = re.compile(r"^[LG]\[['\"](?:args|kwargs)['\"]\]\[[^\]]*\]")


def clean_module_path(fqn: str) -> str:
    """Dynamo's module source (``L['self'].encoder.layer[0].attention``) as a
    plain dotted path (``encoder.layer.0.attention``). A root other than
    ``self`` keeps its name (``L['model'].fc`` -> ``model.fc``); a ``*args``
    wrapper's module argument is the root (``L['args'][0].model`` ->
    ``model``). Used only where a module cannot be found by identity
    (dynamo_modules)."""
    s = _WRAPPER_ARG_RE.sub("L['self']", fqn)
    for _ in range(8):  # nested getattr(getattr(...), '0')
        s2 = _GETATTR_RE.sub(r"\1.\2", s)
        if s2 == s:
            break
        s = s2
    s = _MODULES_RE.sub(r".\1", s)
    m = _ROOT_RE.match(s)
    if m:
        root = m.group(1)
        rest = s[m.end():]
        s = rest if root == "self" else root + rest
    s = _INDEX_RE.sub(r".\1", s)
    return s.lstrip(".")


class _ModuleScope(threading.local):
    """The module paths of the Dynamo graph whose ATen graphs are being
    described on this thread (dynamo_modules.resolve); None: none known."""

    paths = None


_module_scope = _ModuleScope()


@contextlib.contextmanager
def module_scope(paths: Any) -> Iterator[None]:
    """Describes nodes with `paths` (a dynamo_modules.ModulePaths) in force."""
    prev, _module_scope.paths = _module_scope.paths, paths
    try:
        yield
    finally:
        _module_scope.paths = prev


def module_path(meta: dict) -> str | None:
    """Innermost nn.Module path of a node, or None when it has no module stack.
    Backward nodes carry their forward node's stack as ``fwd_nn_module_stack``.
    The path is the module's path in the compiled model (dynamo_modules)
    when known, else Dynamo's source for it, cleaned."""
    stack = meta.get("nn_module_stack") or meta.get("fwd_nn_module_stack")
    if not stack:
        return None
    key, fqn = list(stack.items())[-1]
    scope = _module_scope.paths
    if scope is not None:
        path = scope.paths.get(key)
        if path is not None:
            return path
    if isinstance(fqn, tuple):
        fqn = fqn[0]
    return clean_module_path(str(fqn))


_OPTIM_DIR = os.sep + os.path.join("torch", "optim") + os.sep


def optimizer_frame() -> bool:
    """True while describing the graphs of a frame that is an optimizer's
    method (``torch.compile(opt.step)``)."""
    scope = _module_scope.paths
    return scope is not None and scope.optimizer


def is_optimizer_node(meta: dict) -> bool:
    """True for a node of an optimizer step: the compiled frame is an
    optimizer's method (``torch.compile(opt.step)``), or the node's innermost
    source frame is torch.optim's code (``_single_tensor_adam``,
    ``_multi_tensor_adamw``, ... inlined into a larger compiled region)."""
    if optimizer_frame():
        return True
    frames = _FRAME_RE.findall(meta.get("stack_trace") or "")
    return bool(frames) and _OPTIM_DIR in frames[-1][0]


def frame_module_path() -> str | None:
    """Path of the compiled frame's own module: the module of nodes outside
    any submodule (a child frame compiled on its own after a graph break)."""
    scope = _module_scope.paths
    return scope.frame if scope is not None else None


_FRAME_RE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def source_line(meta: dict) -> str:
    """``file.py:line`` of the innermost user frame of the node's stack trace."""
    st = meta.get("stack_trace")
    if not st:
        return ""
    frames = _FRAME_RE.findall(st)
    if not frames:
        return ""
    path, line, _fn = frames[-1]
    return f"{os.path.basename(path)}:{line}"


def _val(a: Any) -> Any:
    return a.meta.get("val") if isinstance(a, torch.fx.Node) else a


def _tensor_bytes(t: torch.Tensor) -> int:
    n = 1
    for s in t.shape:
        n *= int(_hint(s))
    return n * t.element_size()


def _is_view(target: Any) -> bool:
    """True for ops whose outputs alias an input without writing (view, t,
    expand, getitem, ...): they move no data."""
    if target is operator.getitem:
        return True
    if not isinstance(target, OpOverload):
        return False
    rets = target._schema.returns
    return bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)


def node_flops(target: Any, args: tuple, kwargs: dict, out: Any) -> int:
    """FLOPs of one op by torch.utils.flop_counter's registered formula; 0 when
    it has none (elementwise ops: FlopCounterMode counts them as 0 too)."""
    if not isinstance(target, OpOverload):
        return 0
    formula = _FLOP_FORMULAS.get(target.overloadpacket)
    if formula is None:
        return 0
    try:
        args, kwargs, out = tree_map(_hinted, (args, kwargs, out))
        return int(_hint(formula(*args, **kwargs, out_val=out)))
    except Exception:  # a formula that cannot read these args: count nothing, never fail compile
        return 0


@dataclass
class OpEntry:
    index: int
    name: str
    module: str | None
    source: str
    shapes: list
    dtype: str
    flops: int
    bytes: int
    seq_nr: int
    optimizer: bool = False  # an optimizer step's node: phase "optimizer" in the trace
    # Dynamic sizes: (flops, bytes, shapes) as expressions in the graph's
    # input-named size symbols (dynamo_sizes); None when all are static.
    sym: tuple | None = None
    # Planned memory (dynamo_liveness.NodePlan) of a capture-backend node; None: not planned.
    planned: Any = None

    def at(self, env: dict) -> "OpEntry":
        """This entry at the sizes `env` (input-named symbol -> value)."""
        if self.sym is None:
            return self
        flops, nbytes, shapes = self.sym
        return replace(self, flops=dynamo_sizes.evaluate(flops, env, self.flops),
                       bytes=dynamo_sizes.evaluate(nbytes, env, self.bytes),
                       shapes=[[dynamo_sizes.evaluate(d, env, d0) for d, d0 in zip(sh, sh0)]
                               for sh, sh0 in zip(shapes, self.shapes)])

    def fragment(self, phase: str, graph: int) -> str:
        """The node's static args as JSON members, the order the trace shows."""
        members = {
            "phase": "optimizer" if self.optimizer else phase,
            "graph": graph,
            "node": self.index,
            "module": self.module or "",
            "source": self.source,
            "shapes": self.shapes,
            "dtype": self.dtype,
            "flops": self.flops,
            "bytes": self.bytes,
            "seq_nr": self.seq_nr,
        }
        if self.planned is not None:
            members.update(self.planned.members())
        return json.dumps(members, separators=(",", ":"))[1:-1]


def _symbolic(node: torch.fx.Node, args: Any, kwargs: Any, out: Any, in_tensors: list, out_tensors: list,
              sizes: "dynamo_sizes.GraphSizes") -> tuple | None:
    """(flops, bytes, shapes) of a node in the graph's input-named size
    symbols, or None when none depends on a size symbol."""
    shapes = [[sizes.expr(s) for s in t.shape] for t in in_tensors]
    flops = 0
    with sizes.guarded():
        formula = _FLOP_FORMULAS.get(node.target.overloadpacket) if isinstance(node.target, OpOverload) else None
        if formula is not None:
            try:
                flops = sizes.expr(formula(*args, **kwargs, out_val=out))
            except Exception:
                flops = 0
        nbytes = 0
        if not _is_view(node.target):
            for t in in_tensors + out_tensors:
                nbytes = nbytes + sizes.expr(t.numel()) * t.element_size()
    nbytes = sizes.expr(nbytes)
    if all(isinstance(v, int) for v in [flops, nbytes] + [d for sh in shapes for d in sh]):
        return None
    return flops, nbytes, shapes


def gradient_acc_module(node: torch.fx.Node, module_of: Callable[[torch.fx.Node], str | None]) -> str | None:
    """Module path of a backward graph's gradient accumulation (``add`` of
    two gradients of one forward tensor: a weight of a module called twice,
    tied weights, a residual branch's input): the longest dotted prefix the
    modules of its op inputs share (``module_of`` gives an input's), "" when
    they share none; None when no input has a module. Such a node runs
    outside any autograd node, so its ``seq_nr`` is no forward node's (torch
    gives it the last forward op's: the loss, a model's last layer)."""
    mods = [m for m in (module_of(a) for a in node.all_input_nodes if a.op == "call_function") if m is not None]
    if not mods:
        return None
    common = mods[0].split(".") if mods[0] else []
    for m in mods[1:]:
        parts = m.split(".") if m else []
        k = 0
        while k < min(len(common), len(parts)) and common[k] == parts[k]:
            k += 1
        del common[k:]
    return ".".join(common)


def describe_node(node: torch.fx.Node, index: int, module_of_seq: Callable[[int], str | None],
                  sizes: "dynamo_sizes.GraphSizes | None" = None,
                  module_of: Callable[[torch.fx.Node], str | None] | None = None) -> OpEntry:
    """Builds the static entry of op node ``node`` (``index``: its position
    among the op nodes). ``module_of_seq`` maps a seq_nr to a forward node's
    module, for backward nodes whose meta lacks a module stack; ``module_of``
    gives the module of another op node of the graph, for a gradient
    accumulation (``gradient_acc_module``). ``sizes``
    (a dynamic-shape graph's): the entry also keeps its FLOPs, bytes and
    shapes as expressions of the input sizes (``OpEntry.at``)."""
    meta = node.meta
    seq = meta.get("seq_nr")
    seq_nr = int(seq) if isinstance(seq, int) else -1
    module = module_path(meta)
    if module is None and meta.get("is_gradient_acc"):
        module = gradient_acc_module(node, module_of) if module_of is not None else None
    elif module is None and seq_nr >= 0:
        module = module_of_seq(seq_nr)
    if module is None:
        module = frame_module_path()

    args = tree_map(_val, node.args)
    kwargs = tree_map(_val, node.kwargs)
    out = meta.get("val")
    if node.target is operator.getitem:
        # Its input is the whole tuple; what it touches is the selected element.
        in_tensors = [out] if isinstance(out, torch.Tensor) else []
    else:
        in_tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
    shapes = [[_dim(s) for s in t.shape] for t in in_tensors]
    dtypes: list[str] = []
    for t in in_tensors:
        d = str(t.dtype).replace("torch.", "")
        if d not in dtypes:
            dtypes.append(d)
    if not dtypes:
        out_t = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        if out_t:
            dtypes.append(str(out_t[0].dtype).replace("torch.", ""))

    out_tensors = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
    if _is_view(node.target):
        nbytes = 0
    else:
        try:
            nbytes = sum(_tensor_bytes(t) for t in in_tensors) + sum(_tensor_bytes(t) for t in out_tensors)
        except Exception:  # unbacked sizes: unknown, not a crash
            nbytes = 0

    return OpEntry(
        index=index,
        name=op_event_name(node.target),
        module=module,
        source=source_line(meta),
        shapes=shapes,
        dtype=",".join(dtypes),
        flops=node_flops(node.target, args, kwargs, out),
        bytes=nbytes,
        seq_nr=seq_nr,
        optimizer=is_optimizer_node(meta),
        sym=_symbolic(node, args, kwargs, out, in_tensors, out_tensors, sizes) if sizes else None,
    )
