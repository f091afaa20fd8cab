"""Valid trace files written directly, fast: many small .pfw files and large
multi-member .pfw.gz files with their .idx, in our writer's format (a `[` line,
one event object per line, events written when they end, so children come
before their parents). Used by the Dask/Parquet tests and bench/analyze.

Each thread runs steps; a step holds ops of two phases and a read, every
fourth one of a module file (the runtime's I/O, "other") instead of the data
file; every thread of the large file also has one `epoch` region around all
of it, written last, so nesting spans every gzip member of the file, and the
FH records that name both files come last too (another member range).
"""
import gzip
import os
import random

OPS = ("aten::mm", "aten::add", "aten::relu", "aten::conv2d", "aten::softmax", "aten::layer_norm")
MODULES = ("encoder.layer.0", "encoder.layer.1", "decoder", "head")


def _us(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def _event(name, cat, pid, tid, ts, dur, args):
    a = ",".join(f'"{k}":{v}' for k, v in args.items())
    return (f'{{"id":0,"name":"{name}","cat":"{cat}","pid":{pid},"tid":{tid},"ts":{_us(ts)},'
            f'"dur":{_us(dur)},"ph":"X","args":{{{a}}}}}')


def thread_events(rng, pid, tid, n_events, start_ns, epoch=False):
    """About n_events lines of one thread, in end order (children first)."""
    lines = []
    t = start_ns
    step = 0
    while len(lines) < n_events:
        step_start = t
        t += rng.randrange(500, 3000)
        for phase in ("forward", "backward"):
            for _ in range(rng.randrange(2, 6)):
                op = rng.choice(OPS)
                dur = rng.randrange(1000, 90000)
                args = {"phase": f'"{phase}"', "module": f'"{rng.choice(MODULES)}"', "step": step,
                        "flops": rng.randrange(0, 1 << 20) * 2, "bytes": rng.randrange(0, 1 << 16) * 4,
                        "rank": pid % 4}
                if rng.random() < 0.3:
                    args["shapes"] = '"[[64, 64], [64, 64]]"'
                lines.append(_event(f"function.{op}", "dynamo", pid, tid, t, dur, args))
                t += dur + rng.randrange(0, 2000)
        dur = rng.randrange(2000, 20000)
        fhash = '"00cd"' if step % 4 == 3 else '"00ab"'  # a module file, else the data
        lines.append(_event("read", "POSIX", pid, tid, t, dur, {"size": 4096, "fhash": fhash}))
        t += dur + rng.randrange(0, 500)
        lines.append(_event("train_step", "region", pid, tid, step_start, t - step_start, {"step": step}))
        t += rng.randrange(100, 5000)
        step += 1
    if epoch:
        lines.append(_event("epoch", "region", pid, tid, start_ns, t - start_ns + 7, {"epoch": 0}))
    return lines, t


FILE_NAMES = {"00ab": "/data/train.bin", "00cd": "/usr/lib/python3.11/json/decoder.py"}


def process_lines(seed, pid, n_events, threads=1, epoch=False, rank=None, names=False):
    """The lines of one process's file: the preamble, then its threads' events interleaved
    (with `rank`, the rank metadata halfway through, as a process that joins its group late;
    with `names`, the FH records of FILE_NAMES at the end)."""
    rng = random.Random(seed)
    start = 1_700_000_000_000_000_000 + seed * 1_000_000_000
    head = ["[", f'{{"id":0,"name":"process_name","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                 f'"args":{{"name":"synthetic-{pid}"}}}}']
    per_thread = [thread_events(rng, pid, pid + k, max(1, n_events // threads), start + k * 1000, epoch)[0]
                  for k in range(threads)]
    body = []
    pos = [0] * threads
    while any(pos[k] < len(per_thread[k]) for k in range(threads)):
        k = rng.randrange(threads)
        while pos[k] >= len(per_thread[k]):
            k = (k + 1) % threads
        take = rng.randrange(1, 8)  # threads alternate in runs, as chunks of the writer do
        body.extend(per_thread[k][pos[k]:pos[k] + take])
        pos[k] += take
    if rank is not None:
        body.insert(len(body) // 2, f'{{"id":0,"name":"rank","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                                    f'"args":{{"name":"rank","value":{rank}}}}}')
    if names:
        body += [f'{{"id":0,"name":"FH","cat":"dftracer","pid":{pid},"tid":{pid},"ph":"M",'
                 f'"args":{{"name":"{path}","value":"{h}"}}}}' for h, path in FILE_NAMES.items()]
    return head + body + ["]"]


def write_small_files(directory, n_files, n_events, seed=0, rank_of=None):
    """n_files .pfw files of about n_events events each; returns their paths.
    rank_of(i): the rank metadata of file i (None: none)."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(n_files):
        p = os.path.join(directory, f"trace-app-{10000 + i}.pfw")
        with open(p, "w") as f:
            rank = rank_of(i) if rank_of else None
            f.write("\n".join(process_lines(seed + i, 10000 + i, n_events, rank=rank)) + "\n")
        paths.append(p)
    return paths


def write_multi_member_gz(path, n_events, threads=4, member_lines=2000, seed=7, split_lines=True, rank=None,
                          pid=4242):
    """One .pfw.gz of many gzip members plus its .idx ("offset size raw_size lines").
    With split_lines, some member boundaries fall inside a line (the reader must
    join it), unlike our writer's whole-line chunks."""
    rng = random.Random(seed)
    text = "\n".join(process_lines(seed, pid, n_events, threads=threads, epoch=True, rank=rank, names=True)) + "\n"
    data = text.encode()
    cuts, pos = [], 0
    lines = data.split(b"\n")
    offset_of_line = []
    for ln in lines:
        offset_of_line.append(pos)
        pos += len(ln) + 1
    for k in range(member_lines, len(lines) - 1, member_lines):
        cut = offset_of_line[k]
        if split_lines and rng.random() < 0.3:
            cut += rng.randrange(1, 20)  # inside line k
        cuts.append(cut)
    bounds = [0] + cuts + [len(data)]
    with open(path, "wb") as f, open(path + ".idx", "w") as idx:
        off = 0
        for b, e in zip(bounds, bounds[1:]):
            chunk = data[b:e]
            member = gzip.compress(chunk, compresslevel=1, mtime=0)
            f.write(member)
            idx.write("%d %d %d %d\n" % (off, len(member), len(chunk), chunk.count(b"\n")))
            off += len(member)
    return path
