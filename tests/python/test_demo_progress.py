"""scripts/demo.sh shows the package build's progress instead of minutes of
silence: pip -v's ninja step lines are cut to one line per 10 %
(scripts/build_progress.awk), everything else in the log is left out."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWK = os.path.join(ROOT, "scripts", "build_progress.awk")


def test_build_log_is_cut_to_one_progress_line_per_ten_percent():
    log = ["Processing /work/dftracer", "  Preparing metadata (pyproject.toml): started", "*** Configuring CMake..."]
    log += [f"  [{i}/237] Building CXX object src/x{i}.cpp.o" for i in range(1, 238)]
    log += ["warning: something long", "  Successfully built dftracer"]
    out = subprocess.run(["awk", "-f", AWK], input="\n".join(log) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert 10 <= len(out) <= 11, out
    assert all(line.startswith("demo:   build step ") for line in out), out
    assert out[0] == "demo:   build step 24 of 237 (10%)"
    assert out[-1] == "demo:   build step 237 of 237 (100%)"


def test_demo_streams_the_build_through_the_progress_filter():
    with open(os.path.join(ROOT, "scripts", "demo.sh")) as f:
        demo = f.read()
    assert "pip install -v" in demo and "scripts/build_progress.awk" in demo
    assert "pip install -q --no-build-isolation" not in demo  # the silent build
    for stage in ("[1/4]", "[2/4]", "[3/4]", "[4/4]"):
        assert f"demo: {stage}" in demo
