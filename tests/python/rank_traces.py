"""Writes the trace files of a made-up torchrun job in the #16 trace contract
(docs/analyzer.md, "Ranks"), with known arrivals, so the cross-rank analysis can
be checked exactly: one file per rank with its rank metadata and clock offset,
a `train_step` region per step on the main thread, collectives (all_reduce with
a DDP bucket, broadcast) and a send/recv pair per step, each with its `seq`;
stragglers are injected delays, and a rank can be missing or cut short.

Times are integer nanoseconds on rank 0's clock; each file is written on its
own clock (aligned - clock_offset_ns), with three decimals, as the tracer does.
"""
import gzip
import json
import os

BASE_NS = 1_700_000_000_000_000_000  # epoch ns of the job's start
STEP_NS = 1_000_000_000              # one step a second
COLLECTIVES = (("all_reduce", 8 << 20), ("broadcast", 4096))


def _us(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


class Job:
    """What was written, for the tests' expectations.

    arrivals[(group, name, seq)][rank] = (arrival_ns, dur_ns), aligned to rank 0's clock;
    steps_of[(group, name, seq)] = step.
    """

    def __init__(self):
        self.paths = {}
        self.arrivals = {}
        self.steps_of = {}

    def expected_waits(self, key):
        arr = self.arrivals[key]
        last = max(a for a, _ in arr.values())
        return {r: min(last - a, d) for r, (a, d) in arr.items()}

    def expected_last(self, key):
        arr = self.arrivals[key]
        last = max(a for a, _ in arr.values())
        return min(r for r, (a, _) in arr.items() if a == last)


def write_job(directory, world=4, steps=3, offsets_ns=None, uncertainty_ns=None, delays_ns=None, missing=(),
              cut_after_step=None, same_pid=False, gz=False):
    """offsets_ns: {rank: clock_offset_ns} (a rank not in it writes no offset metadata);
    delays_ns: {(step, rank): ns} late arrival at that step's collectives; missing: ranks
    that write no file; cut_after_step: {rank: step} the file ends after that step with no
    `end` event (killed); same_pid: every rank has pid 4242 on its own host."""
    offsets_ns = {r: (0 if r == 0 else 5_000_123 * r) for r in range(world)} if offsets_ns is None else offsets_ns
    uncertainty_ns = {r: (0 if r == 0 else 2_500 + r) for r in range(world)} if uncertainty_ns is None else uncertainty_ns
    delays_ns = delays_ns or {}
    cut_after_step = cut_after_step or {}
    job = Job()
    lines = {r: [] for r in range(world)}
    pid = {r: 4242 if same_pid else 1000 + r for r in range(world)}

    def event(rank, name, cat, ts_ns, dur_ns, args=None):
        local = ts_ns - offsets_ns.get(rank, 0)
        ev = {"id": len(lines[rank]), "name": name, "cat": cat, "pid": pid[rank], "tid": pid[rank],
              "ts": "@TS@", "dur": "@DUR@", "ph": "X"}
        if args:
            ev["args"] = args
        text = json.dumps(ev).replace('"@TS@"', _us(BASE_NS + local)).replace('"@DUR@"', _us(dur_ns))
        lines[rank].append((ts_ns, text))

    for s in range(steps):
        start = s * STEP_NS
        seq = s * len(COLLECTIVES)
        t = start + 1_000_000
        for c, (name, nbytes) in enumerate(COLLECTIVES):
            key = ("0", name, seq + c)
            arrive = {r: t + 7_000 * r + 13 * c + delays_ns.get((s, r), 0) for r in range(world)}
            done = max(arrive.values()) + 50_000 + nbytes // 1000
            job.arrivals[key] = {r: (arrive[r], done - arrive[r]) for r in range(world)}
            job.steps_of[key] = s
            for r in range(world):
                args = {"bytes": nbytes, "dtype": "float32", "group_size": world, "group": "0", "seq": seq + c,
                        "step": s}
                if name == "all_reduce":
                    args["ddp_bucket"] = 0
                event(r, name, "comm", arrive[r], done - arrive[r], args)
            t = done + 100_000
        # rank 0 sends to rank 1 (p2p seq = step): the receiver posts 30 us later.
        if world > 1:
            snd, rcv = t, t + 30_000
            done = rcv + 20_000
            job.arrivals[("p2p", 0, 1, s)] = {0: (snd, done - snd), 1: (rcv, done - rcv)}
            job.steps_of[("p2p", 0, 1, s)] = s
            event(0, "send", "comm", snd, done - snd, {"bytes": 64, "group": "0", "seq": s, "peer": 1, "step": s})
            event(1, "recv", "comm", rcv, done - rcv, {"bytes": 64, "group": "0", "seq": s, "peer": 0, "step": s})
        for r in range(world):
            event(r, "train_step", "app", start, 900_000_000, {"step": s})

    for r in range(world):
        if r in missing:
            continue
        meta = []

        def m(key, value):
            meta.append(json.dumps({"id": 0, "name": key, "cat": "dftracer", "pid": pid[r], "tid": pid[r],
                                    "ph": "M", "args": {"hhash": "ab", "name": key, "value": value}}))
        m("process_name", f"rank {r} (pid {pid[r]})")
        for key, value in (("rank", r), ("local_rank", r % 2), ("world_size", world), ("group_rank", r // 2),
                           ("hostname", f"node-{r}" if same_pid else f"node-{r // 2}")):
            m(key, value)
        if r in offsets_ns:
            m("clock_offset_ns", offsets_ns[r])
            m("clock_offset_uncertainty_ns", uncertainty_ns.get(r, 0))
        body = [text for ts, text in lines[r]
                if r not in cut_after_step or ts < (cut_after_step[r] + 1) * STEP_NS]
        text = "[\n" + "\n".join(meta + body) + "\n"
        if r not in cut_after_step:
            text += json.dumps({"id": 999, "name": "end", "cat": "dftracer", "pid": pid[r], "tid": pid[r],
                                "ts": (BASE_NS + steps * STEP_NS) // 1000, "dur": 0, "ph": "X",
                                "args": {"num_events": len(body), "dropped": 0}}) + "\n]\n"
        path = os.path.join(str(directory), f"job-rank{r}-{pid[r]}.pfw" + (".gz" if gz else ""))
        if gz:
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)
        job.paths[r] = path
    return job
