"""Signals that end a traced Python program, beyond SIGTERM and Ctrl-C
(test_exit_paths.py, test_io_signals.py): each must leave a finalized file
with every event recorded before it, and end the process as it would end
untraced -- the same status, and no line of the program's run after a
signal it sent itself.

- SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 at their default action kill the
  process (a closed terminal or ssh session, Ctrl+backslash, a scheduler's
  warning signal); they used to lose every event still in its buffer.
- A program that gives SIGINT the default action itself (command-line tools
  do, for a quick Ctrl-C) lost its buffered events the same way.
- os.abort() (SIGABRT) and crashes (SIGSEGV, SIGFPE; also on another
  thread, and with faulthandler on, which re-raises after its traceback)
  lost every event still in its buffer: the thread that dies now waits in
  the handler for the finalize, then dies of the signal where it was.
- A program that resets a signal to SIG_DFL and sends it to itself expects
  to die in that call; with the tracer's handler put back for SIG_DFL, the
  code after the kill ran (it printed its next line).

The flush interval is a minute, so without a finalize every event would
still sit in its buffer.
"""
import os
import resource
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import _clean_env
from trace_reader import read_finalized, trace_files

RECORD = """
import os, signal, sys, time
from dftracer.python import dft_fn
{setup}
for i in range(100):
    with dft_fn("app", "before_stop"):
        pass
print("ready", flush=True)
{stop}
"""

WAIT = """
for _ in range(3000):
    time.sleep(0.01)
print("not stopped", flush=True)
"""


def no_core_dump():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # The default actions under test, whatever this runner inherited (nohup
    # ignores SIGHUP, and ignored signals stay ignored across exec).
    for s in (signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)


def run(tmp_path, code, traced, send=None):
    """Runs `code` traced (to tmp_path/traces) or not; sends `send` once it
    prints "ready". Returns (returncode, stdout, stderr, trace files)."""
    traces = tmp_path / ("traced" if traced else "untraced")
    traces.mkdir()
    env = _clean_env()
    if traced:
        env.update(DFTRACER_ENABLE="1", DFTRACER_FLUSH_INTERVAL_MS="60000", DFTRACER_LOG_FILE=str(traces / "t"))
    script = tmp_path / "stopped.py"
    script.write_text(textwrap.dedent(code))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=no_core_dump)
    try:
        first = proc.stdout.readline()
        if send is not None and first == "ready\n":
            proc.send_signal(send)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, first + out, err, trace_files(str(traces))


def check_same_ending_and_finalized(tmp_path, code, send=None):
    rc_u, out_u, err_u, _ = run(tmp_path, code, traced=False, send=send)
    rc, out, err, files = run(tmp_path, code, traced=True, send=send)
    assert (rc, out) == (rc_u, out_u), err
    assert len(files) == 1, (files, err)
    events = read_finalized(files[0])  # `[`, events, `]`: nothing cut short
    assert events[-1]["name"] == "end", (events[-3:], err)
    assert sum(e["name"] == "before_stop" for e in events) == 100, err
    return rc


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2],
                         ids=lambda s: signal.Signals(s).name)
def test_a_killing_signal_from_outside_finalizes(tmp_path, sig):
    rc = check_same_ending_and_finalized(tmp_path, RECORD.format(setup="", stop=WAIT), send=sig)
    assert rc == -sig


def test_sigint_set_to_its_default_by_the_program_finalizes(tmp_path):
    code = RECORD.format(setup="signal.signal(signal.SIGINT, signal.SIG_DFL)", stop=WAIT)
    assert check_same_ending_and_finalized(tmp_path, code, send=signal.SIGINT) == -signal.SIGINT


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("how", ["kill", "raise_signal"])
def test_a_signal_the_program_sends_itself_ends_it_there(tmp_path, sig, how):
    # Many events still in their buffers: the finalize the signal starts
    # takes a while, and the print after the kill ran first on every run.
    send = (f"os.kill(os.getpid(), {int(sig)})" if how == "kill" else f"signal.raise_signal({int(sig)})")
    stop = (f"for i in range(30000):\n    with dft_fn('app', 'busy'):\n        pass\n"
            f"signal.signal({int(sig)}, signal.SIG_DFL)\n{send}\nprint('ran on after the signal', flush=True)\n")
    assert check_same_ending_and_finalized(tmp_path, RECORD.format(setup="", stop=stop)) == -sig


def test_uncaught_keyboard_interrupt_under_preload_still_dies_of_sigint(tmp_path):
    # Under PRELOAD the core takes SIGINT before CPython starts; CPython then
    # installs its handler over it. After an uncaught KeyboardInterrupt it
    # sets SIGINT to SIG_DFL (the hooks put the core's handler there) and
    # kills itself, exiting 130 should it survive. With a handler that
    # returned at once, that exit raced the re-raise: 130 on about 1 run in 3.
    from test_io_signals import preload_library

    code = RECORD.format(setup="", stop="raise KeyboardInterrupt")
    rc_u, out_u, _, _ = run(tmp_path, code, traced=False)
    assert (rc_u, out_u) == (-signal.SIGINT, "ready\n")
    for attempt in range(8):
        traces = tmp_path / f"preload{attempt}"
        traces.mkdir()
        env = _clean_env()
        env.update(DFTRACER_ENABLE="1", DFTRACER_INIT="PRELOAD", LD_PRELOAD=preload_library(),
                   DFTRACER_FLUSH_INTERVAL_MS="60000", DFTRACER_LOG_FILE=str(traces / "t"))
        p = subprocess.run([sys.executable, str(tmp_path / "stopped.py")], cwd=str(tmp_path), env=env,
                           capture_output=True, text=True, timeout=60)
        assert (p.returncode, p.stdout) == (rc_u, out_u), (attempt, p.stderr)
        files = trace_files(str(traces))
        assert len(files) == 1, files
        events = read_finalized(files[0])
        assert sum(e["name"] == "before_stop" for e in events) == 100


CRASHES = {
    "abort": "os.abort()",
    "segv": "import ctypes\nctypes.string_at(0)",
    "segv_on_a_thread": "import ctypes, threading\nt = threading.Thread(target=ctypes.string_at, args=(0,))\n"
                        "t.start()\nt.join()",
    "fpe": "signal.raise_signal(signal.SIGFPE)",
}
# Real faults from the CPU (si_code > 0: the handler waits, then the
# instruction faults again): an integer division by zero and ud2, run from
# an executable page; a read past the end of a file mapped beyond it.
RUN_CODE = ("import ctypes, mmap\n"
            "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
            "m.write(bytes.fromhex({!r}))\n"
            "ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()")
if os.uname().machine == "x86_64":
    CRASHES["fpe_divide"] = RUN_CODE.format("31c9b801000000" "99f7f9c3")  # xor ecx,ecx; mov eax,1; cdq; idiv ecx
    CRASHES["ill_ud2"] = RUN_CODE.format("0f0bc3")
CRASHES["bus"] = ("import ctypes, os, tempfile\n"
                  "f = tempfile.TemporaryFile()\nf.write(b'x' * 4096)\nf.flush()\n"
                  "libc = ctypes.CDLL(None, use_errno=True)\nlibc.mmap.restype = ctypes.c_void_p\n"
                  "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,"
                  " ctypes.c_long]\n"
                  "p = libc.mmap(None, 8192, 1, 1, f.fileno(), 0)\n"  # PROT_READ, MAP_SHARED
                  "ctypes.string_at(p + 4096, 1)")


@pytest.mark.parametrize("faulthandler", ["", "faulthandler"])
@pytest.mark.parametrize("crash", sorted(CRASHES))
def test_a_crash_finalizes_and_still_dies_of_its_signal(tmp_path, crash, faulthandler):
    setup = "import faulthandler\nfaulthandler.enable()" if faulthandler else ""
    stop = CRASHES[crash] + "\nprint('ran on after the crash', flush=True)\n"
    rc = check_same_ending_and_finalized(tmp_path, RECORD.format(setup=setup, stop=stop))
    assert rc == -{"abort": signal.SIGABRT, "fpe": signal.SIGFPE, "fpe_divide": signal.SIGFPE, "ill_ud2": signal.SIGILL,
                   "bus": signal.SIGBUS}.get(crash, signal.SIGSEGV)
