"""pydftracer-compatible API.

    from dftracer.python import dftracer, dft_fn
    log = dftracer.initialize_log("trace.pfw", "/data", -1)
    ...
    log.finalize()

`dynamo`, `Dynamo`, `dftracer_dynamo_backend` and `create_backend` come from
dftracer.python.dynamo (torch.compile capture) and are imported on first use,
so importing dftracer.python never imports torch.
"""
import importlib
import sys
import types

from . import _moved

_moved.install()  # the capture modules' flat paths (dftracer.python.ranks, ...) still import

from .env import (  # noqa: F401
    DFTRACER_DATA_DIR_ENV,
    DFTRACER_ENABLE,
    DFTRACER_ENABLE_ENV,
    DFTRACER_INIT_ENV,
    DFTRACER_INIT_PRELOAD,
    DFTRACER_LOG_FILE_ENV,
    DFTRACER_LOG_LEVEL,
    DFTRACER_LOG_LEVEL_ENV,
)
from .logger import dftracer, finalize, get_time, initialize, trace_path  # noqa: F401
from .region import dft_fn  # noqa: F401
from .eager import eager_enabled, trace_eager  # noqa: F401  (no torch import)
from .tags import TagDType, TagType, TagValue  # noqa: F401
from .common import (  # noqa: F401
    EntityID, EntityRelation, EntityRole, EntityStore, NoOpProfiler, ProfilerProtocol,
    get_time_scale,
)
# pydftracer's package exports the dft_ai tree (`ai`, `compute`, `pipeline`,
# ...): after this, `dftracer.python.ai` is the tree's root object, as there.
from .ai import *  # noqa: F401,F403,E402
from .ai import __all__ as _ai_all  # noqa: E402

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("dftracer")
except Exception:  # not installed as a distribution (source tree)
    __version__ = "0.1.0"

_DYNAMO_NAMES = ("dynamo", "Dynamo", "dftracer_dynamo_backend", "dftracer_inductor_backend", "create_backend")


def _dynamo_attr(name):
    try:
        # The capture's import of torch._dynamo (sympy, ...: tens of
        # thousands of calls) is dftracer's own I/O, not the program's.
        from .io import paused

        with paused():
            mod = importlib.import_module(__name__ + ".dynamo")
    except ImportError as e:
        raise AttributeError(f"dftracer.python.{name} needs the torch.compile capture "
                             f"(dftracer.python.dynamo) and torch: {e}") from e
    try:
        return getattr(mod, name)
    except AttributeError:
        raise AttributeError(f"dftracer.python.dynamo has no {name!r}") from None


class _Package(types.ModuleType):
    # `dynamo` is both the submodule dftracer.python.dynamo and the object it
    # exports. Importing the submodule sets the package attribute `dynamo` to
    # the module; this property keeps `from dftracer.python import dynamo`
    # the object, whichever was imported first.
    @property
    def dynamo(self):
        return _dynamo_attr("dynamo")

    @dynamo.setter
    def dynamo(self, _module):
        pass


def __getattr__(name):
    if name in _DYNAMO_NAMES:
        return _dynamo_attr(name)
    if name in _moved.MOVED:
        return _moved.moved_module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_DYNAMO_NAMES))


sys.modules[__name__].__class__ = _Package

__all__ = [
    "dftracer", "dft_fn", "initialize", "finalize", "get_time", "trace_path",
    "TagValue", "TagType", "TagDType", "DFTRACER_ENABLE", "DFTRACER_INIT_PRELOAD",
    "DFTRACER_LOG_LEVEL", "trace_eager", "eager_enabled", "EntityID", "EntityRelation",
    "EntityRole", "EntityStore", "NoOpProfiler", "ProfilerProtocol", "get_time_scale",
] + list(_ai_all)
