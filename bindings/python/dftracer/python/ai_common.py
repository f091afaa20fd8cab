"""pydftracer's `dft_ai` taxonomy (DFTracerAI and its categories) on our C regions.

Every node of the tree (``ai``, ``ai.compute``, ``ai.compute.forward``, ...)
is a `DFTracerAI`: a subclass of the C type `_core.Region`, so

- ``with ai.compute.forward:`` costs what ``with dft_fn(...)`` costs: C
  ``__enter__``/``__exit__``, no Python frame;
- ``@ai.compute.forward`` returns a `_core.TracedFunction` (C vectorcall)
  whose events are the node's: its name, its category, its args.

Names, categories and args follow pydftracer 2.0.6 (``ai_common.py``):
``forward``/``compute``, ``fetch.iter`` + ``fetch.block`` with ``count``,
``data.io.read``/``data``, ``other.log``/``other``, ``ai_root``/``ai_root``.
Where this module differs on purpose, the docstring of the method says so
(and docs/python.md lists it).
"""
import builtins
import functools
import inspect
import sys
from collections.abc import Mapping

from .. import _core
from . import current_step
from .env import TRACING_FORBIDDEN
from .tags import TAG_KEYS, TagValue

if sys.version_info >= (3, 11):
    from enum import StrEnum as StringEnum
    from enum import auto
else:  # pragma: no cover - the venvs here run 3.11
    from enum import Enum, auto

    class StringEnum(str, Enum):
        """str enum whose auto() values are the lower-case member names."""

        def __str__(self):
            return str(self.value)

        @staticmethod
        def _generate_next_value_(name, start, count, last_values):
            return name.lower()


__all__ = [
    "INIT_NAME", "ITER_COUNT_NAME", "BLOCK_NAME", "ITER_NAME", "CTX_SEPARATOR",
    "ROOT_NAME", "ROOT_CAT", "DFTracerAI", "AI", "IO", "Compute", "Data",
    "DataLoader", "Communication", "Device", "Checkpoint", "Pipeline", "Other",
    "ProfileCategory", "ComputeEvent", "DataEvent", "DataLoaderEvent",
    "CommunicationEvent", "DeviceEvent", "PipelineEvent", "CheckpointEvent",
    "OtherEvent", "IOEvent", "get_iter_block_name", "get_iter_handle_name",
]

ITER_COUNT_NAME = "count"
INIT_NAME = "init"
BLOCK_NAME = "block"
ITER_NAME = "iter"
CTX_SEPARATOR = "."
ROOT_NAME = "ai_root"
ROOT_CAT = "ai_root"
START_METADATA_NAME = "start"
STOP_METADATA_NAME = "end"

_TAG_PARAMS = ("epoch", "step", "image_idx", "image_size")
assert tuple(TAG_KEYS) == _TAG_PARAMS  # the parameter lists below spell them out

_intern = _core.intern
_name_ref = _core.name_ref  # for names that may be new on every call (region.py)
_ticks = _core.ticks
_enabled = _core.enabled


def get_iter_block_name(name):
    suffix = f"{CTX_SEPARATOR}{BLOCK_NAME}"
    return name if name.endswith(suffix) else f"{name}{suffix}"


def get_iter_handle_name(name):
    suffix = f"{CTX_SEPARATOR}{ITER_NAME}"
    return name if name.endswith(suffix) else f"{name}{suffix}"


def _logger():
    from .logger import dftracer  # logger imports this package's modules lazily

    return dftracer.get_instance()


def _tag_args(epoch, step, image_idx, image_size, args):
    """pydftracer's typed args: the tag keys (image_size as a float), then
    `args` with TagValue unwrapped; ints and floats stay numbers, anything
    else becomes its str()."""
    d = {}
    for key, v in zip(_TAG_PARAMS, (epoch, step, image_idx, image_size)):
        if v is None:
            continue
        if isinstance(v, TagValue):
            v = v._value
        # pydftracer stores epoch/step/image_idx as TagDType.INT and
        # image_size as FLOAT; a value that does not convert is kept as given
        # (pydftracer would raise inside the training loop).
        try:
            v = float(v) if key == "image_size" else int(v)
        except (TypeError, ValueError, OverflowError):
            pass
        d[key] = v
    if args:
        if not isinstance(args, Mapping):
            raise TypeError(f"dftracer: args must be a dict, got {type(args).__name__}")
        for k, v in args.items():
            if isinstance(v, TagValue):
                v = v._value
            if isinstance(v, bool):  # pydftracer: an int arg
                v = int(v)
            d[k] = v if isinstance(v, (int, float)) else str(v)
    return d


def _traced_iter(owner, iterable, include_iter, include_block, iter_id, block_id, count_id):
    """pydftracer's DFTracerAI.iter events: per item, once its loop body has
    finished, `<name>.iter` (the time to get the item) and `<name>.block`
    (the body), both with arg count = 1, 2, ... An item whose body is left
    early (break, exception) writes nothing, as in pydftracer."""
    record = owner._record
    count = 1
    t_start = _ticks()
    for v in iterable:
        t_got = _ticks()
        yield v
        t_done = _ticks()
        if include_iter:
            record(iter_id, t_start, t_got, count_id, count)
        if include_block:
            record(block_id, t_got, t_done, count_id, count)
        count += 1
        t_start = _ticks()


class DFTracerAI(_core.Region):
    """One node of the taxonomy: an event name and category with sticky args.

    Use it as a context manager (``with ai.compute.forward:``), a decorator
    (``@ai.compute.forward`` or ``@ai.compute.forward(epoch=1)``), around a
    loop (``for b in ai.dataloader.fetch.iter(loader):``) or with explicit
    ``start()``/``stop()``.
    """

    def __init__(self, *, cat, name=None, epoch=None, step=None, image_idx=None,
                 image_size=None, enable=True):
        cat = str(cat)
        name = str(name) if name else cat
        super().__init__(cat, name, None, None, None, None, enable)
        tags = _tag_args(epoch, step, image_idx, image_size, None)
        if tags:
            self._sticky(tags)
        # (pydftracer also calls mark_used("ai") here; a metadata event written
        # at import would make the env-started file hold events, so that
        # initialize_log() could no longer move tracing to its own file.)
        self._children = {}

    # pydftracer code reaches the node's dft_fn as `.profiler`; here the node
    # is its own region.
    @property
    def profiler(self):
        return self

    def _tags(self):
        """The node's tag keys as constructor arguments (what children inherit)."""
        a = self._arguments
        return {k: a.get(k) for k in _TAG_PARAMS}

    def create_children(self, names):
        for attr, name in names.items():
            child = DFTracerAI(cat=self.cat, name=name, enable=self._enable, **self._tags())
            setattr(self, attr, child)
            self._children[attr] = child

    # -- decorator / factory ------------------------------------------------
    def __call__(self, fn=None, *, enable=None, epoch=None, step=None, image_idx=None,
                 image_size=None, args=None):
        """``@node`` or ``@node(epoch=..., args={...})``: every call of the
        function is one event named like the node. With tags and no function,
        the tags are added to this node (pydftracer does that too) and a new
        node of the same name and category with those tags is returned."""
        tags = _tag_args(epoch, step, image_idx, image_size, args)
        if tags:
            self._sticky(tags)
        is_enabled = self._enable if enable is None else bool(enable)
        if fn is not None:
            return self._decorate(fn, is_enabled)
        return DFTracerAI(cat=self.cat, name=self.name, epoch=epoch, step=step,
                          image_idx=image_idx, image_size=image_size, enable=is_enabled)

    def _decorate(self, fn, is_enabled):
        if not callable(fn):
            raise TypeError(f"dftracer: {self.name} decorates functions, got {type(fn).__name__}")
        if TRACING_FORBIDDEN or not is_enabled:
            return fn
        # Generator and async functions: their events cover the iteration
        # and the awaited run, not just the creation of the generator or
        # coroutine object (all that pydftracer's `with self: return f()`
        # times).
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn):
            from .region import _wrap_coroutine, _wrap_generator

            wrap = _wrap_generator if inspect.isgeneratorfunction(fn) else _wrap_coroutine
            return wrap(self, fn, self.name)
        wrapper = _core.TracedFunction(fn, self, self.name, (), False)
        functools.update_wrapper(wrapper, fn)
        return wrapper

    # -- explicit start/stop ------------------------------------------------
    # start(metadata=False) / stop(metadata=False), in C (region.cc): open
    # and close the node's event as `with` does; metadata=True writes
    # pydftracer's <name>.start / <name>.end metadata event (_time_metadata).
    # Set below the class as its own method descriptors (_region_method).

    def _time_metadata(self, what):
        if self._enable and _enabled():
            log = _logger()
            log.log_metadata_event(f"{self.name}{CTX_SEPARATOR}{what}", str(log.get_time()))

    def get_time(self):
        return _logger().get_time()

    # -- switches and args --------------------------------------------------
    def enable(self):
        self._enable = True
        for child in self._children.values():
            child.enable()

    def disable(self):
        self._enable = False
        for child in self._children.values():
            child.disable()

    def update(self, epoch=None, step=None, image_idx=None, image_size=None, args=None):
        """Sets args on this node and every node below it, for the event
        open now and all later ones (pydftracer's DFTracerAI.update)."""
        current_step.note(step)  # collectives' `step` (collectives.py)
        if self._enable:
            tags = _tag_args(epoch, step, image_idx, image_size, args)
            if tags:
                self._sticky(tags)
        for child in self._children.values():
            child.update(epoch=epoch, step=step, image_idx=image_idx, image_size=image_size, args=args)
        return self

    # -- loops --------------------------------------------------------------
    def iter(self, iterator, *, include_block=True, include_iter=True, iter_name=None,
             block_name=None):
        """Iterates `iterator`, writing per item ``<name>.iter`` (time to get
        it) and ``<name>.block`` (the loop body) with arg ``count``. Unlike
        pydftracer, ``count`` is an arg of these events only: it does not
        stick to the node's later events."""
        if not self._enable or not _enabled():
            return builtins.iter(iterator)
        iter_id = _name_ref(iter_name or get_iter_handle_name(self.name))
        block_id = _name_ref(block_name or get_iter_block_name(self.name))
        return _traced_iter(self, iterator, include_iter, include_block, iter_id, block_id,
                            _intern(ITER_COUNT_NAME))

    # -- derived nodes ------------------------------------------------------
    def derive(self, name):
        """The child node ``<this name>.<name>`` (same category), made once."""
        full = f"{self.name}{CTX_SEPARATOR}{name}"
        child = self._children.get(full)
        if child is None:
            child = DFTracerAI(cat=self.cat, name=full, enable=self._enable, **self._tags())
            self._children[full] = child
        return child

    def init(self, fn=None, *, enable=None, epoch=None, step=None, image_idx=None,
             image_size=None, args=None):
        """The ``<name>.init`` child, called like the node itself (pydftracer
        uses it on __init__ methods)."""
        return self.derive(INIT_NAME)(fn, enable=enable, epoch=epoch, step=step,
                                      image_idx=image_idx, image_size=image_size, args=args)

    def __repr__(self):
        return f"{type(self).__name__}(cat={self.cat!r}, name={self.name!r})"


# Descriptors of DFTracerAI itself: on a node (every child is a DFTracerAI),
# CPython then calls them without its generic call path.
DFTracerAI.start = _core._region_method(DFTracerAI, "_ai_start")
DFTracerAI.stop = _core._region_method(DFTracerAI, "_ai_stop")

# pydftracer's private base class name.
_DFTracerAI = DFTracerAI


class ProfileCategory(StringEnum):
    COMPUTE = auto()
    DATA = auto()
    DATALOADER = auto()
    COMM = auto()
    DEVICE = auto()
    CHECKPOINT = auto()
    PIPELINE = auto()
    OTHER = auto()


class ComputeEvent(StringEnum):
    FORWARD = auto()
    BACKWARD = auto()
    STEP = auto()


class DataEvent(StringEnum):
    PREPROCESS = auto()
    ITEM = auto()


class DataLoaderEvent(StringEnum):
    FETCH = auto()


# Names from https://docs.pytorch.org/docs/stable/distributed.html
class CommunicationEvent(StringEnum):
    SEND = auto()
    RECEIVE = auto()
    BARRIER = auto()
    BCAST = auto()
    REDUCE = auto()
    ALL_REDUCE = auto()
    GATHER = auto()
    ALL_GATHER = auto()
    SCATTER = auto()
    REDUCE_SCATTER = auto()
    ALL_TO_ALL = auto()


class DeviceEvent(StringEnum):
    TRANSFER = auto()


class PipelineEvent(StringEnum):
    EPOCH = auto()
    TRAIN = auto()
    EVALUATE = auto()
    TEST = auto()


class CheckpointEvent(StringEnum):
    CAPTURE = auto()
    RESTART = auto()


class OtherEvent(StringEnum):
    LOG = auto()


class IOEvent(StringEnum):
    OPEN = auto()
    READ = auto()
    WRITE = auto()
    CLOSE = auto()


class _Category(DFTracerAI):
    """A top-level category: its children are named by `EVENTS` (attribute ->
    event name); `HAS_IO` adds the ``io`` subtree (``<cat>.io.open`` ...)."""

    CATEGORY = None
    EVENTS = {}
    HAS_IO = False

    def __init__(self, epoch=None, step=None, image_idx=None, image_size=None, enable=True):
        tags = dict(epoch=epoch, step=step, image_idx=image_idx, image_size=image_size)
        super().__init__(cat=self.CATEGORY, name=self.CATEGORY, enable=enable, **tags)
        self.create_children({attr: str(name) for attr, name in self.EVENTS.items()})
        if self.HAS_IO:
            self.io = IO(cat=self.CATEGORY, parent_name=str(self.CATEGORY), enable=enable, **tags)
            self._children["io"] = self.io


class IO(DFTracerAI):
    """I/O on a data object: ``<parent>.io.open/read/write/close``."""

    def __init__(self, *, cat, parent_name, epoch=None, step=None, image_idx=None,
                 image_size=None, enable=True):
        io_name = f"{parent_name}{CTX_SEPARATOR}io"
        super().__init__(cat=cat, name=io_name, epoch=epoch, step=step, image_idx=image_idx,
                         image_size=image_size, enable=enable)
        self.create_children({e.value: f"{io_name}{CTX_SEPARATOR}{e}" for e in IOEvent})


class Compute(_Category):
    CATEGORY = ProfileCategory.COMPUTE
    EVENTS = {"forward": ComputeEvent.FORWARD, "backward": ComputeEvent.BACKWARD,
              "step": ComputeEvent.STEP}


class Data(_Category):
    CATEGORY = ProfileCategory.DATA
    EVENTS = {"preprocess": DataEvent.PREPROCESS, "item": DataEvent.ITEM}
    HAS_IO = True


class DataLoader(_Category):
    CATEGORY = ProfileCategory.DATALOADER
    EVENTS = {"fetch": DataLoaderEvent.FETCH}


class Communication(_Category):
    CATEGORY = ProfileCategory.COMM
    EVENTS = {e.value: e for e in CommunicationEvent}


class Device(_Category):
    CATEGORY = ProfileCategory.DEVICE
    EVENTS = {"transfer": DeviceEvent.TRANSFER}


class Checkpoint(_Category):
    CATEGORY = ProfileCategory.CHECKPOINT
    EVENTS = {"capture": CheckpointEvent.CAPTURE, "restart": CheckpointEvent.RESTART}
    HAS_IO = True


class Pipeline(_Category):
    CATEGORY = ProfileCategory.PIPELINE
    EVENTS = {e.value: e for e in PipelineEvent}


class Other(_Category):
    """Work outside the other categories (external API calls, application
    logging): ``other.log`` and ``other.io.*``."""

    CATEGORY = ProfileCategory.OTHER
    EVENTS = {"log": f"{ProfileCategory.OTHER}{CTX_SEPARATOR}{OtherEvent.LOG}"}
    HAS_IO = True


class AI(DFTracerAI):
    """The root (``ai_root``) and the eight categories below it."""

    _CATEGORIES = {"compute": Compute, "data": Data, "dataloader": DataLoader,
                   "comm": Communication, "device": Device, "checkpoint": Checkpoint,
                   "pipeline": Pipeline, "other": Other}

    def __init__(self, epoch=None, step=None, image_idx=None, image_size=None, enable=True):
        tags = dict(epoch=epoch, step=step, image_idx=image_idx, image_size=image_size)
        super().__init__(cat=ROOT_CAT, name=ROOT_NAME, enable=enable, **tags)
        for attr, cls in self._CATEGORIES.items():
            node = cls(enable=enable, **tags)
            setattr(self, attr, node)
            self._children[attr] = node
