"""The package's shape: every public name stays, no module needs another to be
imported first, no import circle.

public_names.json lists, per module path users could import, its public
names (its __all__, else every public non-module name it binds). Moving a
module keeps its old path importable (dftracer/python/_moved.py), so the
list holds the paths of the flat layout too. When a name is added on
purpose, add it to the list; a name that disappears fails here.
"""
import ast
import importlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import dftracer

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.dirname(os.path.abspath(dftracer.__file__))


def _public_names():
    with open(os.path.join(HERE, "public_names.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("module", sorted(_public_names()))
def test_public_names_are_still_there(module):
    m = importlib.import_module(module)
    missing = [n for n in _public_names()[module] if not hasattr(m, n)]
    assert not missing, f"{module} lost {missing}"


def test_a_moved_module_is_the_same_object_at_both_paths():
    import dftracer.python.ranks as old
    from dftracer.python.distributed import ranks as new
    from dftracer.python import io_tracing, io

    assert old is new and old.__spec__.name == "dftracer.python.distributed.ranks"
    assert io_tracing is io


def _modules():
    """Every module of the installed package, by dotted name: {name: (path, is_package)};
    compiled extensions have path None."""
    root = os.path.dirname(PACKAGE_DIR)
    mods = {}
    for d, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = [x for x in dirs if x != "__pycache__" and x != "lib"]
        for f in files:
            p = os.path.join(d, f)
            if f.endswith(".so"):
                mods[os.path.relpath(os.path.join(d, f.split(".")[0]), root).replace(os.sep, ".")] = (None, False)
            elif f.endswith(".py"):
                name = os.path.relpath(p, root)[:-3].replace(os.sep, ".")
                pkg = name.endswith(".__init__")
                mods[name[: -len(".__init__")] if pkg else name] = (p, pkg)
    return mods


def _import_time_statements(body):
    """Import statements that run when the module is imported: at module level,
    and in if/try/with blocks there (not in functions or classes)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)):
                yield from _import_time_statements(getattr(node, field, []) or [])
        if isinstance(node, ast.Try):
            for h in node.handlers:
                yield from _import_time_statements(h.body)


def _import_graph(mods):
    """module -> the package's modules its import runs. Importing a.b.c runs a
    and a.b first; a module's own enclosing packages are already running, so
    importing from them counts only when it reads their __init__'s names."""
    edges = {m: set() for m in mods}
    for m, (path, is_pkg) in mods.items():
        if path is None:
            continue
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in _import_time_statements(tree.body):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = m.split(".") if is_pkg else m.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    frm = ".".join(base + ([node.module] if node.module else []))
                else:
                    frm = node.module or ""
                subs = [f"{frm}.{a.name}" for a in node.names if f"{frm}.{a.name}" in mods]
                targets = subs + [frm]
                if len(subs) < len(node.names) and m.startswith(frm + "."):
                    edges[m].add(frm)  # names from an enclosing package's __init__
            for t in targets:
                parts = t.split(".")
                for i in range(1, len(parts) + 1):
                    x = ".".join(parts[:i])
                    if x in mods and x != m and not m.startswith(x + "."):
                        edges[m].add(x)
    return edges


def _cycles(edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    assert _cycles(_import_graph(_modules())) == []


def test_the_cycle_check_finds_a_circle():
    edges = _import_graph({"p": (None, True), "p.a": (None, False), "p.b": (None, False)})
    edges["p.a"].add("p.b")
    edges["p.b"].add("p.a")
    assert _cycles(edges) == [["p.a", "p.b"]]


def test_the_cycle_check_sees_logger_and_common_importing_each_other(tmp_path):
    # The shape the package had: logger.py ending in `from .common import *`,
    # common.py importing the logger class from logger.py.
    pkg = tmp_path / "dftracer" / "python"
    pkg.mkdir(parents=True)
    (tmp_path / "dftracer" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .logger import dftracer\n")
    (pkg / "logger.py").write_text("class dftracer: pass\nfrom .common import *\n")
    (pkg / "common.py").write_text("from .logger import dftracer\n")
    global PACKAGE_DIR
    saved, PACKAGE_DIR = PACKAGE_DIR, str(tmp_path / "dftracer")
    try:
        cycles = _cycles(_import_graph(_modules()))
    finally:
        PACKAGE_DIR = saved
    assert cycles == [["dftracer.python.common", "dftracer.python.logger"]]


def test_each_module_imports_alone_in_a_fresh_interpreter(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    names = sorted(m for m, (path, _) in _modules().items() if path is not None)

    def load(name):
        p = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=str(tmp_path), env=env,
                           capture_output=True, text=True, timeout=300)
        return name, p.returncode, p.stderr[-2000:]

    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = [r for r in pool.map(load, names) if r[1] != 0]
    assert not failed, "\n".join(f"{n}: {err}" for n, _, err in failed)
