"""The tracer's one diagnostics channel: Python warnings go through the
core's dft_warn, in the same format and under the same DFTRACER_LOG_LEVEL as
the C++ side's."""

WARN = """
from dftracer.python.diagnostics import warn
warn("something odd happened")
"""


def test_warn_is_one_line_in_the_core_format(run_python):
    proc = run_python(WARN)
    assert proc.stderr.splitlines() == ["[dftracer] warning: something odd happened"]


def test_warn_obeys_the_core_log_level(run_python):
    proc = run_python(WARN, env={"DFTRACER_LOG_LEVEL": "error", "DFTRACER_ENABLE": "1",
                                 "DFTRACER_LOG_FILE": "traces/t"})
    assert "something odd happened" not in proc.stderr


def test_eager_env_warning_uses_the_same_channel(run_python):
    proc = run_python("import torch, dftracer.python", env={"DFTRACER_TRACE_EAGER": "sometimes"})
    lines = [l for l in proc.stderr.splitlines() if "DFTRACER_TRACE_EAGER" in l]
    assert len(lines) == 1 and lines[0].startswith("[dftracer] warning: "), proc.stderr
