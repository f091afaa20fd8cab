"""dftracer.python.torch.trace_handler: torch.profiler's events in our
trace, cat PP, on our clock -- each profiler op lands inside the region that
was open when it ran."""
from trace_reader import complete_events, read_trace, trace_files


def test_profiler_ops_land_inside_the_open_region(run_python, trace_dir):
    run_python("""
import os, time, torch
from dftracer.python import dftracer, dft_fn
from dftracer.python.torch import trace_handler
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "t.pfw"), None, -1)
x = torch.randn(64, 64)
time.sleep(0.2)  # the profiler starts well after tracing did
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                            on_trace_ready=trace_handler):
    for i in range(3):
        with dft_fn("app", f"region{i}"):
            y = torch.mm(x, x)
            time.sleep(0.01)
            y = torch.relu(y)
        time.sleep(0.01)
log.finalize()
""", env={"DFTRACER_ENABLE": "1", "TRACE_DIR": trace_dir})
    files = trace_files(trace_dir)
    assert len(files) == 1
    events = complete_events(read_trace(files[0]))
    pp = [e for e in events if e["cat"] == "PP"]
    regions = sorted((e for e in events if e["cat"] == "app"), key=lambda e: e["ts"])
    assert len(regions) == 3
    mm = sorted((e for e in pp if e["name"] == "aten::mm"), key=lambda e: e["ts"])
    relu = sorted((e for e in pp if e["name"] == "aten::relu"), key=lambda e: e["ts"])
    assert len(mm) == 3 and len(relu) == 3, sorted({e["name"] for e in pp})
    for region, ops in zip(regions, zip(mm, relu)):
        for op in ops:
            # 1 us of slack: whole-microsecond times floor both ends
            assert region["ts"] - 1 <= op["ts"] and op["ts"] + op["dur"] <= region["ts"] + region["dur"] + 1, \
                (region, op)
    args = mm[0]["args"]
    for key in ("device", "cpu_memory", "is_remote", "device_memory_usage", "input_size",
                "total_cpu_percent", "total_device_percent"):
        assert key in args, args
    assert args["input_size"] == 4  # two 2-d inputs


def test_handler_with_tracing_off_writes_nothing(run_python, tmp_path):
    proc = run_python("""
import torch
from dftracer.python.torch import trace_handler
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], on_trace_ready=trace_handler):
    torch.mm(torch.randn(4, 4), torch.randn(4, 4))
print("ok")
""", env={"DFTRACER_ENABLE": "0"})
    assert proc.stdout.strip() == "ok"
    assert not trace_files(str(tmp_path))
