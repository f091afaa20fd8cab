#!/usr/bin/env python3
"""Argument-vector fuzzer for dftracer-analyze's output paths and options:
a deterministic, seeded driver (not libFuzzer: the CLI ends with
exit() and is cheapest to run as the real binary) that builds hostile
command lines from a fixed vocabulary and runs each one for real.

Vocabulary: every command; outputs that are an input (same name, a hard
link, a symlink, the input's .idx), /dev/full, /dev/null, a directory, a
path under a missing or unwritable directory, names with spaces, newlines,
quotes, leading '-', 4 KiB components; --steps ranges good, bad and out
of range; --threads 0, -1, 2^32+1, 10^9,
"abc", ""; --top/--max-line-mib/--max-document-mib with the same; bad globs
("[", "*.pfw[", "**/x"), missing files, a FIFO and /dev/zero as inputs.

Each run must: end by exit status 0, 1 or 2 (never a signal: abort,
segfault, or a kill by the time limit, i.e. a hang); write at most two lines
to stderr when it fails (the error and the usage hint); leave every input
byte-identical; leave no temporary output file; and leave no file at an
output's name when it failed (unless one was there before).

    cli_args_fuzz.py DFTRACER_ANALYZE [--seconds 10] [--seed 1]
"""
import argparse
import glob
import hashlib
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import time

EVENT = ('{"id":%d,"name":"op%d","cat":"c","pid":1,"tid":%d,"ts":%d,"dur":%d,"ph":"X",'
         '"args":{"module":"m.%d","phase":"forward","step":%d}}')


def write_inputs(d):
    lines = ["["] + [EVENT % (i, i % 5, 1 + i % 3, 1_700_000_000_000_000 + 10 * i, 1 + i % 4, i % 3, i % 4)
                     for i in range(3000)] + ["]"]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "a.pfw"), "w") as f:
        f.write(text)
    subprocess.run(["gzip", "-k", os.path.join(d, "a.pfw")], check=True)
    os.rename(os.path.join(d, "a.pfw.gz"), os.path.join(d, "b.pfw.gz"))
    with open(os.path.join(d, "b.pfw.gz.idx"), "w") as f:
        f.write(f"0 {os.path.getsize(os.path.join(d, 'b.pfw.gz'))} {len(text)} {len(lines)}\n")
    os.link(os.path.join(d, "a.pfw"), os.path.join(d, "hard.pfw"))
    os.symlink(os.path.join(d, "a.pfw"), os.path.join(d, "soft.pfw"))
    os.mkfifo(os.path.join(d, "fifo.pfw"))
    os.mkdir(os.path.join(d, "sub"))
    os.mkdir(os.path.join(d, "ro"))
    os.chmod(os.path.join(d, "ro"), 0o500)


def input_inodes(paths):
    """(device, inode) of every file the command reads: named files, the
    trace files of named directories and globs, and their .idx sidecars."""
    found = []
    for p in paths:
        if os.path.isdir(p):
            found += [os.path.join(r, f) for r, _, fs in os.walk(p) for f in fs]
        elif any(c in p for c in "*?["):
            found += glob.glob(p, recursive=True)
        else:
            found.append(p)
    ids = set()
    for f in found + [f + ".idx" for f in found]:
        try:
            st = os.stat(f)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            ids.add((st.st_dev, st.st_ino))
    return ids


def digest(d, inodes):
    """Content hash of the files in `d` that are one of `inodes` (the inputs)."""
    h = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        st = os.lstat(p)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) not in inodes:
            continue
        with open(p, "rb") as f:
            h[name] = hashlib.sha256(f.read()).hexdigest()
    return h


def vocabulary(d):
    j = lambda *p: os.path.join(d, *p)  # noqa: E731
    inputs = [j("a.pfw"), j("b.pfw.gz"), j("hard.pfw"), j("soft.pfw"), d, j("*.pfw"), j("*.pfw*"),
              j("["), j("*.pfw["), j("**", "x"), j("missing.pfw"), j("fifo.pfw"), "/dev/zero", j("sub"),
              "", "-", j("a.pfw") + "\n", j("a b.pfw")]
    outputs = [j("a.pfw"), j("hard.pfw"), j("soft.pfw"), j("b.pfw.gz.idx"), j("b.pfw.gz"), "/dev/full",
               "/dev/null", d, j("sub"), j("nodir", "out.json"), j("ro", "out.json"), j("out.json"),
               j("out.json.gz"), j("out.html"), j("out dir.json"), j("out\nline.json"), j('out"q.json'),
               j("-out.json"), j("out" + "x" * 300 + ".json"), j("o" * 4100), ""]
    numbers = ["0", "-1", "1", "2", "3", "1024", "1025", "4294967297", "1000000000", "abc", "", "1e3", "0x10",
               " 2", "99999999999999999999"]
    return inputs, outputs, numbers


def command_line(rng, exe, inputs, outputs, numbers):
    cmd = rng.choice(["summary", "merge", "report", "io", "diff", "summary", "merge", "bogus"])
    argv = [exe, cmd]
    for _ in range(rng.randint(0, 3)):
        opt = rng.choice(["--threads", "--top", "--max-line-mib", "--max-document-mib", "--by", "--format",
                          "--sort", "--bin-ms", "--small-bytes", "--epoch-ts", "--no-progress", "--tree",
                          "--steps"])
        argv.append(opt)
        if opt in ("--by",):
            argv.append(rng.choice(["name", "module,phase", "args.step", "step", "nope", "", "args."]))
        elif opt == "--format":
            argv.append(rng.choice(["json", "csv", "table", "xml", ""]))
        elif opt == "--steps":
            argv.append(rng.choice(["1:", ":-1", "0", "-1", ":", "2:3", "a:b", "1:2:3", "", " 1",
                                    "99999999999999999999:", "-9223372036854775808:", "9223372036854775807"]))
        elif opt == "--sort":
            argv.append(rng.choice(["self", "total", "x"]))
        elif opt not in ("--epoch-ts", "--no-progress", "--tree"):
            argv.append(rng.choice(numbers))
    out = None
    if cmd in ("merge", "report") or rng.random() < 0.4:
        out = rng.choice(outputs)
        argv += ["-o", out] if rng.random() < 0.9 else ["-o"]
    paths = rng.sample(inputs, rng.randint(0 if rng.random() < 0.05 else 1, 3))
    argv += paths
    rng.shuffle(argv[2:])  # options and paths in any order
    return argv, out, paths


def check_one(argv, out, d, inodes, pre_existing, timeout):
    before = digest(d, inodes)
    env = dict(os.environ, LC_ALL="C")
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"hung (> {timeout} s)"
    problems = []
    if p.returncode not in (0, 1, 2):
        problems.append(f"exit status {p.returncode}")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == 2 and err.count("\n") > 2:
        problems.append(f"{err.count(chr(10))} lines on stderr")
    for bad in ("terminate called", "Assertion", "AddressSanitizer", "runtime error", "std::"):
        if bad in err:
            problems.append(f"stderr has {bad!r}")
    if digest(d, inodes) != before:
        problems.append("an input changed")
    leftovers = [n for n in os.listdir(d) if ".tmp-" in n]
    if leftovers:
        problems.append(f"temporary files left: {leftovers}")
    if p.returncode == 2 and out and out.startswith(d) and os.path.dirname(out) == d.rstrip("/") \
            and os.path.basename(out) not in pre_existing and os.path.lexists(out) and not os.path.isdir(out):
        problems.append(f"a failed run left {out!r}")
    if problems:
        return "; ".join(problems) + f" ({time.monotonic() - t0:.1f} s)\nstderr: {err[:500]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    runs = failures = 0
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline:
        # Fresh inputs for every run: a run may rightly overwrite a file that
        # is not one of its own inputs.
        d = tempfile.mkdtemp(prefix="dft-cli-fuzz-")
        try:
            write_inputs(d)
            inputs, outputs, numbers = vocabulary(d)
            argv, out, paths = command_line(rng, a.exe, inputs, outputs, numbers)
            problem = check_one(argv, out, d, input_inodes(paths), set(os.listdir(d)), timeout=20)
            runs += 1
            if problem:
                failures += 1
                print(f"FAIL: {argv[1:]!r}\n  {problem}", file=sys.stderr)
        finally:
            os.chmod(os.path.join(d, "ro"), 0o700)
            shutil.rmtree(d, ignore_errors=True)
    print(f"cli_args_fuzz: {runs} command lines, {failures} failed (seed {a.seed})")
    return 1 if failures or runs == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
