// The I/O view (issue #14): what the POSIX and STDIO events of a run say --
// bytes and time by file, by call and by process, read/write bandwidth over
// time, and how many data calls moved less than a small-I/O threshold.
// `dftracer-analyze io`. Reads DFTracer's args (fhash, size, ret) and its FH
// records (fhash -> path), so DFTracer's own traces work too.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
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

struct IoOptions {
  uint64_t small_bytes = 4096;  // "small I/O": a data call moving fewer bytes
  int64_t bin_ns = 1000000000;  // bandwidth bins (1 s)
};

struct IoView {
  IoStats total;
  std::map<std::string, IoStats> by_file;     // path (or "fhash:<hash>" without its FH record)
  std::map<std::string, IoStats> by_call;     // event name
  std::map<std::string, IoStats> by_process;  // pid
  std::map<int64_t, IoStats> by_bin;          // start of the bin, ns since the first I/O event's bin
  int64_t first_bin_ns = 0;                   // epoch ns of bin 0
  IoOptions options;
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
  // The args add() reads, in these extra_args slots (0, 1, 2): fhash, ret, value.
  static ArgCapture capture();
  void add(const Event& ev);
  void merge(const IoAccumulator& other);
  // The view, with each fhash named by its FH record; `stats`: the read's.
  IoView finish(const ReadStats& stats) const;

 private:
  IoOptions opt_;
  IoView view_;
  std::map<std::string, std::string> paths_;  // fhash -> path
};

// A text report (each table: the `top` rows with the most time, then one
// line for the rest; 0: every row), or all of it as one JSON object.
void write_io_table(std::ostream& os, const IoView& v, size_t top = 0);
void write_io_json(std::ostream& os, const IoView& v);

// The report's I/O section data: {"summary": one line, "by_file" and
// "by_call": [[name, ops, time_us], ...] (the `top` longest; 0 = all)}.
std::string io_report_json(const IoView& v, size_t top);

}  // namespace dftracer::analyze
