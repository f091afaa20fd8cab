"""A traced program whose buffer pool is full of records gzip cannot shrink,
so that its finalize has a pool to drain (the slow-finalize exit tests)."""
import signal
import subprocess
import sys
import textwrap
import time

from conftest import _clean_env

PRELUDE = """
import os, signal, threading, time
from dftracer.python import dftracer

log = dftracer.get_instance()
# Records the writer formats and compresses slower than they come (gzip
# finds no repeat in its 32 KiB window): the pool stays full.
args = [{"s": os.urandom(1000).hex()} for _ in range(1000)]

def record():
    while True:
        for a in args:
            log.log_event("busy", "app", log.get_time(), 1, string_args=a)

for _ in range(2):
    threading.Thread(target=record, daemon=True).start()
time.sleep(1)  # the pool fills: the finalize has it all to write
print("ready", flush=True)
"""


def start(tmp_path, then):
    """Runs PRELUDE, then the program text `then`, traced into tmp_path with a
    64 MiB pool and no periodic flush; returns the Popen (text pipes)."""
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(then))
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_FLUSH_INTERVAL_MS="60000", DFTRACER_BUFFER_SIZE="64M",
               DFTRACER_LOG_FILE=str(tmp_path / "t"))
    return subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def catches_sigalrm(pid):
    """Whether `pid` has a handler for SIGALRM (/proc/PID/status SigCgt)."""
    with open(f"/proc/{pid}/status") as f:
        cgt = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    return bool(cgt & (1 << (signal.SIGALRM - 1)))


def wait_for_the_handler(p, timeout=60):
    """Waits until the tracer's SIGTERM handler runs in `p`: it installs the
    finalize's deadline (a SIGALRM handler), arms the alarm at once, and (a
    signal the process sent itself) waits for the finalize; then 50 ms more,
    so that the handler is well past arming the alarm. A fixed sleep from the
    signal would not do: on a loaded machine the signalled process may not
    run for a while, and stopped (SIGSTOP) before its handler ran it arms the
    alarm only after SIGCONT."""
    end = time.monotonic() + timeout
    while not catches_sigalrm(p.pid):
        assert p.poll() is None, "the process ended before its handler ran"
        assert time.monotonic() < end, f"no SIGTERM handler ran within {timeout} s"
        time.sleep(0.001)
    time.sleep(0.05)
