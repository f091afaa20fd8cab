"""pydftracer's `dftracer` logger class and module-level helpers.

One logger per process: every `dftracer` instance talks to the same core.
Times (get_time(), log_event's start_time and duration) are in
DFTRACER_TIME_METRIC's unit since the Unix epoch, as in pydftracer:
microseconds by default, nanoseconds under NS (MS, SEC: milliseconds,
seconds). The file itself is always microseconds -- with nanosecond decimals
under NS -- and says so in a `time_metric` metadata event (time_unit()).
"""
import os

from .. import _core
from . import _process, diagnostics, entities
from .diagnostics import warn
from .env import TRACING_FORBIDDEN
from .tags import unwrap

__all__ = ["dftracer", "initialize", "finalize", "get_time", "trace_path", "time_unit"]

_TRACE_SUFFIXES = (".pfw.gz", ".pfw")
_enabled = _core.enabled
_now_us = _core.now_us
_now_ns = _core.now_ns

# Nanoseconds per unit of each DFTRACER_TIME_METRIC value (pydftracer's
# get_time_scale table: NS 1e9, US 1e6, MS 1e3, SEC 1 per second).
_NS_PER_UNIT = {"NS": 1, "US": 1000, "MS": 1_000_000, "SEC": 1_000_000_000}


def _read_time_unit():
    metric = os.environ.get("DFTRACER_TIME_METRIC", "").strip().upper()
    return metric if metric in _NS_PER_UNIT else "US"


# time_unit() as read when tracing last started (None: not started yet). A
# lookup in os.environ of a variable that is not set raises and catches a
# KeyError inside os.environ.get: microseconds, too much for every
# get_time() and log_event().
_unit_at_start = None


def _note_tracing_started():
    """Reads DFTRACER_TIME_METRIC for this tracing session (the core reads
    its DFTRACER_* variables when tracing starts, too)."""
    global _unit_at_start
    _unit_at_start = _read_time_unit()
    _core._set_time_unit_ns(_NS_PER_UNIT[_unit_at_start])


def time_unit():
    """The unit of get_time() and log_event's times: DFTRACER_TIME_METRIC
    (NS, US, MS or SEC; anything else, or unset: US) as set when tracing
    started; before that, as set now."""
    return _unit_at_start or _read_time_unit()


def _to_ns(value, what):
    """`value` (a time in time_unit()) as whole nanoseconds for the core."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"dftracer: {what} must be a number, got {type(value).__name__}")
    per = _NS_PER_UNIT[time_unit()]
    ns = value * per if isinstance(value, int) else round(value * per)
    if not 0 <= ns < 2 ** 63:
        raise ValueError(f"dftracer: {what} out of range")
    return int(ns)

# What pydftracer 2.0.6 (over dftracer 2.2.0) answers get_config(key) with
# when the variable is not set.
_CONFIG_DEFAULTS = {
    "DFTRACER_ENABLE": "1",
    "DFTRACER_LOG_FILE": "./trace",
    "DFTRACER_DATA_DIR": "all",
    "DFTRACER_INC_METADATA": "0",
    "DFTRACER_TRACE_COMPRESSION": "1",
    "DFTRACER_TIME_METRIC": "US",
    "DFTRACER_BIND_SIGNALS": "0",
    "DFTRACER_SET_CORE_AFFINITY": "0",
    "DFTRACER_WRITE_BUFFER_SIZE": "16777216",
    "DFTRACER_GOTCHA_PRIORITY": "1",
}


def _prefix_of(logfile):
    """The core's file prefix for a user's log file argument.

    pydftracer users pass a file name such as "trace.pfw"; the core names
    files `<prefix>-<app>-<pid>.pfw[.gz]`, so a trailing .pfw / .pfw.gz is
    dropped ("trace.pfw" -> "trace-python3.11-1234.pfw.gz").
    """
    p = os.fspath(logfile)
    for suffix in _TRACE_SUFFIXES:
        if p.endswith(suffix) and len(p) > len(suffix):
            p = p[: -len(suffix)]
            break
    return os.path.abspath(p)


def _split_dirs(value):
    return [d for d in (value or "").split(":") if d.strip()]


def data_dirs_in_force(data_dir):
    """The directories whose I/O is traced after initialize_log(..., data_dir):
    `data_dir`'s and DFTRACER_DATA_DIR's together (pydftracer traces the
    union of both), "all" when either says all, None (every path) when
    neither names any. Both use DFTRACER_DATA_DIR's syntax (':' between
    directories)."""
    # The argument's relative directories are the caller's: made absolute
    # here, so children started elsewhere trace the same ones.
    given = [d if d.strip() == "all" else os.path.abspath(d) for d in _split_dirs(data_dir)]
    dirs = given + _split_dirs(_process.user_env("DFTRACER_DATA_DIR"))
    if not dirs:
        return None
    if any(d.strip() == "all" for d in dirs):
        return "all"
    return ":".join(dict.fromkeys(dirs))


def _merge_typed_args(args, int_args, float_args, string_args):
    """pydftracer's int_args/float_args/string_args (values may be its
    TagValue tuples (tag_type, value)) merged into one dict."""
    merged = dict(args) if args else {}
    for typed in (int_args, float_args, string_args):
        if not typed:
            continue
        for k, v in typed.items():
            if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], int):
                v = v[1]
            merged[k] = unwrap(v)
    return merged


def _holds_events():
    """True when the current session recorded (or lost) any event: its
    counters cover threads that have exited too, and never go down."""
    st = _core.stats()
    return st["events_recorded"] > 0 or st["events_dropped"] > 0


def _remove_trace_file(path):
    """Removes an empty trace file and, for .pfw.gz, its member index."""
    for p in (path, path + ".idx") if path.endswith(".gz") else (path,):
        try:
            os.unlink(p)
        except OSError:
            pass


class dftracer:
    """The process's trace logger (pydftracer's class of the same name)."""

    __instance = None

    def __init__(self):
        self.logger = None  # pydftracer attribute; set while tracing
        self.trace_file = None  # path of the last file this process traced to
        self.dbg_logging = None  # pydftracer's debug logger; diagnostics go through dft_warn here
        self.start_time = 0  # get_time() when tracing started (pydftracer)
        self.time_unit_note = None  # the file the time_metric metadata went into
        self._used_marks = set()
        dftracer.__instance = self

    @classmethod
    def get_instance(cls):
        if dftracer.__instance is None:
            dftracer()
        return dftracer.__instance

    @staticmethod
    def initialize_log(logfile=None, data_dir=None, process_id=-1, *, log_file=None, enable=None):
        """Starts tracing to `<logfile prefix>-<app>-<pid>.pfw[.gz]`.

        As pydftracer, tracing starts only when DFTRACER_ENABLE is exactly
        "1": programs keep this call and switch tracing with the
        environment. `enable=True` (ours) opts in without the environment:
        it traces when DFTRACER_ENABLE is unset too (a DFTRACER_ENABLE set to
        anything but "1" still keeps tracing off); `enable=False` starts
        nothing (tracing DFTRACER_ENABLE=1 started on import goes on). `logfile` (or `log_file=`) may be None: DFTRACER_LOG_FILE,
        then "./dftracer". `data_dir` (':'-separated directories, or "all")
        limits I/O tracing to the files under it from this call on, together
        with DFTRACER_DATA_DIR's directories when that is set too (as
        pydftracer; data_dirs_in_force); children inherit the union as
        DFTRACER_DATA_DIR. Without either, every path's I/O is traced.
        `process_id` names no file and replaces no pid (pydftracer 2.x); it
        is recorded as the `start` event's `p_idx`. Returns the logger.
        """
        instance = dftracer.get_instance()
        if logfile is None:
            logfile = log_file
        if enable is not None and not isinstance(enable, bool):
            raise TypeError(f"dftracer: enable must be None, True or False, got {enable!r}")
        if TRACING_FORBIDDEN or enable is False:
            return instance
        if not isinstance(process_id, int) or isinstance(process_id, bool):
            raise TypeError(f"dftracer: process_id must be an int, got {type(process_id).__name__}")
        prefix = _prefix_of(logfile) if logfile else None
        data_dir = data_dirs_in_force(os.fspath(data_dir) if data_dir is not None else None)

        if _core.enabled():
            current = _core.trace_path()
            if prefix is None or os.path.abspath(_core.trace_prefix()) == prefix:
                instance._started(current, prefix, data_dir)
                return instance
            # Tracing was started from the environment on import with
            # another prefix: move to the file the program asks for. The
            # file is renamed and tracing goes on in it, so what was
            # recorded since import (I/O of the imports, say) stays, in the
            # one file. Where it cannot be renamed (another file system),
            # it is finalized -- kept if it holds events, never deleting
            # them, removed if it holds none -- and a new file is started.
            if _core.relocate(prefix):
                instance._started(_core.trace_path(), prefix, data_dir)
                return instance
            _core.finalize()
            # Asked after finalize: an event recorded until then (another
            # thread) keeps its file.
            if not _holds_events():
                _remove_trace_file(current)

        rc = _core.init(prefix, data_dir, int(process_id), opt_in=enable is True)
        if rc == 0 and _core.enabled():
            instance._started(_core.trace_path(), prefix, data_dir)
        return instance

    def _started(self, path, prefix, data_dir):
        _note_tracing_started()
        self.logger = _core
        self.trace_file = path
        self.start_time = self.get_time()
        if time_unit() != "US" and self.time_unit_note != path:
            # As DFTracer's own files: a reader learns the unit of ts and dur
            # from the file. Ours are microseconds whatever the metric, which
            # a reader that saw DFTRACER_TIME_METRIC=NS set would not guess.
            _core.custom_metadata("time_metric", "US")
            self.time_unit_note = path
        if prefix is None and path:
            # The core's own prefix: the file name cannot be taken apart
            # (an app name may contain '-').
            prefix = _core.trace_prefix()
        _process.export_env(prefix, data_dir)
        _process.tracing_started(from_env=False)
        # I/O tracing may have started on import (DFTRACER_ENABLE=1) with
        # DFTRACER_DATA_DIR alone, or in an earlier session with other dirs.
        from . import io as io_tracing

        io_tracing.set_data_dir(data_dir)

    # get_time: C (_bind_logger_methods below): one flag load while tracing
    # is off; the Python _get_time for a unit the C side does not know
    # (log_event_fast.cc).

    def get_config(self, key):
        """pydftracer's get_config: "" while tracing is off; otherwise the
        DFTRACER_* variable as set, or pydftracer's default for it
        (DFTRACER_TIME_METRIC -> "US", DFTRACER_INC_METADATA -> "0", ...;
        "" for a key it does not know)."""
        if not _enabled():
            return ""
        value = os.environ.get(key)
        if value is not None and value.strip():
            return value.strip()
        return _CONFIG_DEFAULTS.get(key, "")

    # -- process-wide metadata (pydftracer folds these into its `end` event;
    # our core's end event has no such objects, so each is a metadata event
    # written when set: it survives a crash too) --------------------------
    def set_app_metadata_int(self, key, value):
        """App metadata (an int): metadata event `app.<key>`."""
        if _enabled():
            _core.metadata(f"app.{key}", str(int(value)))

    def set_app_metadata_string(self, key, value):
        """App metadata (a str): metadata event `app.<key>`."""
        if _enabled():
            _core.metadata(f"app.{key}", str(value))

    def mark_used(self, name):
        """Reports that an integration ("ai", "dynamo", "torch_profiler", ...)
        ran: one metadata event `used` = name per name and trace file."""
        if not _enabled():
            return
        marker = (_core.trace_path(), name)
        if marker in self._used_marks:
            return
        self._used_marks.add(marker)
        _core.metadata("used", str(name))

    # -- entities (see entities.py) -----------------------------------------
    @staticmethod
    def declare_entity(type, key, store=entities.EntityStore.MEMORY, uri=""):
        return entities.declare_entity(type, key, store, uri)

    @staticmethod
    def declare_entity_type(type, role=entities.EntityRole.UNKNOWN, description=""):
        entities.declare_entity_type(type, role, description)

    @staticmethod
    def relate_entities(relation, subject, object):
        entities.relate_entities(relation, subject, object)

    def enter_event(self):
        """pydftracer API; events here are complete events (nesting comes
        from their times), so there is nothing to do."""

    def exit_event(self):
        """See enter_event."""

    # log_event: C (_bind_logger_methods below): one flag load while tracing
    # is off, the record itself for int microseconds; the Python _log_event
    # for everything else.

    def log_metadata_event(self, key, value):
        """Records a metadata event as pydftracer does: named "CM", args
        {"name": key, "value": str(value)}."""
        if not _core.enabled():
            return _core.count_skipped()
        _core.custom_metadata(key, value)

    def finalize(self):
        """Writes everything and closes the trace file. Safe to call twice;
        events logged after it are counted and dropped, never written."""
        if _core.enabled():
            diagnostics.run_before_finalize()
        _core.finalize()
        _process.restore_env()
        self.logger = None

    @property
    def trace_path(self):
        """Path of the file being written now, or None when not tracing."""
        return _core.trace_path()


def initialize(log_file=None, data_dirs=None, process_id=-1):
    """Module-level form of dftracer.initialize_log (pydftracer)."""
    return dftracer.initialize_log(log_file, data_dirs, process_id)


def finalize():
    """Module-level form of dftracer.finalize (pydftracer)."""
    dftracer.get_instance().finalize()


get_time = _core._get_time


def _get_time():
    """Time since the Unix epoch on the trace's clock in time_unit()
    (microseconds unless DFTRACER_TIME_METRIC says otherwise), an int;
    0 while tracing is off (pydftracer)."""
    if not _enabled():
        return 0
    unit = time_unit()
    return _now_us() if unit == "US" else _now_ns() // _NS_PER_UNIT[unit]


def _log_event(name, cat, start_time, duration, int_args=None, float_args=None,
               string_args=None, relations=None, *, args=None):
    """Records a complete event, with pydftracer's signature. `start_time`
    and `duration` are in time_unit() (int or float), as returned by
    get_time(): microseconds unless DFTRACER_TIME_METRIC says otherwise.
    int_args/float_args/string_args values may be plain or pydftracer's TagValue(...).value() tuples; `args=` (ours) takes any
    values: bool/int/float/str are written typed, anything else as
    str(value). `relations` ({EntityRelation: [entity ids]}) become args
    `rel.<relation>`. A no-op while tracing is off."""
    if not _core.enabled():
        return _core.count_skipped()
    if int_args or float_args or string_args:
        args = _merge_typed_args(args, int_args, float_args, string_args)
    if relations:
        args = dict(args) if args else {}
        args.update(entities.relation_args(relations))
    if time_unit() == "US":
        _core.log_event(name, cat, start_time, duration, args)
    else:
        _core.log_event_ns(name, cat, _to_ns(start_time, "start_time"), _to_ns(duration, "duration"), args)


_core._set_logger_slow_paths(_log_event, _get_time)
# Method descriptors of the class: `log.get_time()` / `log.log_event(...)`
# take CPython's specialized method calls.
_core._bind_logger_methods(dftracer)


def trace_path():
    """Path of the trace file being written now, or None."""
    return _core.trace_path()


# pydftracer's logger module re-exports its `common` names (`from
# dftracer.python.logger import dft_fn` is how its ai module gets dft_fn):
# here from the modules that define them; common.py gathers them from here.
from .entities import EntityID, EntityRelation, EntityRole, EntityStore  # noqa: E402
from .profiler_protocol import NoOpProfiler, ProfilerProtocol, TagValueTuple  # noqa: E402
from .region import dft_fn  # noqa: E402
from .tags import TagDType, TagType, TagValue  # noqa: E402

# Units of each DFTRACER_TIME_METRIC value per second (pydftracer's table).
_TIME_METRIC_UNITS_PER_SECOND = {"NS": 1e9, "US": 1e6, "MS": 1e3, "SEC": 1.0}


def get_time_scale():
    """Units per second of get_time() under DFTRACER_TIME_METRIC (default
    microseconds): an integration with its own epoch clock scales its
    timestamps by this before log_event()."""
    return _TIME_METRIC_UNITS_PER_SECOND[time_unit()]


# pydftracer's module-level back end: here always the core (the extension is
# part of the package), reached through the logger.
profiler = dftracer.get_instance()

__all__ = list(dict.fromkeys(__all__ + [
    "dftracer", "dft_fn", "TagValue", "TagType", "TagDType", "TagValueTuple",
    "EntityStore", "EntityRole", "EntityRelation", "EntityID", "ProfilerProtocol",
    "NoOpProfiler", "get_time_scale", "profiler",
]))
