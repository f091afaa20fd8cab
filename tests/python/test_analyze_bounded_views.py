"""The `memory` and `device` views on inputs built to break them: times near
the int64 limit (sums and differences must saturate, never wrap into garbage)
and counter tracks far longer than the chart, whose samples the analyzer must
not all keep."""
import json
import os
import zlib

from analyzer_cli import analyzer_json, analyzer_peak_rss_kib

INT64_MAX = 2**63 - 1


def _write(path, events):
    with open(path, "w") as f:
        f.write("[\n")
        for e in events:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")


def _json(*args):
    return analyzer_json(*args)




def test_device_busy_time_of_kernels_ending_past_int64_is_held_not_wrapped(tmp_path):
    # A kernel from 9e18 ns lasting 9e18 ns ends past INT64_MAX; one inside it
    # must merge into it. Busy time can be no more than INT64_MAX - its start.
    def kernel(ts, dur, corr):
        return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                "args": {"device": 0, "stream": 7, "correlation": corr}}
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
              "args": {"correlation": 1}}
    path = tmp_path / "hostile.json"
    _write(path, [launch, kernel(9000000000000000, 9000000000000000, 1), kernel(9100000000000000, 1, 2),
                  kernel(1000000000000000, 1, 3)])
    r = _json("device", str(path))
    assert r["device_events"] == 3
    assert 0 <= r["busy_us"] * 1000 <= INT64_MAX - 1000000000000000000
    assert r["launch_delay_mean_us"] >= 0


def test_memory_blocks_near_int64_times_are_held_by_the_events_around_them(tmp_path):
    # A block allocated at 9e18 ns inside a module event that ends past
    # INT64_MAX: the event's end saturates, so it still encloses the block.
    def sample(ts, v):
        return {"ph": "C", "cat": "memory", "name": "memory", "pid": 7, "tid": 7, "ts": ts, "args": {"cpu": v}}
    block = {"ph": "i", "cat": "memory", "name": "alloc", "pid": 7, "tid": 7, "ts": 9000000000000000,
             "args": {"addr": 4096, "size": 100, "total": 100, "op": "aten::huge"}}
    module = {"ph": "X", "cat": "dynamo", "name": "function.huge", "pid": 7, "tid": 7, "ts": 8950000000000000,
              "dur": 9000000000000000, "args": {"module": "big"}}
    path = tmp_path / "hostile.pfw"
    _write(path, [sample(8900000000000000, 0), block, module, sample(9000000000000000, 100)])
    m = _json("memory", str(path))
    assert m["series"][0]["peak_bytes"] == 100
    p = m["peaks"][0]
    assert (p["peak_bytes"], p["traced_bytes"], p["before_trace_bytes"]) == (100, 100, 0)
    assert p["by_module"] == [{"key": "big", "blocks": 1, "bytes": 100}]


def test_memory_of_a_long_counter_track_keeps_the_exact_peak_in_bounded_memory(tmp_path):
    # 8 series of 1M samples each (16 bytes a sample if kept: 128 MiB), with
    # steps; the peak of each series in one sample of the middle step.
    devices = ["cpu"] + ["cuda:%d" % i for i in range(7)]
    n, step = 1_000_000, 100_000
    path = tmp_path / "long.pfw.gz"
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(z.compress(b"[\n"))
        for s in range(0, n, step):
            f.write(z.compress(b'{"name":"train_step","cat":"app","pid":7,"tid":7,"ts":%d,"dur":%d,"ph":"X"}\n'
                               % (1000 + s * 10, step * 10 - 5)))
        for i in range(n):
            v = 1000 + i % 977 + (50000 if i == n // 2 + 3 else 0)
            args = ",".join('"%s":%d' % (d, v + k) for k, d in enumerate(devices))
            f.write(z.compress(b'{"name":"memory","cat":"memory","pid":7,"tid":7,"ts":%d,"ph":"C","args":{%s}}\n'
                               % (1000 + i * 10, args.encode())))
        f.write(z.flush())
    m = _json("memory", str(path))
    assert [s["samples"] for s in m["series"]] == [n] * 8
    peak_ts_us = 1000 + (n // 2 + 3) * 10
    for k, s in enumerate(m["series"]):
        assert s["peak_bytes"] == 1000 + (n // 2 + 3) % 977 + 50000 + devices.index(s["device"])
        assert s["peak_ts_us"] == peak_ts_us
    cpu_steps = [s for s in m["steps"] if s["device"] == "cpu"]
    assert len(cpu_steps) == n // step
    assert max(s["peak_bytes"] for s in cpu_steps) == m["series"][0]["peak_bytes"]
    assert cpu_steps[5]["peak_ts_us"] == peak_ts_us
    assert cpu_steps[6]["start_bytes"] == 1000 + (6 * step - 1) % 977
    # No more than reading the file costs (the summary's resident size) and a little.
    reading = analyzer_peak_rss_kib(["summary", "--no-progress", str(path)])
    assert analyzer_peak_rss_kib(["memory", "--no-progress", str(path)]) < reading + (32 << 10)
