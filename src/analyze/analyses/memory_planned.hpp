// Planned memory of compiled graphs: what the capture backend's graph pass
// computed statically (FX liveness, docs/torch.md "Planned memory") and wrote
// in each graph-call event's args (planned_peak_bytes, planned_peak_node,
// planned_peak_op, planned_peak_modules). Kept apart from the measured
// memory (the counter track, alloc_bytes/free_bytes): never added to it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "event_decoder.hpp"

namespace dftracer::analyze {

// One compiled graph (per process, graph id and phase): its planned peak,
// the highest over its calls (a dynamic-shape graph's differs by size).
struct PlannedGraph {
  std::string pid;
  std::string graph;
  std::string phase;
  uint64_t calls = 0;
  double peak = 0;        // planned_peak_bytes
  int64_t peak_node = -1;  // op node index within the graph
  std::string peak_op;    // the node's event name
  // The modules whose nodes allocated what is live at the peak, bytes
  // descending (planned_peak_modules, at most 5; "" : no module).
  std::vector<std::pair<std::string, double>> modules;
};

// Collects PlannedGraph rows from graph-call lines (any line; only those with
// planned_peak_bytes are decoded).
class PlannedGraphReader {
 public:
  PlannedGraphReader();
  // True when the line carried a planned peak (read into the rows).
  bool consume(std::string_view line, size_t cap);
  std::vector<PlannedGraph> rows() const;  // by pid, then graph, then phase
  uint64_t bad = 0;  // planned_peak_bytes that is not a number (skipped)

 private:
  EventDecoder decoder_;
  Event ev_;
  std::map<std::tuple<std::string, std::string, std::string>, PlannedGraph> by_graph_;
};

void write_planned_table(std::ostream& os, const std::vector<PlannedGraph>& rows);
// ,"planned":[{"pid":..,"graph":..,"phase":..,"calls":..,"peak_bytes":..,"peak_node":..,"peak_op":..,"modules":[{"module":..,"bytes":..}]}]
void append_planned_json(std::string& json, const std::vector<PlannedGraph>& rows);

}  // namespace dftracer::analyze
