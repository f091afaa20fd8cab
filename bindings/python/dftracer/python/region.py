"""dft_fn: pydftracer's region/decorator object, on the C hot path.

`dft_fn` subclasses the C type `_core.Region`, which implements the
constructor, __enter__/__exit__, flush() and reset() without a Python frame;
`.log` wraps plain functions in `_core.TracedFunction` (C vectorcall). The
rarer paths -- generators, coroutines, `.iter()` -- are Python here and
record through the same core with ticks they keep themselves.
"""
import builtins
import functools
import inspect
from collections.abc import Mapping

from .. import _core
from . import entities
from .env import TRACING_FORBIDDEN
from .tags import TAG_KEYS, unwrap

__all__ = ["dft_fn"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
# Names that may be new on every call: an id under DFTRACER_INTERN_CAP, the
# str itself past it (then copied into each event by _record).
_name_ref = _core.name_ref
_ticks = _core.ticks
_enabled = _core.enabled


def _capture_specs(f):
    """Parameters of `f` named like pydftracer's tags (epoch, step,
    image_idx, image_size), found once so that calls need no inspection:
    ((name, position or -1, has_default, default), ...), and whether the
    first parameter is `self` (then those attributes of self are captured)."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return (), False
    self_attrs = bool(params) and params[0].name == "self" and params[0].kind in _POSITIONAL
    specs = []
    for i, p in enumerate(params):
        if p.name in TAG_KEYS and p.kind != inspect.Parameter.VAR_KEYWORD:
            pos = i if p.kind in _POSITIONAL else -1
            has_default = p.default is not inspect.Parameter.empty
            specs.append((p.name, pos, has_default, p.default if has_default else None))
    return tuple(specs), self_attrs


def _event_name(f, name):
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"dftracer: event name must be a str, got {type(name).__name__}")
        return name
    n = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    return n if isinstance(n, str) else repr(f)


def _wrap_generator(owner, f, name):
    """A generator function: one event per resumption (each next()/send()/
    throw() until the generator yields, returns or raises), so the events
    show the time spent inside the generator, not in its consumer."""
    name_id = _name_ref(name)

    @functools.wraps(f)
    def traced_generator(*args, **kwargs):
        gen = f(*args, **kwargs)
        if not _enabled():
            return (yield from gen)
        record = owner._record
        value, error = None, None
        while True:
            t0 = _ticks()
            try:
                if error is None:
                    item = gen.send(value)
                else:
                    e, error = error, None
                    item = gen.throw(e)
            except StopIteration as stop:
                record(name_id, t0, _ticks())
                return stop.value
            except BaseException:
                record(name_id, t0, _ticks())
                raise
            record(name_id, t0, _ticks())
            try:
                value = yield item
            except GeneratorExit:
                gen.close()
                raise
            except BaseException as e:  # thrown in by the consumer: pass it on
                value, error = None, e

    return traced_generator


def _wrap_coroutine(owner, f, name):
    """An async function: one event from the call to its completion
    (including time suspended in awaits)."""
    name_id = _name_ref(name)

    @functools.wraps(f)
    async def traced_coroutine(*args, **kwargs):
        if not _enabled():
            return await f(*args, **kwargs)
        t0 = _ticks()
        try:
            return await f(*args, **kwargs)
        finally:
            owner._record(name_id, t0, _ticks())

    return traced_coroutine


def _trace(owner, f, name):
    if isinstance(f, (staticmethod, classmethod)):
        return type(f)(_trace(owner, f.__func__, name))
    if not callable(f):
        raise TypeError(f"dftracer: dft_fn.log needs a function, got {type(f).__name__}")
    event_name = _event_name(f, name)
    if TRACING_FORBIDDEN or not owner._enable:
        return f
    if inspect.isgeneratorfunction(f):
        return _wrap_generator(owner, f, event_name)
    if inspect.iscoroutinefunction(f):
        return _wrap_coroutine(owner, f, event_name)
    specs, self_attrs = _capture_specs(f)
    wrapper = _core.TracedFunction(f, owner, event_name, specs, self_attrs)
    functools.update_wrapper(wrapper, f)
    return wrapper


def _traced_iter(owner, iterable, name, iter_name):
    iter_id = _name_ref(f"{name}.iter")
    yield_id = _name_ref(f"{name}.yield")
    key_id = _name_ref(str(iter_name))
    record = owner._record
    it = builtins.iter(iterable)
    step = 1
    t = _ticks()
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except BaseException:
            record(iter_id, t, _ticks(), key_id, step)
            raise
        t_got = _ticks()
        record(iter_id, t, t_got, key_id, step)
        try:
            yield item
        finally:  # also when the loop is left early (GeneratorExit)
            t = _ticks()
            record(yield_id, t_got, t, key_id, step)
        step += 1


class dft_fn(_core.Region):
    """dft_fn(cat, name=None, epoch=None, step=None, image_idx=None,
    image_size=None, enable=True)

    A category (and default name) for events. `name` defaults to the calling
    function's name. epoch/step/image_idx/image_size become args of every
    event of this object. Use it as

    - a context manager: ``with dft_fn("io", "read"): ...`` (one event);
    - a decorator: ``@dft_fn("io").log`` (an event per call, named by the
      function's qualified name);
    - a loop wrapper: ``for x in fn.iter(data): ...``;
    - pydftracer style: the constructor starts the clock, flush() writes.
    """

    __slots__ = ()

    # -- args ---------------------------------------------------------------
    def update(self, epoch=None, step=None, image_idx=None, image_size=None, args=None):
        """Adds args to the current event: the innermost open event of this
        dft_fn on this thread (a `with` block or a call of a function it
        decorated). With none open, the args stick to every later event of
        this dft_fn (pydftracer's behaviour). Returns self."""
        if not self._enable:
            return self
        d = {}
        for key, v in zip(TAG_KEYS, (epoch, step, image_idx, image_size)):
            if v is not None:
                d[key] = unwrap(v)
        if args is not None:
            if not isinstance(args, Mapping):
                raise TypeError(f"dftracer: update(args=...) takes a dict, got {type(args).__name__}")
            for k, v in args.items():
                d[k] = unwrap(v)
        if d:
            self._attach(d)
        return self

    # -- decorators ---------------------------------------------------------
    def log(self, func=None, name=None):
        """Decorator: one event per call, named `name` or the function's
        __qualname__. Works for functions, methods, staticmethod/classmethod
        objects, generator functions (an event per resumption) and async
        functions. Parameters (or, for methods, attributes of self) named
        epoch/step/image_idx/image_size become args. With DFTRACER_ENABLE=0
        or enable=False the function is returned unchanged."""
        if isinstance(func, str) and name is None:
            func, name = None, func
        if func is None:
            return lambda f: _trace(self, f, name)
        return _trace(self, func, name)

    def log_init(self, init=None, name=None):
        """Decorator for __init__ (pydftracer); same as log."""
        return self.log(init, name)

    def log_static(self, func=None, name=None):
        """Decorator for static methods (pydftracer); same as log."""
        return self.log(func, name)

    # -- loops --------------------------------------------------------------
    def iter(self, func, name="loop", iter_name="step"):
        """Iterates `func`, recording per item a `<name>.iter` event (the
        time to get the item) and a `<name>.yield` event (the time the loop
        body took), both with arg `<iter_name>` = 1, 2, ... (pydftracer's
        events). With tracing off returns a plain iterator."""
        if not self._enable or not _enabled():
            return builtins.iter(func)
        return _traced_iter(self, func, name, iter_name)

    # -- relations to entities (entities.py) --------------------------------
    def relate(self, relation, entity):
        """Relates the current event (the open one of this dft_fn, else its
        later events) to an entity id: arg ``rel.<relation>`` = the id in hex.
        One id per relation and event: a second relate() with the same
        relation replaces the first. Event relations only (< 16)."""
        if self._enable and entity and int(relation) < 16:
            self._attach(entities.relation_args({relation: [entity]}))
        return self

    def relate_entity(self, relation, type, key, store=entities.EntityStore.MEMORY, uri=""):
        """declare_entity(type, key, store, uri) and relate(relation, id); the id."""
        if not self._enable:
            return 0
        eid = entities.declare_entity(type, key, store, uri)
        self.relate(relation, eid)
        return eid

    def uses(self, type, key, store=entities.EntityStore.MEMORY, uri=""):
        """This event consumed entity (type, key)."""
        return self.relate_entity(entities.EntityRelation.USED, type, key, store, uri)

    def generates(self, type, key, store=entities.EntityStore.MEMORY, uri=""):
        """This event produced entity (type, key)."""
        return self.relate_entity(entities.EntityRelation.GENERATED, type, key, store, uri)

    # -- metadata -----------------------------------------------------------
    def log_metadata(self, key, value):
        """pydftracer's log_metadata_event: a metadata event named "CM",
        args {"name": key, "value": str(value)}."""
        if self._enable and _enabled():
            _core.custom_metadata(key, value)

    def __repr__(self):
        return f"dft_fn(cat={self.cat!r}, name={self.name!r})"


# dft_fn(...) without the args tuple / kwargs dict of a normal class call
# (see Region_vectorcall_new); subclasses with their own __init__ are unaffected.
_core._fast_construct(dft_fn)
