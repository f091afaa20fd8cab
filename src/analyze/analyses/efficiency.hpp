// Efficiency (`summary --efficiency`, `dftracer.analyze.efficiency`, the
// report's roofline): per group (op name, module, ...) the FLOPs and bytes its
// events declared (args.flops / args.bytes, from the capture backend's node
// table and Inductor's kernels), the achieved GFLOP/s and GB/s over those
// events' time, the arithmetic intensity (FLOPs per byte), and how far that
// is from this machine's roofline: the attainable rate is
// min(peak GFLOP/s, intensity x peak GB/s), with the peaks measured by
// `calibrate` (calibration.hpp). peak_frac is achieved over attainable; a
// group with bytes and no FLOPs is compared with the bandwidth alone.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "summary.hpp"

namespace dftracer::analyze {

// Why an efficiency table can be empty, in one line (the table and the report say it).
inline constexpr const char* kNoFlopsWhy =
    "no event carries args.flops or args.bytes: a compiled graph's ops and Inductor's kernels do (dynamo.compile, "
    "dftracer_inductor_backend), an eager op only when traced with FLOPs (trace_eager(flops=True) or "
    "DFTRACER_EAGER_FLOPS=1); see docs/analyzer.md, 'Efficiency'";

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct EfficiencyFigures {
  double gflops = kNaN, gbps = kNaN;  // achieved (NaN: no event declared it)
  double ai = kNaN;                   // FLOPs per byte
  double attainable_gflops = kNaN;    // the roofline at `ai` (NaN without a calibration)
  double peak_frac = kNaN;            // achieved over attainable
  // peak_frac above 1: the run beat the roof, so the calibration is too low
  // (never shown as a plain figure: flagged with above_peak_line()).
  bool above_peak = false;
  const char* bound = "";             // "compute" or "memory": which roof limits it
};

// The figures of a group from its sums: FLOPs over the summed duration of the
// events that carried flops (1 flop/ns = 1 GFLOP/s), bytes likewise; `peak`
// may be null (no calibration: no attainable rate, no fraction).
EfficiencyFigures efficiency_figures(double flops, int64_t flops_ns, double bytes, int64_t bytes_ns,
                                     const Calibration* peak);

struct EfficiencyRow {
  std::vector<std::string> key;
  uint64_t count = 0;
  double self_us = 0;
  double flops = 0, bytes = 0;
  EfficiencyFigures f;
};

struct Efficiency {
  std::vector<GroupKey> keys;
  std::vector<EfficiencyRow> rows;  // groups that declared FLOPs or bytes above 0, by self time (or --sort's column)
  Calibration calibration;          // valid() false: none was found
  ReadStats stats;
};

inline constexpr const char* kEfficiencyColumns[] = {
    "count", "self_us", "flops", "bytes", "gflops", "gbps", "ai", "attainable_gflops", "peak_frac", "above_peak",
    "bound"};

// The columns the rows can be sorted by (descending; NaN last, ties by key):
// self (self_us, the default), count, flops, bytes, gflops, gbps, ai,
// attainable_gflops or peak_frac. Anything else throws std::invalid_argument.
void check_efficiency_sort(const std::string& column);

// The rows of an aggregator whose nesting is resolved (the report reuses its
// own), by `sort` (check_efficiency_sort's columns); top_n 0 = all.
std::vector<EfficiencyRow> efficiency_rows(const SummaryAggregator& agg, size_t top_n, const Calibration* peak,
                                           const std::string& sort = "self");

// Reads `files` and the calibration found for them (find_calibration).
Efficiency efficiency(const std::vector<std::string>& files, const std::vector<GroupKey>& keys, size_t top_n,
                      unsigned threads, const ReadOptions& options, const std::string& calibration_path,
                      const std::string& sort = "self");

// Rows whose fraction of the roof is above 1 (EfficiencyFigures::above_peak).
size_t above_peak_rows(const Efficiency& e);

// `summary --efficiency`: the output text in `format` (table, json, csv).
std::string efficiency_text(const Efficiency& e, const std::string& format);

void write_efficiency_table(std::ostream& os, const Efficiency& e);
void write_efficiency_json(std::ostream& os, const Efficiency& e);
void write_efficiency_csv(std::ostream& os, const Efficiency& e);

}  // namespace dftracer::analyze
