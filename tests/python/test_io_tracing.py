"""I/O tracing in FUNCTION mode: `import dftracer` with
DFTRACER_ENABLE=1 patches the process's POSIX/STDIO calls, and the trace
holds them as POSIX/STDIO events with fhash/size/ret/fd, each path named
once by an FH record. Every test runs a real program and reads its trace
files back; durations are never compared exactly."""
import os

import pytest

from trace_reader import read_trace, trace_files

IO_CATS = ("POSIX", "STDIO")
READS = ("read", "pread", "pread64", "readv", "fread")
WRITES = ("write", "pwrite", "pwrite64", "writev", "fwrite")


def traced_env(trace_dir, data_dir, **more):
    env = {"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": os.path.join(trace_dir, "io"),
           "DFTRACER_DATA_DIR": str(data_dir)}
    env.update(more)
    return env


def only_file(trace_dir):
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    return read_trace(files[0])


def io_events(events):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in IO_CATS]


def file_hashes(events):
    """{path: fhash} from the FH records; a path named twice fails."""
    out = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "FH":
            path = e["args"]["name"]
            assert path not in out or out[path] == e["args"]["value"], f"FH twice: {path}"
            out[path] = e["args"]["value"]
    return out


def bytes_moved(events, fhash, calls):
    return sum(e["args"]["ret"] for e in events
               if e["name"] in calls and e["args"].get("fhash") == fhash and e["args"].get("ret", 0) > 0)


def data_dir_with_a_link_out(tmp_path, size):
    """<tmp>/data (the DFTRACER_DATA_DIR) holding `link`, a symlink to <tmp>/elsewhere (outside
    it), where f.bin holds `size` bytes. Returns (data, elsewhere)."""
    data = tmp_path / "data"
    data.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "f.bin").write_bytes(b"x" * size)
    (data / "link").symlink_to(elsewhere)
    return data, elsewhere


def test_dot_dot_paths_are_normalised_for_fhash_and_data_dir(run_python, trace_dir, tmp_path):
    """"data/sub/../f.bin", "data//f.bin" and "data/f.bin" name one file: one FH record,
    one fhash; "data/../outside.bin" is not under DFTRACER_DATA_DIR=data."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "f.bin").write_bytes(b"x" * 3000)
    (tmp_path / "outside.bin").write_bytes(b"y" * 100)
    run_python(f"""
import dftracer
for p in ("data/sub/../f.bin", "{data}//./f.bin", "data/f.bin"):
    with open(p, "rb") as f:
        assert len(f.read()) == 3000
with open("data/../outside.bin", "rb") as f:
    f.read()
""", env=traced_env(trace_dir, data))
    events = only_file(trace_dir)
    fh = file_hashes(events)
    path = str(data / "f.bin")
    assert set(fh) == {path}, fh  # no spelling of the path but the normal one, and nothing outside
    io = io_events(events)
    assert bytes_moved(io, fh[path], READS) == 9000
    assert {e["args"]["fhash"] for e in io} == {fh[path]}


def test_openat_relative_to_a_directory_descriptor_is_traced_by_its_full_path(run_python, trace_dir, tmp_path):
    """os.open(name, dir_fd=d) is openat(d, name): traced under DFTRACER_DATA_DIR by the
    directory's path joined with the name, the same fhash as opening the full path."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "f.bin").write_bytes(b"x" * 2000)
    (tmp_path / "outside.bin").write_bytes(b"y" * 10)
    run_python(f"""
import os
import dftracer
d = os.open("{data}", os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("sub/f.bin", os.O_RDONLY, dir_fd=d)
assert len(os.read(fd, 5000)) == 2000
os.close(fd)
with open("{data}/sub/f.bin", "rb") as f:
    f.read()
fd = os.open("../outside.bin", os.O_RDONLY, dir_fd=d)   # leaves DFTRACER_DATA_DIR
os.read(fd, 100)
os.close(fd)
os.close(d)
""", env=traced_env(trace_dir, data))
    events = only_file(trace_dir)
    fh = file_hashes(events)
    path = str(data / "sub" / "f.bin")
    assert path in fh and str(tmp_path / "outside.bin") not in fh, fh
    io = io_events(events)
    opens = [e for e in io if e["name"].startswith("open") and e["args"]["fhash"] == fh[path]]
    assert len(opens) == 2, opens  # the dir_fd open and the full-path open: one file
    assert bytes_moved(io, fh[path], READS) == 4000


def test_a_data_dir_named_through_a_symlink_traces_relative_and_dir_fd_opens(run_python, trace_dir, tmp_path):
    """DFTRACER_DATA_DIR=<tmp>/data, a symlink to <tmp>/real: an open relative to a working
    directory entered through the link (getcwd answers the real path) and an open relative
    to a directory descriptor (its /proc name is the real path) are traced under the
    prefix's name, one file with the direct open's fhash."""
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "f.bin").write_bytes(b"x" * 1500)
    data = tmp_path / "data"
    data.symlink_to(real)
    run_python(f"""
import os
import dftracer
with open("{data}/sub/f.bin", "rb") as f:                       # direct, through the link
    assert len(f.read()) == 1500
d = os.open("{data}", os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("sub/f.bin", os.O_RDONLY, dir_fd=d)                # *at: /proc names the real dir
assert len(os.read(fd, 5000)) == 1500
os.close(fd)
os.close(d)
os.chdir("{data}/sub")                                          # getcwd answers the real dir
with open("f.bin", "rb") as f:
    assert len(f.read()) == 1500
""", env=traced_env(trace_dir, data))
    events = only_file(trace_dir)
    fh = file_hashes(events)
    path = str(data / "sub" / "f.bin")
    assert path in fh, fh
    # the directory, its subdirectory (chdir) and the file; never the real path's spelling
    assert set(fh) == {str(data), str(data / "sub"), path}, fh
    io = io_events(events)
    opens = [e for e in io if e["name"].startswith("open") and e["args"]["fhash"] == fh[path]]
    assert len(opens) == 3, opens
    assert bytes_moved(io, fh[path], READS) == 4500


def test_a_directory_entered_through_a_symlink_below_the_data_dir_keeps_the_programs_name(
        run_python, trace_dir, tmp_path):
    """<tmp>/data/link is a symlink to <tmp>/elsewhere, outside DFTRACER_DATA_DIR=<tmp>/data.
    After os.chdir into the link (absolute, then relative), getcwd answers <tmp>/elsewhere; a
    relative open there is traced as the program names it, <tmp>/data/link/f.bin, with the
    direct open's fhash. A chdir("..") out of the link lands physically in <tmp>, not in
    <tmp>/data as the text says: there the kernel's name is kept, so elsewhere/f.bin (outside
    DATA_DIR by either name) is not traced."""
    data, elsewhere = data_dir_with_a_link_out(tmp_path, 700)
    run_python(f"""
import os
import dftracer
def read(p):
    with open(p, "rb") as f:
        assert len(f.read()) == 700
read("{data}/link/f.bin")       # direct: the string is under DATA_DIR
os.chdir("{data}/link")         # getcwd: {elsewhere}
read("f.bin")
os.chdir("..")                  # physically {tmp_path}
assert os.getcwd() == "{tmp_path}", os.getcwd()
read("elsewhere/f.bin")         # outside DATA_DIR by any name
os.chdir("{data}")
os.chdir("link")                # relative, through the link again
read("f.bin")
""", env=traced_env(trace_dir, data))
    events = only_file(trace_dir)
    fh = file_hashes(events)
    path = str(data / "link" / "f.bin")
    assert path in fh, fh
    # Named by getcwd, the open after ".." is outside DATA_DIR; named by the text it
    # would be <tmp>/data/elsewhere/f.bin, inside it (and not the file that was opened).
    assert str(data / "elsewhere" / "f.bin") not in fh and str(elsewhere / "f.bin") not in fh, fh
    io = io_events(events)
    opens = [e for e in io if e["name"].startswith("open")]
    assert len(opens) == 3 and all(e["args"]["fhash"] == fh[path] for e in opens), opens
    assert bytes_moved(io, fh[path], READS) == 2100


def test_a_directory_descriptor_through_a_symlink_below_the_data_dir_keeps_the_programs_name(
        run_python, trace_dir, tmp_path):
    """<tmp>/data/link -> <tmp>/elsewhere (outside DFTRACER_DATA_DIR=<tmp>/data), opened as a
    directory descriptor d. The kernel names d <tmp>/elsewhere (/proc/self/fd/d, and getcwd
    after fchdir(d)); the hooks keep the name the program opened it by, so
    os.open("f.bin", dir_fd=d), and open("f.bin") after os.fchdir(d), are traced as
    <tmp>/data/link/f.bin, with the direct open's fhash. os.fwalk and shutil.rmtree work this
    way. A second directory descriptor of the same link finds the kept name too."""
    data, elsewhere = data_dir_with_a_link_out(tmp_path, 500)
    run_python(f"""
import os
import dftracer
def read_fd(fd):
    assert len(os.read(fd, 1000)) == 500
    os.close(fd)
read_fd(os.open("{data}/link/f.bin", os.O_RDONLY))             # direct
d = os.open("{data}/link", os.O_RDONLY | os.O_DIRECTORY)
assert os.readlink(f"/proc/self/fd/{{d}}") == "{elsewhere}"    # the kernel's name
read_fd(os.open("f.bin", os.O_RDONLY, dir_fd=d))               # openat(d, "f.bin")
os.fchdir(d)
assert os.getcwd() == "{elsewhere}", os.getcwd()
with open("f.bin", "rb") as f:                                  # relative, after fchdir
    assert len(f.read()) == 500
os.chdir("/")
os.close(d)
d2 = os.open("{data}/link", os.O_RDONLY)                        # again: the kept name
read_fd(os.open("f.bin", os.O_RDONLY, dir_fd=d2))
os.close(d2)
""", env=traced_env(trace_dir, data))
    events = only_file(trace_dir)
    fh = file_hashes(events)
    path = str(data / "link" / "f.bin")
    assert path in fh, fh
    assert str(elsewhere / "f.bin") not in fh, fh
    io = io_events(events)
    opens = [e for e in io if e["name"].startswith("open") and e["args"]["fhash"] == fh[path]]
    assert len(opens) == 4, [e for e in io if e["name"].startswith("open")]
    assert bytes_moved(io, fh[path], READS) == 2000


def test_a_program_started_in_a_symlinked_directory_names_it_as_the_shell_did(trace_dir, tmp_path):
    """`cd <tmp>/data/link && python ...` (link -> <tmp>/elsewhere, outside DATA_DIR): the
    shell's $PWD names the start directory through the link, so a relative open is traced as
    <tmp>/data/link/f.bin. A $PWD that is not the working directory (stale: <tmp>/data, where
    believing it would trace <tmp>/data/f.bin) is not believed: getcwd's name, outside
    DATA_DIR, is kept and nothing is traced."""
    from conftest import run_python_in
    data, elsewhere = data_dir_with_a_link_out(tmp_path, 300)
    link = data / "link"
    code = """
import dftracer
with open("f.bin", "rb") as f:
    assert len(f.read()) == 300
"""
    run_python_in(link, code, env=traced_env(trace_dir, data, PWD=str(link)))
    fh = file_hashes(only_file(trace_dir))
    path = str(link / "f.bin")
    assert path in fh, fh
    for f in trace_files(trace_dir):
        os.remove(f)
    run_python_in(link, code, env=traced_env(trace_dir, data, PWD=str(data)))
    events = [e for f in trace_files(trace_dir) for e in read_trace(f)]
    assert not io_events(events), io_events(events)


def test_open_read_is_traced_with_fhash_size_and_ret(run_python, trace_dir, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "sample.bin").write_bytes(b"x" * 10000)
    (tmp_path / "outside.bin").write_bytes(b"y" * 100)
    run_python("""
import dftracer
from dftracer.python import io_tracing
assert io_tracing.mode() == "function", io_tracing.mode()
with open("data/sample.bin", "rb") as f:
    assert len(f.read()) == 10000
with open("outside.bin", "rb") as f:   # not under DFTRACER_DATA_DIR
    f.read()
""", env=traced_env(trace_dir, data))
    events = only_file(trace_dir)
    fh = file_hashes(events)
    path = str(data / "sample.bin")
    assert path in fh and str(tmp_path / "outside.bin") not in fh
    io = io_events(events)
    assert io and all(e["args"]["fhash"] == fh[path] for e in io), "only the data file is traced"
    names = [e["name"] for e in io]
    assert names[0].startswith("open") and names[-1] == "close"
    assert bytes_moved(io, fh[path], READS) == 10000
    opened_fd = io[0]["args"]["ret"]
    assert all(e["args"]["fd"] == opened_fd for e in io)
    for e in io:
        if e["name"] == "read":
            assert e["args"]["size"] >= e["args"]["ret"] >= 0
        assert e["dur"] >= 0


def test_disable_io_records_no_io(run_python, trace_dir, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "sample.bin").write_bytes(b"x" * 1000)
    run_python("""
import dftracer
from dftracer.python import dft_fn, io_tracing
assert io_tracing.mode() == "off"
with dft_fn("app", "step"):
    open("data/sample.bin", "rb").read()
""", env=traced_env(trace_dir, data, DFTRACER_DISABLE_IO="1"))
    events = only_file(trace_dir)
    assert io_events(events) == []
    assert "step" in [e["name"] for e in events if e.get("ph") == "X"], "the rest is still traced"


def test_untraced_import_patches_nothing(run_python, tmp_path):
    run_python("""
import dftracer
from dftracer.python import io_tracing
assert io_tracing.mode() == "off"
""", env={"DFTRACER_ENABLE": None})


def test_numpy_load_and_save(run_python, trace_dir, tmp_path):
    np = pytest.importorskip("numpy")
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "given.npy", np.arange(1000, dtype=np.int64))
    run_python("""
import numpy as np
import dftracer
assert np.load("data/given.npy").sum() == 499500
np.save("data/made.npy", np.ones(500))
""", env=traced_env(trace_dir, data))
    events = io_events(only_file(trace_dir))
    fh = file_hashes(only_file(trace_dir))
    given, made = str(data / "given.npy"), str(data / "made.npy")
    assert bytes_moved(events, fh[given], READS) >= os.path.getsize(given)
    assert bytes_moved(events, fh[made], WRITES) == os.path.getsize(made)


def test_torch_save_and_load(run_python, trace_dir, tmp_path):
    pytest.importorskip("torch")
    data = tmp_path / "data"
    data.mkdir()
    run_python("""
import torch
import dftracer
t = torch.arange(4096, dtype=torch.float32)
torch.save(t, "data/ckpt.pt")
assert torch.equal(torch.load("data/ckpt.pt"), t)
""", env=traced_env(trace_dir, data), timeout=300)
    all_events = only_file(trace_dir)
    events = io_events(all_events)
    fh = file_hashes(all_events)
    ckpt = str(data / "ckpt.pt")
    assert ckpt in fh
    size = os.path.getsize(ckpt)
    assert bytes_moved(events, fh[ckpt], WRITES) == size
    assert bytes_moved(events, fh[ckpt], READS) >= 4096 * 4  # at least the tensor's bytes
    opens = [e for e in events if e["name"].startswith(("open", "fopen")) and e["args"]["fhash"] == fh[ckpt]]
    assert len(opens) >= 2  # one for save, one for load


DATALOADER = """
import os
import torch
from torch.utils.data import DataLoader, Dataset
import dftracer

class Files(Dataset):
    def __init__(self, root):
        self.paths = sorted(os.path.join(root, n) for n in os.listdir(root))
    def __len__(self):
        return len(self.paths)
    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return torch.tensor(len(f.read()))

def main():
    loader = DataLoader(Files("data"), batch_size=2, num_workers=2)
    total = 0
    for batch in loader:
        total += int((batch * 2).sum()) // 2   # ops in the main process
    print("total", total)

if __name__ == "__main__":
    main()
"""


def test_dataloader_workers_trace_their_own_reads(run_python, trace_dir, tmp_path):
    pytest.importorskip("torch")
    data = tmp_path / "data"
    data.mkdir()
    sizes = {}
    for i in range(8):
        p = data / f"sample{i}.bin"
        p.write_bytes(os.urandom(1000 + 517 * i))
        sizes[str(p)] = p.stat().st_size
    run_python(DATALOADER, env=traced_env(trace_dir, data, DFTRACER_TRACE_EAGER="1"), timeout=300)
    files = trace_files(trace_dir)
    assert len(files) == 3, files
    per_file = {f: read_trace(f) for f in files}
    reads_samples = {f for f, ev in per_file.items() if set(file_hashes(ev)) & set(sizes)}
    main = [f for f in files if f not in reads_samples]
    assert len(main) == 1, "the main process reads no sample"
    assert any(e.get("cat") == "aten" for e in per_file[main[0]]), "the main process records its ops"
    workers = sorted(reads_samples)
    read_by = {}  # sample path -> bytes read, summed over the workers
    for f in workers:
        events = per_file[f]
        fh = file_hashes(events)
        pid = events[0]["pid"]
        assert all(e["pid"] == pid for e in events)
        mine = {h: p for p, h in fh.items() if p in sizes}
        assert mine, f"worker {f} read no sample"
        for path_hash, path in mine.items():
            read_by[path] = read_by.get(path, 0) + bytes_moved(io_events(events), path_hash, READS)
    assert read_by == sizes, "each sample read once, whole, by one worker"
    # One timeline: the workers' reads fall inside the main process's span.
    main_x = [e for e in per_file[main[0]] if e.get("ph") == "X"]
    lo = min(e["ts_ns"] for e in main_x)
    hi = max(e["ts_ns"] + e["dur_ns"] for e in main_x)
    for f in workers:
        for e in io_events(per_file[f]):
            assert lo <= e["ts_ns"] <= hi
