// The I/O view: what the POSIX and STDIO events of a run say --
// bytes and time by file, by call and by process, read/write bandwidth over
// time, and how many data calls moved less than a small-I/O threshold.
// `dftracer-analyze io`. Reads DFTracer's args (fhash, size, ret) and its FH
// records (fhash -> path), so DFTracer's own traces work too.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "event_decoder.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

struct IoStats {
  uint64_t ops = 0;             // every I/O event
  uint64_t reads = 0, writes = 0;  // data calls (read/pread/readv/fread/..., write/...)
  uint64_t read_bytes = 0, write_bytes = 0;  // their ret, when positive
  uint64_t small_reads = 0, small_writes = 0;  // data calls that moved < IoOptions::small_bytes
  int64_t time_ns = 0;          // summed durations
  void add(const IoStats& o);
};

// Whose I/O a file's calls are: by its path (io_file_kind), the program's
// data (datasets, its outputs) or the runtime's own (Python's imports,
// shared libraries, the kernel's pseudo files, the trace files themselves);
// and of the data files, a checkpoint's: one a call inside a checkpoint
// event (torch.save, save_pretrained, ...) of the same thread touched.
// docs/analyzer.md gives the rule.
enum class IoFileKind { Data, Runtime, Checkpoint };
const char* io_kind_name(IoFileKind k);  // "data" / "runtime" / "checkpoint"
// The rule on one path: runtime when it is under /proc, /sys, /dev, /etc,
// /usr/lib, /usr/lib64, /lib, /lib64, /usr/share/locale or
// /usr/share/zoneinfo (the kernel's and the system's files), names a
// trace file (.pfw), is Python's (.py/.pyc/.pth files, __pycache__,
// site-packages, dist-packages, .dist-info, .egg-info, lib/pythonX.Y,
// lib-dynload), a shared library (.so, .so.N), the dynamic linker's cache,
// the interpreter itself (bin/python*) or a locale file; else data (a name
// without a path, "fhash:..." or "(no fhash)", is data: nothing says otherwise).
IoFileKind io_file_kind(std::string_view path);
// Each path's kind among the paths of a run (parallel to `paths`):
// io_file_kind, and also runtime for anything in a Python installation that
// one of the paths lies in (its bin/, the prefix itself), for a directory
// that only leads to runtime files (the interpreter's prefix, /usr/lib,
// stat'ed by the import system) and for one above an installation (a home
// directory, lstat'ed by path resolution); another directory above a data
// file is data.
std::vector<IoFileKind> io_file_kinds(const std::vector<std::string_view>& paths);

struct IoOptions {
  uint64_t small_bytes = 4096;  // "small I/O": a data call moving fewer bytes
  int64_t bin_ns = 1000000000;  // bandwidth bins (1 s)
  // 0: bins stay bin_ns wide. Else bin_ns is where the width starts, and it
  // doubles whenever the bins from the first to the last holding data would
  // be more than max_bins, so a run of any length gets a chart of at most
  // max_bins bars without a second read (the report: 1 ms doubling to fit
  // 120). Bins stay aligned to multiples of their width since the epoch, so a
  // wider one is a union of narrower ones.
  size_t max_bins = 0;
};

struct IoView {
  IoStats total;
  std::map<std::string, IoStats> by_file;     // path (or "fhash:<hash>" without its FH record)
  // Each by_file key's kind (io_file_kinds over all of them).
  std::map<std::string, IoFileKind> file_kind;
  IoStats data, runtime, checkpoint;  // total, split by file kind
  size_t data_files = 0, runtime_files = 0, checkpoint_files = 0;
  std::map<std::string, IoStats> by_call;     // event name
  std::map<std::string, IoStats> by_process;  // pid
  std::map<int64_t, IoStats> by_bin;          // epoch ns of each bin's start (options.bin_ns wide)
  int64_t first_bin_ns = 0;                   // epoch ns of the first bin
  IoOptions options;                          // bin_ns: the width reached (see max_bins)
  ReadStats stats;
};

IoView io_view(const std::vector<std::string>& files, const IoOptions& options, unsigned threads,
               const ReadOptions& read_options);

// The I/O aggregation of one reader thread, for a consumer that reads the
// input for other reasons too (the report): it decodes each line once with
// capture() among its args and hands every event to add(), so the I/O view
// costs no read of its own. io_view() is this plus its own decoder.
class IoAccumulator {
 public:
  explicit IoAccumulator(const IoOptions& options) : opt_(options) {}
  // It keeps iterators and a pointer into its own maps (slot, recent_).
  IoAccumulator(const IoAccumulator&) = delete;
  IoAccumulator& operator=(const IoAccumulator&) = delete;
  // The args add() reads, in these extra_args slots (0, 1, 2): fhash, ret, value.
  static ArgCapture capture();
  void add(const Event& ev);
  void merge(const IoAccumulator& other);
  int64_t bin_ns() const { return opt_.bin_ns; }
  // The view, with each fhash named by its FH record; `stats`: the read's.
  IoView finish(const ReadStats& stats) const;

 private:
  void widen_bins(int64_t bin_ns);  // re-keys by_bin to bins bin_ns wide
  void fit_bins();                  // widens until max_bins span the data
  void saved_by(const Event& checkpoint);  // marks the files its thread's calls inside it touched
  // A by_* map's entry for `key`, the last one's without a lookup: a
  // thread's calls come in runs on one file, of one call, in one process.
  struct LastKey {
    std::string key;
    std::map<std::string, IoStats>::iterator it;
    bool valid = false;
  };
  static IoStats& slot(std::map<std::string, IoStats>& m, LastKey& last, std::string_view key);
  LastKey last_file_, last_call_, last_process_;
  IoOptions opt_;
  IoView view_;
  std::map<std::string, std::string> paths_;  // fhash -> path
  // A thread writes an event when it ends: the calls inside a checkpoint
  // event come before it. Each thread's latest calls (start, fhash; a hash
  // of 16 characters, ours, is kept as it is: hashed only when a checkpoint
  // marks it), a ring of kRecent; the files touched inside a checkpoint.
  static constexpr size_t kRecent = 1024;  // a power of two
  struct Call {
    int64_t ts;
    char fhash[16];
    uint8_t size;  // of fhash: > 16, a longer one's std::hash in its first 8 bytes
  };
  struct Recent {
    std::vector<Call> calls;
    size_t next = 0;
  };
  std::map<std::pair<std::string, std::string>, Recent> recent_;  // by (pid, tid)
  std::string last_pid_, last_tid_;
  Recent* last_recent_ = nullptr;
  std::unordered_set<std::string> saved_;  // fhashes (a longer one: "#<its hash>")
};

// A text report (each table: the `top` rows with the most time, then one
// line for the rest; 0: every row), or all of it as one JSON object. The
// table's "by file" lists the data files; the runtime's are one line below
// it (runtime_line). The JSON's by_file holds every file, each with its
// "kind", and "by_kind" the two totals.
void write_io_table(std::ostream& os, const IoView& v, size_t top = 0);
void write_io_json(std::ostream& os, const IoView& v);

// "Python imports and libraries (runtime): N calls, T us over F files", or
// "" when the trace holds none.
std::string runtime_line(const IoView& v);
// "Checkpoint I/O (...): N calls, T us; read R MiB, wrote W MiB over F
// files", or "" when no call lay inside a checkpoint event.
std::string checkpoint_io_line(const IoView& v);

// The report's I/O section data: {"summary": one line, "runtime":
// runtime_line, "by_file" (data files only), "by_call"
// and "by_process": [[name, ops, time_us, read_bytes, write_bytes], ...] (the
// `top` longest; 0 = all), "bandwidth": {"bin_s", "bins": [[t_s since the
// first bin, read_bytes, write_bytes], ...]}}.
std::string io_report_json(const IoView& v, size_t top);

// The options the report aggregates with: bandwidth bins from 1 ms, doubling
// to fit 120 bars.
IoOptions io_report_options();

}  // namespace dftracer::analyze
