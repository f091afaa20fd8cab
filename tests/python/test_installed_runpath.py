"""The installed package's shared libraries find each other through $ORIGIN,
never through the build tree they were linked in: the package works after
the build directory is gone and when copied elsewhere.
"""
import glob
import os
import shutil
import subprocess
import sys
import importlib.util

import pytest

import dftracer

PACKAGE_DIR = os.path.dirname(os.path.abspath(dftracer.__file__))
LIB_DIR = os.path.join(PACKAGE_DIR, "lib")


def _installed_libraries():
    """Every ELF shared object of the installed package (the extensions and lib/)."""
    found = glob.glob(os.path.join(PACKAGE_DIR, "*.so")) + glob.glob(os.path.join(LIB_DIR, "*.so*"))
    return sorted(p for p in found if os.path.isfile(p))


def _dynamic(path):
    """{tag: [values]} of the library's dynamic section, read with readelf."""
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    tags = {}
    for line in out.splitlines():
        if "(" not in line or "[" not in line:
            continue
        tag = line.split("(", 1)[1].split(")", 1)[0]
        value = line.split("[", 1)[1].rsplit("]", 1)[0]
        tags.setdefault(tag, []).append(value)
    return tags


def _needs_readelf_and_libraries():
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) not installed")
    if not os.path.isdir(LIB_DIR):
        pytest.skip(f"dftracer imported from {PACKAGE_DIR}, not an installed package")


def _is_cupti_dir(d):
    return bool(glob.glob(os.path.join(d, "libcupti.so*")))


def test_installed_libraries_search_beside_themselves_only():
    _needs_readelf_and_libraries()
    libs = _installed_libraries()
    assert any(os.path.basename(p).startswith("libdftracer_core.so") for p in libs), libs
    for path in libs:
        dyn = _dynamic(path)
        assert "RPATH" not in dyn, f"{path}: DT_RPATH {dyn['RPATH']} (RUNPATH expected)"
        entries = [e for v in dyn.get("RUNPATH", []) for e in v.split(":") if e]
        needs_ours = [n for n in dyn.get("NEEDED", []) if n.startswith("libdftracer")]
        if needs_ours:
            assert any(e.startswith("$ORIGIN") for e in entries), \
                f"{os.path.basename(path)} needs {needs_ours} but its RUNPATH is {entries}"
        for e in entries:
            # The CUDA source may keep the directory where libcupti was found
            # (a CUDA toolkit), after its $ORIGIN-relative NVIDIA wheel paths.
            cupti_fallback = os.path.basename(path).startswith("libdftracer_cuda") and _is_cupti_dir(e)
            assert e.startswith("$ORIGIN") or cupti_fallback, \
                f"{os.path.basename(path)}: RUNPATH entry {e!r} is not relative to $ORIGIN ({entries})"


@pytest.mark.parametrize("name", ["libdftracer_torch.so.0", "libdftracer_io.so"])
def test_a_copied_library_loads_with_the_core_beside_it(tmp_path, name):
    """Copies dftracer/lib into a fresh site-packages (with torch linked in
    beside it, as pip installs them) and loads the library there by path,
    without importing torch first: the core it loads is the copy's."""
    _needs_readelf_and_libraries()
    if not os.path.exists(os.path.join(LIB_DIR, name)):
        pytest.skip(f"{name} not built into this package")
    site = tmp_path / "site-packages"
    lib_copy = site / "dftracer" / "lib"
    shutil.copytree(LIB_DIR, lib_copy)
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        os.symlink(list(spec.submodule_search_locations)[0], site / "torch")
    elif name.startswith("libdftracer_torch"):
        pytest.skip("torch not installed")
    code = (
        "import ctypes, os, sys\n"
        f"ctypes.CDLL({str(lib_copy / name)!r})\n"
        "maps = open('/proc/self/maps').read().split('\\n')\n"
        "core = sorted({l.split()[-1] for l in maps if 'libdftracer_core' in l})\n"
        "print('\\n'.join(core))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACER_", "LD_"))}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.split()
    assert loaded == [os.path.realpath(lib_copy / "libdftracer_core.so.0")], \
        f"{name} loaded the core from {loaded}, not from beside itself ({lib_copy})"
