// `summary --by module --tree`: self and total time per nn.Module path as a
// tree. Events are grouped by args.module exactly as `summary
// --by module` does (self times from self_time.hpp); a path's node hangs under
// the node of its dotted prefix (`encoder.layer.0.attention` under
// `encoder.layer.0` under `encoder.layer` under `encoder`), prefixes no event
// names included. The capture backend gives a backward op its forward node's
// module, so both phases land on one node.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "summary.hpp"

namespace dftracer::analyze {

// The columns of the Python DataFrame and the CSV, in order.
inline constexpr const char* kModuleTreeColumns[] = {"path", "depth", "self_us", "total_us", "count", "share"};

struct ModuleNode {
  std::string path;  // "encoder.layer.0"
  std::string name;  // its last component, "0"
  int depth = 0;     // 0 for a root
  int64_t self_ns = 0;   // self time of the events whose module is exactly this path
  int64_t total_ns = 0;  // self_ns + the children's total_ns
  uint64_t count = 0;    // events of this module and the modules under it
  std::vector<size_t> children;  // indexes into ModuleTree::nodes, by total time, descending
};

struct ModuleTree {
  std::vector<ModuleNode> nodes;  // depth-first, parents before children, siblings by total
  std::vector<size_t> roots;      // by total, descending
  int64_t tree_ns = 0;            // the roots' totals: the self time of every event with a module
  int64_t unattributed_ns = 0;    // self time of events with no module (regions, eager ops, ...)
  uint64_t unattributed_count = 0;
  int64_t traced_ns = 0;          // all events' self time (tree_ns + unattributed_ns)
  ReadStats stats;
  double share(const ModuleNode& n) const {
    return tree_ns > 0 ? static_cast<double>(n.total_ns) / static_cast<double>(tree_ns) : 0;
  }
};

// From an aggregator (nesting resolved) whose keys include `module`, at
// `module_key` among them (the report groups by name,module,phase at once).
ModuleTree build_module_tree(const SummaryAggregator& agg, size_t module_key = 0);
// Reads `files` grouped by module and builds the tree.
ModuleTree module_tree(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options = {});

void write_module_tree_table(std::ostream& os, const ModuleTree& t);
void write_module_tree_json(std::ostream& os, const ModuleTree& t);  // children nested
void write_module_tree_csv(std::ostream& os, const ModuleTree& t);   // one row a node, depth-first

}  // namespace dftracer::analyze
