"""A traced program whose buffer pool is full of records gzip cannot shrink,
so that its finalize has a pool to drain (the slow-finalize exit tests)."""
import subprocess
import sys
import textwrap

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
