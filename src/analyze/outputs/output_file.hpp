// Where the analyzer's outputs go: refusing an output that is one of the
// inputs, and writing whole outputs with every error reported.
//
// `merge -o in.pfw in.pfw` used to truncate its own input before reading it,
// and `report -o t.pfw.gz t.pfw.gz` replaced the trace with HTML; a write to a
// full disk was lost silently when only the stream's state before close()
// was checked.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

// Throws InputError when `out` already exists and is the same file (device
// and inode, so links and other spellings count) as one of `inputs` or of
// their `.idx` sidecars: "output X is the input Y; refusing to overwrite it".
void refuse_input_as_output(const std::string& out, const std::vector<std::string>& inputs);

// An output file that appears whole or not at all: a regular file (or a
// name not yet taken) is written under a temporary name beside it and
// renamed over `path` by commit(); destroyed without commit() (a write
// error, an exception while reading the inputs) the temporary is removed,
// so a failed run never leaves a half-written file that looks like a trace
// and never clobbers what was at `path`. A device, FIFO or other special
// file (/dev/stdout, /dev/full) is written in place: it cannot be renamed.
// A FIFO no process opens for reading within 10 s is an error, not a hang.
class OutputFile {
 public:
  // Throws InputError "cannot write PATH: <reason>"; std::invalid_argument for a NUL byte in PATH.
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* stream() const { return file_; }
  // Flushes, closes and renames into place; throws InputError as above.
  void commit();

 private:
  [[noreturn]] void fail(int err);
  void open_fifo(const std::string& path);

  std::string path_;
  std::string temp_;  // empty: written in place
  std::FILE* file_ = nullptr;
};

// Writes `text` to `path` (created or truncated) through an OutputFile. Throws InputError
// "cannot write PATH: <reason>" when any part of it, the close included, fails.
void write_output_file(const std::string& path, std::string_view text);

// Writes `text` to standard output and flushes it. Throws InputError
// "cannot write to standard output: <reason>" (a full disk, a closed stdout).
void write_stdout(std::string_view text);

}  // namespace dftracer::analyze
