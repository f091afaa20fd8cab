"""dynamo_mark's node index, as the hook reads it: a one-digit int in place,
anything else through CPython's int conversion (multi-digit, negative, bool,
int subclasses), a non-int a TypeError; each mark's event and args the
node table's, indices outside the table recorded as nothing."""
from trace_reader import complete_events, read_trace, trace_files

ENV = {"DFTRACER_ENABLE": "1"}


def test_mark_indices_of_every_int_form(run_python, trace_dir):
    run_python("""
import os
from dftracer import _core
from dftracer.python import dftracer
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "t.pfw"), None, -1)

class Index(int):
    pass

names = ["function.n%d" % i for i in range(4)]
frags = ['"node":%d' % i for i in range(4)]
slot = _core.dynamo_register_graph("graph.inference", '"graph":7', 2, names, frags, [-1] * 4, 0, -1)
_core.dynamo_begin(slot, 0, 0)   # a call holds n + 1 marks
_core.dynamo_mark(0)
_core.dynamo_mark(True)         # bool: node 1
_core.dynamo_mark(Index(2))     # int subclass: node 2
_core.dynamo_mark(3)
for bad in ("1", 1.0, None):
    try:
        _core.dynamo_mark(bad)
    except TypeError:
        pass
    else:
        raise AssertionError(f"dynamo_mark({bad!r}) did not raise TypeError")
try:
    _core.dynamo_mark(2 ** 70)
except OverflowError:
    pass
else:
    raise AssertionError("dynamo_mark(2**70) did not raise OverflowError")
_core.dynamo_mark(4)            # closing mark
_core.dynamo_end()
_core.dynamo_begin(slot, 0, 0)
_core.dynamo_mark(-1)           # negative: no event
_core.dynamo_mark(2 ** 40)      # multi-digit, outside the table: no event
_core.dynamo_mark(0)            # node 0, closed by the next mark
_core.dynamo_mark(2 ** 30 + 3)  # two digits, outside the table: no event
_core.dynamo_mark(4)
_core.dynamo_end()
log.finalize()
""", env=dict(ENV, TRACE_DIR=trace_dir), timeout=120)
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    ops = sorted((e for e in complete_events(read_trace(files[0]), cat="dynamo") if e["name"].startswith("function.")),
                 key=lambda e: e["ts"])
    assert [e["name"] for e in ops] == ["function.n0", "function.n1", "function.n2", "function.n3", "function.n0"]
    assert [e["args"]["node"] for e in ops] == [0, 1, 2, 3, 0]
    assert all(e["args"]["grad_enabled"] == 0 for e in ops)
