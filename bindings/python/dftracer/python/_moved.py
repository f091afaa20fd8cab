"""The flat module paths of the capture sources, kept importable.

Each capture source's Python half is a subpackage named like its C++ half
(compile/, inductor/, distributed/, eager/, io/). The paths the modules had
before, `dftracer.python.dynamo_backend`, `dftracer.python.ranks`,
`dftracer.python.io_tracing`, ..., still import: a finder on sys.meta_path
answers them with the module at its new path -- the same module object, so
state, monkeypatching and pickled references stay one.
"""
import importlib
import importlib.abc
import importlib.util
import sys

_PACKAGE = __name__.rpartition(".")[0]

# old name under dftracer.python -> its path under dftracer.python now
MOVED = {
    **{m: "compile." + m for m in (
        "compile_events", "dynamo_backend", "dynamo_graph_call", "dynamo_graph_pass", "dynamo_graphs",
        "dynamo_hooks", "dynamo_metadata", "dynamo_modules", "dynamo_nodes", "dynamo_pairing", "dynamo_sizes",
        "optimizer_events")},
    **{m: "inductor." + m for m in ("inductor_backend", "inductor_kernels")},
    **{m: "distributed." + m for m in ("clock_sync", "collectives", "ddp", "ranks")},
    "io_tracing": "io",
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        pkg, _, name = fullname.rpartition(".")
        if pkg != _PACKAGE or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(_PACKAGE + "." + MOVED[spec.name.rpartition(".")[2]])
        spec.loader_state = module.__spec__  # the import system sets the alias's spec on it: put it back
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


def moved_module(name):
    """The module an old flat name stands for (the package's __getattr__)."""
    return importlib.import_module(_PACKAGE + "." + name)


def install():
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
