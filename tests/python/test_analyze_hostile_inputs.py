"""The analyzer on hostile inputs: sizes it must not trust, damaged
compressed data beside an intact index, paths and names that must not
change what is read or how much is written."""
import json
import os
import subprocess
import zlib

import pytest

from analyzer_cli import analyzer, analyzer_peak_rss_kib


def _event(name, ts, dur=5, tid=1):
    return json.dumps({"id": 0, "name": name, "cat": "c", "pid": 1, "tid": tid, "ts": ts, "dur": dur,
                       "ph": "X"}).encode() + b"\n"


def _run(args):
    """(exit status, stdout, stderr) of the analyzer run with `args`."""
    p = subprocess.run([analyzer()] + args, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr




@pytest.mark.parametrize("first_member_alone", [False, True])
def test_a_huge_first_line_is_skipped_and_counted_with_bounded_memory(tmp_path, first_member_alone):
    # A 256 MiB line opening a .pfw.gz (it compresses to ~250 KB) was taken
    # for a whole JSON document: held whole (twice), then no event read and
    # nothing counted as skipped. It is one oversized line, like any other.
    path = tmp_path / "t.pfw.gz"
    with open(path, "wb") as f:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        f.write(c.compress(b'{"name":"'))
        block = b"a" * (1 << 20)
        for _ in range(256):
            f.write(c.compress(block))
        f.write(c.compress(b'","ph":"X","ts":1,"dur":1}\n'))
        if first_member_alone:  # the events in a member of their own
            f.write(c.flush())
            c = zlib.compressobj(6, zlib.DEFLATED, 31)
        f.write(c.compress(b"".join(_event("op", 1000 + i) for i in range(10))))
        f.write(c.flush())
    assert os.path.getsize(path) < 2 << 20
    rc, out, err = _run(["summary", "--format", "json", str(path)])
    assert rc == 0, err
    assert json.loads(out)["complete_events"] == 10
    assert err.strip().splitlines() == ["dftracer-analyze: skipped 1 line or document over the size limit "
                                        "(read 10 events from 1 files)"]
    # The default line limit is 16 MiB: the memory held stays near it, far below the line.
    assert analyzer_peak_rss_kib(["summary", str(path)]) < 120 << 10


def _rank_file(path, rank, world, events):
    pid = 1000 + rank
    lines = ["["]
    for key, value in (("rank", rank), ("local_rank", rank), ("world_size", world), ("group_rank", 0),
                       ("hostname", "node-0"), ("clock_offset_ns", 0), ("clock_offset_uncertainty_ns", 0)):
        lines.append(json.dumps({"id": 0, "name": key, "cat": "dftracer", "pid": pid, "tid": pid, "ph": "M",
                                 "args": {"hhash": "ab", "name": key, "value": value}}))
    end = 0
    for name, cat, ts_us, dur_us, args in events:
        lines.append(json.dumps({"id": len(lines), "name": name, "cat": cat, "pid": pid, "tid": pid, "ts": ts_us,
                                 "dur": dur_us, "ph": "X", "args": args}))
        end = max(end, ts_us + dur_us)
    lines.append(json.dumps({"id": 999, "name": "end", "cat": "dftracer", "pid": pid, "tid": pid, "ts": end,
                             "dur": 0, "ph": "X", "args": {"num_events": len(events), "dropped": 0}}))
    path.write_text("\n".join(lines) + "\n]\n")
    return str(path)


def test_a_rank_that_raised_is_named_not_a_healthy_straggler(tmp_path):
    # Two ranks, three steps of a broadcast then an all_reduce. Rank 1 arrives
    # late in steps 0 and 1; in step 2 rank 0 is 5 ms late at the broadcast,
    # then rank 1 raises: it never enters the all_reduce, where rank 0 waits
    # 3 s until torchrun kills it. Step 2's straggler is rank 1, which ended
    # early, not rank 0 (named before for its 5 ms).
    base = 1_700_000_000_000_000
    ev = {0: [], 1: []}
    for s in range(3):
        t = base + s * 1_000_000
        late = {0: 5_000 if s == 2 else 0, 1: 0 if s == 2 else 1_000}
        for r in (0, 1):
            arrive = t + 100 + late[r]
            done = t + 100 + max(late.values()) + 50
            ev[r].append(("broadcast", "comm", arrive, done - arrive,
                          {"group": "0", "seq": 2 * s, "group_size": 2, "bytes": 64, "step": s}))
        for r in (0, 1):
            if s == 2 and r == 1:
                continue  # raised before the all_reduce
            arrive = t + 10_000 + r * 10
            dur = 3_000_000 if s == 2 else 200
            ev[r].append(("all_reduce", "comm", arrive, dur,
                          {"group": "0", "seq": 2 * s + 1, "group_size": 2, "bytes": 4096, "step": s}))
        for r in (0, 1):
            dur = (3_020_000 if r == 0 else 6_000) if s == 2 else 900_000
            ev[r].append(("train_step", "app", t, dur, {"step": s}))
    files = [_rank_file(tmp_path / f"job-rank{r}.pfw", r, 2, ev[r]) for r in (0, 1)]
    rc, out, err = _run(["ranks", "--format", "json"] + files)
    assert rc == 0, err
    doc = json.loads(out)
    st = {row[0]: dict(zip(doc["stragglers"]["columns"], row)) for row in doc["stragglers"]["rows"]}
    assert [st[s]["straggler"] for s in (0, 1, 2)] == [1, 1, 1], st
    assert st[2]["absent_ranks"] == "1" and st[1]["absent_ranks"] == "", st
    assert st[2]["caused_wait_us"] == pytest.approx(3_000_000)
    assert doc["ended_early"] == [1]
    assert "rank(s) 1 ended early: absent from collectives the other ranks entered, from step 2" in err, err
    rc, out, err = _run(["ranks"] + files)
    assert rc == 0 and "rank(s) 1 ended early" in out, out


def test_a_nul_byte_in_a_path_is_refused_not_truncated(tmp_path):
    import dftracer.analyze as da

    good = tmp_path / "a.pfw"
    good.write_bytes(b"[\n" + _event("op", 1000))
    assert da.summary(str(good))["count"].sum() == 1
    bad = str(good) + "\0junk"  # every system call would read a.pfw
    for call in (lambda: da.summary(bad), lambda: da.files(bad), lambda: da.events(bad),
                 lambda: da._module().expand_inputs([bad])):  # the extension refuses it on its own too
        with pytest.raises(ValueError, match="embedded null byte in path"):
            call()
    out = tmp_path / "m.json"
    with pytest.raises(ValueError, match="embedded null byte in path"):
        da.merge(str(good), str(out) + "\0x")
    with pytest.raises(ValueError, match="embedded null byte in path"):
        da._module().merge([str(good)], str(out) + "\0x", 1)
    assert not out.exists()


def test_text_tables_clip_a_huge_name_so_output_stays_small(tmp_path):
    huge = "n" * 100_000
    paths = []
    for run in ("a", "b"):
        p = tmp_path / f"{run}.pfw"
        p.write_bytes(b"[\n" + b"".join(_event(name, 1000 + 10 * i) for i, name in
                                        enumerate([huge, "short", "mid"] * 3)))
        paths.append(str(p))
    for args in (["diff"] + paths, ["summary", paths[0]], ["summary", "--by", "name,cat", paths[0]]):
        rc, out, err = _run(args)
        assert rc == 0, err
        assert len(out) < 4096, (args, len(out))  # was 400 KB, 100 KB a row
        row = next(line for line in out.splitlines() if line.startswith("nnn"))
        assert row.startswith("n" * 93 + "...  "), row[:120]
        assert "short  " in out and "mid  " in out
    rc, out, err = _run(["summary", "--format", "json", paths[0]])
    assert huge in out  # JSON keeps every name whole
