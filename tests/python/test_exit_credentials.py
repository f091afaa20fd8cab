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


def test_a_signal_after_tracing_ended_at_a_credential_change_kills_as_untraced(run_python, tmp_path):
    # Under PRELOAD a credential change ends tracing and gives the signals
    # back: the tracer's handler used to stay (the core read it through the
    # preload library's sigaction, which reports it as SIG_DFL), and the code
    # after the program's own SIGTERM ran on.
    from test_io_signals import preload_library

    code = """
    import os, signal
    os.setuid(os.getuid())
    os.kill(os.getpid(), signal.SIGTERM)
    print("ran on", flush=True)
    """
    p = run_python(code, env={"DFTRACER_LOG_FILE": str(tmp_path / "t"), "DFTRACER_INIT": "PRELOAD",
                              "LD_PRELOAD": preload_library()}, check=False)
    assert (p.returncode, p.stdout) == (-15, ""), (p.returncode, p.stdout, p.stderr)
