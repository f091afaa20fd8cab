// The commands of dftracer-analyze that run in Python: `summary --dask
// SCHEDULER` (dftracer.analyze on a Dask cluster) and `export --format parquet`
// (pyarrow). The C++ command hands them, arguments unchanged, to
// `python -m dftracer.analyze.cli`, so there is one implementation of each.
#pragma once

#include <string>

namespace dftracer::analyze {

// When argv asks for a Python command, replaces this process with the Python
// one (it never returns then, unless exec fails: one line on stderr, 2).
// Returns -1 when argv is for the C++ commands.
int run_python_command(int argc, char** argv);

// The Python those commands (and calibrate's torch measurement) run:
// $DFTRACER_PYTHON; else the python3 beside this executable (a venv's bin/,
// where pip installed both); else python3 from PATH.
std::string python_executable();

}  // namespace dftracer::analyze
