// Memory: what the LibTorch observer's allocation capture wrote
// (include/dftracer/torch.h, enable_memory): per op the self bytes it
// allocated and freed (args.alloc_bytes / args.free_bytes, summed by the
// summary into its memory columns), and the "memory" counter track (cat
// "memory", "ph":"C", one series per device: "cpu", "cuda:0" ...), whose
// maximum is the exact peak of bytes allocated, and the per-block "alloc"
// and "free" events that say what holds the peak (memory_peak.hpp).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "event_decoder.hpp"
#include "memory_args.hpp"
#include "memory_planned.hpp"
#include "memory_peak.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze {

struct SummaryRow;

// The summary's memory columns (written when Summary::has_memory): the CSV,
// JSON and DataFrame names, and the table's headings.
inline constexpr const char* kMemoryColumns[] = {format::kArgAllocBytes, format::kArgFreeBytes, "net_bytes"};
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
  std::string peak_tid;  // the thread that wrote the highest sample (the alloc that reached it, at its time)
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

struct MemoryPeaks {
  // What holds each process's and device's peak (memory_peak.hpp): from
  // the "alloc"/"free" block events; none in a trace without them.
  std::vector<PeakComposition> peaks;
  // The peaks whose allocation the input lacks (a dropped event; a window
  // whose alloc events carry no total where the track's sample is missing):
  // pid, device, peak and its time alone -- what holds them cannot be given.
  std::vector<PeakComposition> unheld;
  BlockProblems blocks;
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
// "pid 7, cpu: the peak 90 B at 1000110.000 us: what holds it cannot be given (...)".
std::string unheld_line(const PeakComposition& c);
// "skipped 2 memory counter samples without a numeric value; 3 frees
// without an allocation in the trace (skipped)" ("" when none).
std::string memory_problems_line(const MemoryPeaks& m);

}  // namespace dftracer::analyze
