"""One event per kernel call of Inductor's generated code.

Inductor turns each ATen graph into a Python wrapper module whose
``Runner.call(args)`` calls the kernels in order: fused C++/OpenMP kernels
(``cpp_fused_..._0(buf0, ...)``), extern kernels (``extern_kernels.mm(...)``),
fallbacks (``torch.ops.aten.x.default(...)``) and, on CUDA, Triton kernels
(``triton_poi_..._0.run(...)``). ``instrument`` rewrites the code object of
that one function (same module, same globals, same kernels) so that a
``dynamo_mark(i)`` precedes kernel call i and ``dynamo_mark(n)`` each
return: the capture backend's own hot path (src/capture/compile) then
records one event per kernel call, and ``dynamo_graph_call.wrap`` brackets
the call as for aot_eager graphs. The kernels Inductor generated are
untouched, so outputs are plain Inductor's.

Attribution (static, per kernel, computed once): Inductor's provenance
tracking names the post-grad FX nodes each kernel came from (only the
entries written while this graph was lowered count: Inductor's table is
process-wide); each node's module path, ATen op, FLOPs and bytes come from
``dynamo_nodes`` as for op events. The table is saved beside Inductor's
cache, keyed by the FX graph cache key (the kernels) and a digest of the
ATen graph's nodes, modules and seq_nrs relative to the graph's smallest
(what the kernels are attributed to; a table saved by a process whose
autograd counter differed is read with its seq_nrs moved), with the kernel
list it was made for; a cache hit (nothing lowered, no
provenance) loads the table of its key and digest if that lists the same
kernels. Without one (a table that differs is reported, once), the graph is
lowered again with the FX cache off and its table made from that compile.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

import torch.fx

from ..compile import dynamo_instances, dynamo_nodes, dynamo_pairing, dynamo_sizes
from .. import torch_compat
from ..diagnostics import warn
from ..compile.dynamo_graphs import GraphInfo, add_graph, make_sized
from ..compile.dynamo_hooks import BACKWARD, FORWARD, _core

_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+):(\d+)\s*$")
_ORIGIN = re.compile(r"#.*Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]")
MARK = "_dftracer_mark"  # the name the rewritten call() finds dynamo_mark under


@dataclass
class KernelSite:
    """One kernel call statement of the wrapper's call()."""

    line: int  # 1-based, in the wrapper source
    name: str  # cpp_fused_relu_0, extern_kernels.mm, aten.native_dropout.default
    kind: str  # cpp, triton, extern, fallback
    handle: str = ""  # Inductor's provenance key "<kernel>:<n>", "" when none
    aten: list = field(default_factory=list)  # from Inductor's "Original ATen" comment


@dataclass
class KernelEntry:
    """Static args of one kernel call site."""

    name: str
    kind: str
    modules: list
    aten: list
    flops: int
    bytes: int
    seq_nr: int
    inserted: bool = False  # no source node: Inductor's own (a layout copy), attributed to the next kernel
    # An optimizer step's kernel: most of what its source nodes move (their
    # bytes; their count when none moves any) is an optimizer's
    # (dynamo_nodes.is_optimizer_node): phase "optimizer" in the trace.
    optimizer: bool = False
    # Dynamic sizes: flops / bytes as text of expressions in the graph's
    # input-named size symbols (dynamo_sizes); None when static.
    flops_sym: str | None = None
    bytes_sym: str | None = None

    @property
    def sym(self) -> bool:
        return self.flops_sym is not None or self.bytes_sym is not None

    def at(self, env: dict) -> "KernelEntry":
        """This entry at the sizes `env` (input-named symbol -> value)."""
        if not self.sym:
            return self
        return replace(self, flops=dynamo_sizes.evaluate(self.flops_sym or self.flops, env, self.flops),
                       bytes=dynamo_sizes.evaluate(self.bytes_sym or self.bytes, env, self.bytes))

    def fragment(self, index: int, phase: str, graph: int) -> str:
        return json.dumps({
            "phase": "optimizer" if self.optimizer else phase, "graph": graph, "node": index, "kernel": self.kind,
            "module": self.modules[0] if self.modules else "", "modules": self.modules,
            "aten": self.aten, "flops": self.flops, "bytes": self.bytes, "seq_nr": self.seq_nr,
            **({"inserted": True} if self.inserted else {}),
        }, separators=(",", ":"))[1:-1]


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _kernel_names(tree: ast.Module) -> set[str]:
    """Module-level names bound to compiled kernels (``x = async_compile.cpp_pybinding(...)``)."""
    names = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            if _dotted(stmt.value.func).startswith("async_compile."):
                names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return names


def _classify(stmt: ast.stmt, kernels: set[str]) -> tuple[str, str] | None:
    """(name, kind) when `stmt` is a kernel call, else None."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if not isinstance(value, ast.Call):
        return None
    func = _dotted(value.func)
    if func in kernels:
        return func, "cpp"
    if func.endswith(".run") and func[:-4] in kernels:
        return func[:-4], "triton"
    if func.startswith("extern_kernels."):
        return func, "extern"
    if func.startswith("torch.ops."):
        return func[len("torch.ops."):], "fallback"
    return None


def find_call(tree: ast.Module) -> ast.FunctionDef:
    """The wrapper's ``call``: ``Runner.call`` (torch 2.13) or a module-level one."""
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == "Runner":
            for f in stmt.body:
                if isinstance(f, ast.FunctionDef) and f.name == "call":
                    return f
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "call":
            return stmt
    raise ValueError("no call() in Inductor's wrapper code")


def _statements(body: list) -> Any:
    """Every statement of `body`, nested blocks included, in source order."""
    for stmt in body:
        yield stmt
        for attr in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, attr, None)
            if isinstance(inner, list):
                yield from _statements(inner)


def kernel_sites(src: str) -> list[KernelSite]:
    """The kernel calls of the wrapper's call(), in execution order, with the
    comments Inductor wrote above each (provenance handle, origins)."""
    tree = ast.parse(src)
    kernels = _kernel_names(tree)
    lines = src.splitlines()
    sites = []
    for stmt in _statements(find_call(tree).body):
        hit = _classify(stmt, kernels)
        if hit is None:
            continue
        site = KernelSite(stmt.lineno, *hit)
        i = stmt.lineno - 2
        while i >= 0 and lines[i].lstrip().startswith("#"):
            m = _HANDLE.search(lines[i])
            if m and not site.handle:
                site.handle = f"{m.group(1)}:{m.group(2)}"
            m = _ORIGIN.search(lines[i])
            if m and not site.aten:
                site.aten = [a.strip() for a in m.group(2).split(",") if a.strip()]
            i -= 1
        sites.append(site)
    return sites


def _rewritten_call(src: str, filename: str, sites: list[KernelSite]) -> Any:
    """Code object of call() with ``_dftracer_mark(i)`` before kernel call i and
    ``_dftracer_mark(n)`` before each return.

    Kernel i's mark goes before the first buffer allocation since the
    previous kernel call (``buf3 = empty_strided_cpu(...)``: Inductor
    allocates a kernel's output buffers right above its call), else right
    before the call: with memory capture the allocation counts on the kernel
    that fills the buffer, and the ``del`` of a buffer after its last use on
    the kernel that used it last."""
    tree = ast.parse(src)
    fdef = find_call(tree)
    index = {s.line: i for i, s in enumerate(sites)}

    def mark(i: int, at: ast.stmt) -> ast.stmt:
        call = ast.Expr(ast.Call(ast.Name(MARK, ast.Load()), [ast.Constant(i)], []))
        return ast.copy_location(call, at)

    def allocates(stmt: ast.stmt) -> bool:
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        return isinstance(value, ast.Call) and _dotted(value.func).rsplit(".", 1)[-1].startswith("empty")

    def rewrite(body: list) -> list:
        out = []
        first_alloc = None  # where in `out` the allocations for the next kernel start
        for stmt in body:
            for attr in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, attr, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(stmt, attr, rewrite(inner))
            if isinstance(stmt, (ast.Expr, ast.Assign)) and stmt.lineno in index:
                at = len(out) if first_alloc is None else first_alloc
                out.insert(at, mark(index[stmt.lineno], stmt))
                first_alloc = None
            elif first_alloc is None and allocates(stmt):
                first_alloc = len(out)
            elif isinstance(stmt, ast.Return):
                out.append(mark(len(sites), stmt))
            out.append(stmt)
        return out

    fdef.body = rewrite(fdef.body)
    module = ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))
    code = compile(module, filename, "exec")
    return next(c for c in code.co_consts if hasattr(c, "co_name") and c.co_name == "call")


# ------------------------------------------------------------- attribution
TABLE_VERSION = 3


@dataclass
class Digest:
    """graph_digest's result: the digest text and the graph's seq_nr base."""

    text: str
    seq_base: int  # smallest seq_nr of the graph's op nodes (-1: none)


def graph_digest(gm: torch.fx.GraphModule, phase: int) -> Digest:
    """What decides a kernel table besides Inductor's FX graph cache key (the
    kernels): the ATen graph's op nodes with the module path and seq_nr each
    is attributed. Two models of one structure share FX cache entries;
    neither is in the FX key. Whether a node is an optimizer's is in it too
    (its source). A process's seq_nrs depend on what it ran before (the
    autograd counter), but only by an offset: the digest has each seq_nr less
    the graph's smallest (``seq_base``), and a table saved in another process
    is read with its seq_nrs moved by the difference of the bases. Taken
    before compile_fx_inner, whose post-grad passes rewrite gm."""
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    module_of_seq = dynamo_pairing.find_forward(ops)[1] if phase == BACKWARD else {}
    seqs = [n.meta.get("seq_nr") for n in ops]
    base = min((q for q in seqs if isinstance(q, int) and q >= 0), default=-1)
    h = hashlib.sha256(dynamo_nodes.PHASES[phase].encode())
    modules: dict = {}
    for n, seq in zip(ops, seqs):
        module = dynamo_nodes.module_path(n.meta)
        if module is None and n.meta.get("is_gradient_acc"):
            module = dynamo_nodes.gradient_acc_module(n, modules.get)
        elif module is None and isinstance(seq, int):
            module = module_of_seq.get(seq)
        modules[n] = module
        rel = seq - base if isinstance(seq, int) and seq >= 0 else seq
        h.update(f"\n{n.name} {n.target} {module} {rel} {dynamo_nodes.is_optimizer_node(n.meta)}".encode())
    return Digest(h.hexdigest()[:24], base)


def _table_path(key: str, digest: Digest) -> str | None:
    base = torch_compat.inductor_cache_dir()
    if not key or base is None:
        return None
    return os.path.join(base, "dftracer", f"{key}.{digest.text}.json")


def _entries_from_provenance(sites: list[KernelSite], gm: torch.fx.GraphModule, phase: int,
                             provenance: dict, sizes: dynamo_sizes.GraphSizes | None) -> tuple[list[KernelEntry], bool]:
    """The table from this compile's provenance, and whether provenance and
    wrapper agree (every marked kernel listed, every listed node in gm)."""
    nodes = {n.name: n for n in gm.graph.nodes if n.op == "call_function"}
    fw_info, module_of_seq = (dynamo_pairing.find_forward(list(nodes.values())) if phase == BACKWARD
                              else (None, {}))
    described: dict[str, dynamo_nodes.OpEntry] = {}
    position = {n: i for i, n in enumerate(gm.graph.nodes)}

    def describe(n: torch.fx.Node) -> dynamo_nodes.OpEntry:
        if n.name not in described:
            # A gradient accumulation's module is its inputs': describe
            # them first, in graph (topological) order, without recursion (a
            # weight used hundreds of times chains hundreds of them).
            found, pending = {}, [n]
            while pending:
                m = pending.pop()
                if m.name in described or m.name in found:
                    continue
                found[m.name] = m
                if m.meta.get("is_gradient_acc"):
                    pending.extend(a for a in m.all_input_nodes if a.op == "call_function")
            for m in sorted(found.values(), key=lambda m: position.get(m, -1)):
                described[m.name] = dynamo_nodes.describe_node(m, 0, module_of_seq.get, sizes,
                                                               lambda a: describe(a).module)
        return described[n.name]

    site_ops = []
    complete = all(s.handle in provenance for s in sites if s.handle)
    for s in sites:
        ops = []
        for name in provenance.get(s.handle, []):
            n = nodes.get(name)
            if n is None:
                complete = False
                continue
            ops.append((name, describe(n)))
        site_ops.append(ops)
    # A node can be listed by two kernels (a convolution by the layout copy
    # that prepares its input and by the extern kernel that runs it): its
    # FLOPs count once, in the extern/fallback kernel if one lists it.
    flops_site: dict[str, int] = {}
    for i, (s, ops) in enumerate(zip(sites, site_ops)):
        for name, _ in ops:
            if name not in flops_site or (s.kind in ("extern", "fallback") and
                                          sites[flops_site[name]].kind not in ("extern", "fallback")):
                flops_site[name] = i
    entries = []
    for i, (s, ops) in enumerate(zip(sites, site_ops)):
        modules = list(dict.fromkeys(o.module for _, o in ops if o.module))
        aten = list(dict.fromkeys(o.name.removeprefix("function.") for _, o in ops)) or s.aten
        seqs = [o.seq_nr for _, o in ops if o.seq_nr >= 0]
        flops = sum(o.flops for name, o in ops if flops_site[name] == i)
        entry = KernelEntry(s.name, s.kind, modules, aten, flops, sum(o.bytes for _, o in ops),
                            min(seqs) if seqs else -1, optimizer=_mostly_optimizer([o for _, o in ops]))
        if any(o.sym for _, o in ops):
            entry.flops_sym = dynamo_sizes.as_text(sum(o.sym[0] if o.sym else o.flops
                                                       for name, o in ops if flops_site[name] == i))
            entry.bytes_sym = dynamo_sizes.as_text(sum(o.sym[1] if o.sym else o.bytes for _, o in ops))
        entries.append(entry)
    return _attribute_inserted(entries), complete


def _mostly_optimizer(ops: list) -> bool:
    """True when most of what a kernel's source nodes move is an optimizer's
    (by bytes; by count when they move none): an inlined optimizer step's ops
    fused with a few of the graph's others."""
    opt = [o for o in ops if o.optimizer]
    if not opt:
        return False
    total = sum(o.bytes for o in ops)
    if total > 0:
        return 2 * sum(o.bytes for o in opt) > total
    return 2 * len(opt) > len(ops)


def _attribute_inserted(entries: list[KernelEntry]) -> list[KernelEntry]:
    """Kernels with no source node are Inductor's own (e.g. copying inputs to
    channels-last for the convolution after it): they get the module, ATen
    ops and seq_nr of the next kernel with a source, the work they prepare."""
    following = None
    for e in reversed(entries):
        if e.modules or e.aten:
            following = e
        elif following is not None:
            e.modules, e.aten, e.seq_nr, e.inserted = list(following.modules), list(following.aten), \
                following.seq_nr, True
            e.optimizer = following.optimizer
    return entries


def _site_ids(sites: list[KernelSite]) -> list:
    return [[s.name, s.kind] for s in sites]


def _save_table(path: str, key: str, digest: Digest, sites: list[KernelSite], entries: list[KernelEntry]) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"version": TABLE_VERSION, "key": key, "digest": digest.text, "seq_base": digest.seq_base,
                       "kernels": _site_ids(sites), "entries": [e.__dict__ for e in entries]}, f)
        os.replace(tmp, path)  # readers never see a partial table
    except OSError:
        pass  # only the next process's attribution is lost


def _load_table(path: str, key: str, digest: Digest, sites: list[KernelSite]) -> list[KernelEntry] | None:
    """The saved table when it was made for this key, graph and these
    kernels; None otherwise (one warning when a table is there but differs)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError:
        return None
    except ValueError:
        data = None
    try:
        if (data["version"] == TABLE_VERSION and data["key"] == key and data["digest"] == digest.text
                and data["kernels"] == _site_ids(sites)):
            shift = digest.seq_base - int(data["seq_base"])  # this process's autograd counter
            entries = [KernelEntry(**d) for d in data["entries"]]
            for e in entries:
                if e.seq_nr >= 0:
                    e.seq_nr += shift
            return entries
    except (KeyError, TypeError):
        pass
    warn(f"the kernel attribution table {path} does not match the kernels of this Inductor graph: "
         "ignored, rebuilt from a fresh compile")
    return None


def comment_table(sites: list[KernelSite]) -> list[KernelEntry]:
    """Attribution from the wrapper's own comments (ATen ops only)."""
    return [KernelEntry(s.name, s.kind, [], s.aten, 0, 0, -1) for s in sites]


def kernel_table(sites: list[KernelSite], gm: torch.fx.GraphModule, phase: int, key: str, digest: Digest,
                 provenance: dict, sizes: dynamo_sizes.GraphSizes | None = None) -> list[KernelEntry] | None:
    """Static args per call site. From `provenance`, the entries this
    compile_fx_inner call's lowering wrote, when there are some (then saved
    under the FX graph cache key and `digest`, if provenance and wrapper
    agree); else (a cache hit: nothing was lowered) the table saved for that
    key, digest and these kernels; else None: the caller recompiles the graph
    with the FX cache off and calls again with that compile's provenance."""
    if not sites:
        return []
    path = _table_path(key, digest)
    if provenance and any(s.handle for s in sites):
        entries, complete = _entries_from_provenance(sites, gm, phase, provenance, sizes)
        if complete and path is not None:
            _save_table(path, key, digest, sites, entries)
        return entries
    return _load_table(path, key, digest, sites) if path is not None else None


# ----------------------------------------------------------------- instrument
def instrument(out: Any, gm: torch.fx.GraphModule, phase: int, graph_id: int, sites: list[KernelSite],
               entries: list[KernelEntry], sizes: dynamo_sizes.GraphSizes | None = None) -> GraphInfo:
    """Registers the kernel table `entries` (kernel_table's for `sites`, the
    kernel_sites of out's wrapper) of Inductor's compiled graph `out` and rewrites
    its call() to mark each kernel call. Returns its GraphInfo; the caller
    brackets ``out.current_callable`` with dynamo_graph_call.wrap."""
    src, runner, _key = torch_compat.compiled_graph_parts(out)
    call_fn = type(runner).call
    if MARK in call_fn.__globals__:
        raise RuntimeError("this compiled module is already instrumented (same code compiled twice)")
    if len(entries) != len(sites):
        raise ValueError(f"kernel table has {len(entries)} entries for {len(sites)} kernel calls")
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    fw_info = dynamo_pairing.find_forward(ops)[0] if phase == BACKWARD else None
    if fw_info is not None:
        graph_id = fw_info.graph
    # A compiled optimizer step's kernels (torch.compile(opt.step), or a graph
    # of nothing else) are optimizer work; in a larger graph, its kernels are
    # (KernelEntry.optimizer).
    only_optimizer = dynamo_nodes.optimizer_frame() or (entries and all(e.optimizer for e in entries))
    phase_name = "optimizer" if only_optimizer else dynamo_nodes.PHASES[phase]
    names = [f"kernel.{e.name}" for e in entries]
    op_entries = [dynamo_nodes.OpEntry(i, names[i], e.modules[0] if e.modules else None, "", [], "", e.flops,
                                       e.bytes, e.seq_nr) for i, e in enumerate(entries)]
    # Flow arrows forward kernel -> backward kernel of the same seq_nr (a
    # kernel's seq_nr: the smallest of the nodes it fused), as for aot_eager
    # op events. Inductor's partitioner is its own, so a forward graph does
    # not know which seq_nrs its backward keeps: each forward seq_nr starts one.
    flows, flow_groups = dynamo_pairing.flow_groups(phase, op_entries, fw_info)
    graph_fragment = json.dumps({"phase": phase_name, "graph": graph_id, "ops": len(entries), "compiler": "inductor"},
                                separators=(",", ":"))[1:-1]

    def register(fragments: list, pair_slot: int) -> int:
        return _core.dynamo_register_graph(f"graph.{phase_name}", graph_fragment, phase, names, fragments, flows,
                                           len(flow_groups), pair_slot)

    def fragments_at(env: dict) -> list:
        return [e.at(env).fragment(i, phase_name, graph_id) for i, e in enumerate(entries)]

    slot = register([e.fragment(i, phase_name, graph_id) for i, e in enumerate(entries)],
                    fw_info.slot if fw_info is not None else -1)
    key_name, key_index = dynamo_pairing.pairing_key(gm, phase, fw_info)
    info = GraphInfo(graph_id, phase, slot, names, op_entries, flow_groups, key_name, key_index)
    add_graph(info, fw_info)
    make_sized(info, sizes, entries, fragments_at, register)

    def fragments(rename, env):  # an instance's table (dynamo_instances)
        return [replace(e if env is None else e.at(env), modules=[rename(m) for m in e.modules]).fragment(
            i, phase_name, graph_id) for i, e in enumerate(entries)]

    dynamo_instances.make_instances(info, gm, phase, dynamo_instances.current(), fragments, register)
    if phase == FORWARD:
        dynamo_pairing.note_forward(info)
    code = _rewritten_call(src, call_fn.__code__.co_filename, sites)
    call_fn.__globals__[MARK] = _core.dynamo_mark
    call_fn.__code__ = code
    return info
