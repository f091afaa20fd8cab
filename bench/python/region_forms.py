"""One pydftracer region form in a loop, for instruction counts (the load of
a shared machine does not move them):

    PYTHONHASHSEED=0 [ON=1 DFTRACER_ENABLE=1 TD=<dir>] valgrind --tool=callgrind \
        --separate-threads=yes --callgrind-out-file=<dir>/cg python bench/python/region_forms.py <form> 50000

then the calling thread's total is the `totals:` line of <dir>/cg-01; a form's cost per
region is (its total - the total of `loop`, or of `call` for decorators) / 50000.
Forms: loop, call, deco, reused, new, aictx, aideco, aistartstop, logev, timelogev (get_time + log_event), nullctx (`with` on
_core._NullContext, a C context manager that does nothing, written with tp_methods) and floorctx (`with`
on _core._FloorContext: unbound builtin __enter__/__exit__, the least any `with` costs), floornew / floornewmut
(`with C("b", "r")`: a new object per `with` at the least cost, C immutable / mutable); the last four this package only. Runs under this package or
pydftracer (the same API). ON=1 starts tracing (initialize_log into $TD).
"""
import os, sys
from dftracer.python import dft_fn, dftracer, ai
form, N = sys.argv[1], int(sys.argv[2])
if os.environ.get("ON"):
    log = dftracer.initialize_log(os.path.join(os.environ["TD"], "t.pfw"), None, -1)
log = dftracer.get_instance()
def main():
    rng = range(N)
    reg = dft_fn("b", "r")
    fwd = ai.compute.forward
    @dft_fn("b").log
    def deco(): pass
    @ai.compute.forward
    def aideco(): pass
    def plain(): pass
    if form == "loop":
        for _ in rng: pass
    elif form == "call":
        for _ in rng: plain()
    elif form == "deco":
        for _ in rng: deco()
    elif form == "reused":
        for _ in rng:
            with reg: pass
    elif form == "new":
        for _ in rng:
            with dft_fn("b", "r"): pass
    elif form == "aictx":
        for _ in rng:
            with fwd: pass
    elif form == "aideco":
        for _ in rng: aideco()
    elif form == "aistartstop":
        for _ in rng:
            fwd.start()
            fwd.stop()
    elif form == "nullctx":
        from dftracer import _core
        nc = _core._NullContext()
        for _ in rng:
            with nc: pass
    elif form == "floorctx":
        from dftracer import _core
        fc = _core._FloorContext()
        for _ in rng:
            with fc: pass
    elif form in ("floornew", "floornewmut"):
        from dftracer import _core
        C = _core._FloorNewContext if form == "floornew" else _core._FloorNewMutable
        for _ in rng:
            with C("b", "r"): pass
    elif form == "logev":
        for _ in rng: log.log_event("ev", "b", 1, 1)
    elif form == "timelogev":
        for _ in rng:
            t = log.get_time()
            log.log_event("ev", "b", t, 1)
main()
