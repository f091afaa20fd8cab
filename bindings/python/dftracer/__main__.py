"""Traces a Python program without changing it.

    python -m dftracer [options] script.py [args ...]
    python -m dftracer [options] -m module [args ...]

runs the script (or module) as ``__main__`` with tracing on, as if it began
with ``import dftracer`` under ``DFTRACER_ENABLE=1``: its eager ATen ops
(the LibTorch observer, unless --no-eager), torch.compile's compile work and
optimizer steps, Python's garbage collections, checkpoints, its POSIX/STDIO I/O and its
torch.distributed collectives. The Python processes it starts trace too,
each into its own file: forked ones (a DataLoader's workers) as always, new
interpreters (multiprocessing's spawn, ``subprocess`` running python,
torchrun's workers) through a ``sitecustomize`` put first on their
PYTHONPATH, which imports dftracer when DFTRACER_ENABLE=1 and then runs the
``sitecustomize`` it shadows, if any. Options (each the variable named):

  -o, --log-file PREFIX   DFTRACER_LOG_FILE: the files are PREFIX-<app>-<pid>.pfw.gz
  --data-dir DIRS         DFTRACER_DATA_DIR: only I/O under these (colon-separated)
  --no-eager              leave DFTRACER_TRACE_EAGER as it is (default: 1)
  --no-children           new interpreters it starts do not trace

DFTRACER_ENABLE is set to 1 unless it is set already: any other value (the
user's kill switch, ``0``) keeps tracing off, and the program still runs.
The exit status is the program's.
"""
from __future__ import annotations

import os
import runpy
import sys

USAGE = "usage: python -m dftracer [-o PREFIX] [--data-dir DIRS] [--no-eager] [--no-children] " \
        "(script.py | -m module) [args ...]"
AUTOSTART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_autostart")


def _fail(msg: str) -> "NoReturn":  # noqa: F821
    print(f"python -m dftracer: {msg}\n{USAGE}", file=sys.stderr)
    raise SystemExit(2)


def _parse(argv: list[str]) -> tuple[dict, bool, bool, str, list[str]]:
    env: dict[str, str] = {}
    children = eager = True
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__)
            raise SystemExit(0)
        if a in ("-o", "--log-file", "--data-dir"):
            if i + 1 >= len(argv):
                _fail(f"{a} needs a value")
            env["DFTRACER_DATA_DIR" if a == "--data-dir" else "DFTRACER_LOG_FILE"] = argv[i + 1]
            i += 2
        elif a.startswith("--log-file=") or a.startswith("--data-dir="):
            key, value = a.split("=", 1)
            env["DFTRACER_DATA_DIR" if key == "--data-dir" else "DFTRACER_LOG_FILE"] = value
            i += 1
        elif a == "--no-eager":
            eager = False
            i += 1
        elif a == "--no-children":
            children = False
            i += 1
        elif a == "-m":
            if i + 1 >= len(argv):
                _fail("-m needs a module name")
            return env, children, eager, "-m", argv[i + 1:]
        elif a.startswith("-"):
            _fail(f"unknown option {a!r}")
        else:
            return env, children, eager, "script", argv[i:]
    _fail("no script or -m module to run")


def main(argv: list[str] | None = None) -> None:
    env, children, eager, kind, rest = _parse(sys.argv[1:] if argv is None else argv)
    if kind == "script" and not os.path.exists(rest[0]):
        _fail(f"no such file: {rest[0]!r}")  # before tracing starts: a usage error leaves no trace file
    for k, v in env.items():
        os.environ[k] = os.path.abspath(v) if k == "DFTRACER_LOG_FILE" else v
    if eager:
        os.environ.setdefault("DFTRACER_TRACE_EAGER", "1")
    os.environ.setdefault("DFTRACER_ENABLE", "1")
    if children:
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = AUTOSTART + (os.pathsep + path if path else "")
    # `python -m dftracer` imported the package before this runs, with the
    # environment as it was: start tracing from the one just set, and apply
    # DFTRACER_TRACE_EAGER (it waits for the program's `import torch`).
    import dftracer
    from dftracer.python import eager

    dftracer._start_from_env()
    eager._apply_env_at_import()

    if kind == "-m":
        sys.argv = [rest[0]] + rest[1:]  # runpy puts the module's file in argv[0]
        runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
        return
    script = rest[0]
    sys.argv = rest
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python script.py` sets it
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
