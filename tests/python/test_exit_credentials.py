"""Without I/O tracing (DFTRACER_DISABLE_IO=1, only the process hooks in) a
credential change that every thread takes as the caller does goes on
tracing: os.setgid(os.getgid()) and os.setuid(os.getuid()) (a launcher that
drops to a user does the same). Tracing used to end there for the rest of
the process. (setpriv, whose threads differ in capabilities, still ends it:
test_exit_exec.py.)"""
from trace_reader import read_trace, trace_files

CODE = """
import os
import dftracer
from dftracer.python import dft_fn
with dft_fn("app", "before_setuid"):
    pass
os.setgid(os.getgid())
os.setuid(os.getuid())
os.setgroups(os.getgroups())
with dft_fn("app", "after_setuid"):
    pass
print("done")
"""


def test_tracing_goes_on_after_a_credential_change_without_io_tracing(run_python, tmp_path):
    p = run_python(CODE, env={"DFTRACER_DISABLE_IO": "1", "DFTRACER_LOG_FILE": str(tmp_path / "t")})
    assert p.stdout == "done\n"
    files = trace_files(str(tmp_path))
    assert len(files) == 1, files
    names = [e["name"] for e in read_trace(files[0])]
    assert "before_setuid" in names and "after_setuid" in names, names
    assert names[-1] == "end"
