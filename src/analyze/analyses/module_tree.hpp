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

// How siblings are ordered: by total time (default), self time or event count,
// descending, then by path.
enum class TreeSort { total, self, count };
// "total", "self" or "count"; anything else throws std::invalid_argument.
TreeSort parse_tree_sort(const std::string& s);

struct ModuleTree {
  std::vector<ModuleNode> nodes;  // depth-first, parents before children, siblings by total
  std::vector<size_t> roots;      // by total, descending
  int64_t tree_ns = 0;            // the roots' totals: the self time of every event with a module
  int64_t unattributed_ns = 0;    // self time of events with no module (regions, eager ops, ...)
  uint64_t unattributed_count = 0;
  int64_t traced_ns = 0;          // all events' self time (tree_ns + unattributed_ns)
  size_t left_out = 0;            // nodes (with everything under them) cut by order_module_tree's top_n
  ReadStats stats;
  double share(const ModuleNode& n) const {
    return tree_ns > 0 ? static_cast<double>(n.total_ns) / static_cast<double>(tree_ns) : 0;
  }
};

// From an aggregator (nesting resolved) whose keys include `module`, at
// `module_key` among them (the report groups by name,module,phase at once).
ModuleTree build_module_tree(const SummaryAggregator& agg, size_t module_key = 0);
// Lays the nodes out again depth-first, siblings (and roots) by `sort`, and
// keeps only the `top_n` first children of every node and the `top_n` first
// roots (0: all). A cut node goes with its whole subtree; the totals and shares
// of the nodes kept are unchanged (a parent's total still holds its cut
// children's time).
void order_module_tree(ModuleTree& t, TreeSort sort, size_t top_n);
// Reads `files` grouped by module and builds the tree.
ModuleTree module_tree(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options = {});

void write_module_tree_table(std::ostream& os, const ModuleTree& t);
void write_module_tree_json(std::ostream& os, const ModuleTree& t);  // children nested
void write_module_tree_csv(std::ostream& os, const ModuleTree& t);   // one row a node, depth-first

}  // namespace dftracer::analyze
