// Memory: what the LibTorch observer's allocation capture wrote
// (include/dftracer/torch.h, enable_memory): per op the self bytes it
// allocated and freed (args.alloc_bytes / args.free_bytes, summed by the
// summary into its memory columns), and the "memory" counter track (cat
// "memory", "ph":"C", one series per device: "cpu", "cuda:0" ...), whose
// maximum is the exact peak of bytes allocated.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "event_decoder.hpp"
#include "memory_planned.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

struct SummaryRow;

// The summary's memory columns (written when Summary::has_memory): the CSV,
// JSON and DataFrame names, and the table's headings.
inline constexpr const char* kMemoryColumns[] = {"alloc_bytes", "free_bytes", "net_bytes"};
inline constexpr const char* kMemoryColumnHeads[] = {"allocated", "freed", "net"};

// "1.50 MiB", "-512 B": bytes for the table (binary units).
std::string human_bytes(double bytes);
void append_memory_cells(std::vector<std::string>& cells, const SummaryRow& r);
void append_memory_members(std::string& json, const SummaryRow& r);  // ,"alloc_bytes":..,"free_bytes":..,"net_bytes":..
void append_memory_csv(std::string& csv, const SummaryRow& r);

// One process's series of the memory track.
struct MemorySeries {
  std::string pid;
  std::string device;     // "cpu", "cuda:0", ...
  uint64_t samples = 0;
  double peak = 0;        // bytes allocated at the highest sample
  int64_t peak_ts_ns = 0;
  double first = 0, last = 0;  // the first and last samples' values (by time)
  int64_t first_ts_ns = 0, last_ts_ns = 0;
  // The series for a chart: at most kMemoryChartPoints (ts, bytes), the
  // highest sample of each equal slice of time, so the peak is among them.
  std::vector<std::pair<int64_t, double>> points;
};
inline constexpr size_t kMemoryChartPoints = 600;

// One step's peak (steps as `summary --by step` finds them, step_finder.hpp):
// the highest sample inside the step, or the level it started at (the last
// sample before it) when that is higher.
struct MemoryStepPeak {
  std::string pid;
  std::string device;
  size_t step = 0;  // 0-based, in order of start within the process
  std::string label;
  double start_bytes = 0;  // the last sample before the step (0: none)
  double peak = 0;
  int64_t peak_ts_ns = 0;
};

// What the CPU peak of a process is made of: from the start of the step the
// peak lies in (the process's first sample when it lies in none) to the
// peak, the self bytes allocated minus freed by the ops that ran wholly in
// that window, by op name and by module (ops without args.module: "").
// Frees count against the op that freed, not the one that allocated, so a
// row is what the op added net; what no op in the window did (frees when a
// Python reference drops between ops, ops cut by the window's ends) is the
// growth minus `ops_net`.
struct MemoryHolder {
  std::string key;  // op name or module
  double net = 0;
  uint64_t ops = 0;
};
struct MemoryPeakBreakdown {
  std::string pid;
  int64_t from_ns = 0, peak_ts_ns = 0;
  double from_bytes = 0, peak = 0;
  double ops_net = 0;  // all the window's ops' net bytes (every row, not only the top 10)
  std::vector<MemoryHolder> by_name, by_module;  // net descending, at most 10 each
};

struct MemoryPeaks {
  std::vector<MemoryPeakBreakdown> holders;  // one per process with a cpu series
  std::vector<MemorySeries> series;  // by pid, then device
  std::vector<MemoryStepPeak> steps; // by pid, device, then step
  std::vector<PlannedGraph> planned;  // compiled graphs' planned peaks (memory_planned.hpp), apart from the above
  uint64_t out_of_order = 0;  // samples of a series earlier than one already read in the same file (kept)
  uint64_t bad_samples = 0;   // memory counter events without a numeric value (skipped)
  uint64_t bad_planned = 0;   // graph events whose planned_peak_bytes is not a number (skipped)
  ReadStats stats;
};

// Reads the memory counter tracks of `files` (one pass, in file order).
MemoryPeaks memory_peaks(const std::vector<std::string>& files, const ReadOptions& options = {});
void write_memory_table(std::ostream& os, const MemoryPeaks& m);
void write_memory_json(std::ostream& os, const MemoryPeaks& m);
// "skipped 2 memory samples without a value; 3 out of order" ("" when none).
std::string memory_problems_line(const MemoryPeaks& m);

}  // namespace dftracer::analyze
