#include "module_tree.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <stdexcept>

#include "text_format.hpp"

namespace dftracer::analyze {

namespace {

constexpr std::string_view kNoModule = "(none)";  // summary's key for events without args.module

// A node per path, created with all its prefixes; a std::map keeps the
// building order independent of the hash map's.
struct Builder {
  std::map<std::string, ModuleNode> by_path;

  ModuleNode& node(const std::string& path) {
    auto it = by_path.find(path);
    if (it != by_path.end()) return it->second;
    ModuleNode n;
    n.path = path;
    size_t dot = path.rfind('.');
    n.name = dot == std::string::npos ? path : path.substr(dot + 1);
    n.depth = static_cast<int>(std::count(path.begin(), path.end(), '.'));
    if (dot != std::string::npos) node(path.substr(0, dot));  // its parent, and theirs
    return by_path.emplace(path, std::move(n)).first->second;
  }
};

}  // namespace

ModuleTree build_module_tree(const SummaryAggregator& agg, size_t module_key) {
  ModuleTree t;
  Builder b;
  const bool composite = agg.keys().size() > 1;
  for (const auto& [key, g] : agg.groups()) {
    t.traced_ns = saturating_add(t.traced_ns, g.self_ns);
    const std::string module = composite ? split_group_key(key).at(module_key) : key;
    if (module == kNoModule) {
      t.unattributed_ns = saturating_add(t.unattributed_ns, g.self_ns);
      t.unattributed_count += g.count;
      continue;
    }
    ModuleNode& n = b.node(module);
    n.self_ns = saturating_add(n.self_ns, g.self_ns);
    n.count += g.count;
  }
  // Totals bottom-up: in reverse path order every child ("a.b") comes before
  // its parent ("a"), as a path sorts after its own prefix.
  for (auto it = b.by_path.rbegin(); it != b.by_path.rend(); ++it) {
    ModuleNode& n = it->second;
    n.total_ns = saturating_add(n.total_ns, n.self_ns);
    size_t dot = n.path.rfind('.');
    if (dot == std::string::npos) continue;
    ModuleNode& parent = b.by_path.at(n.path.substr(0, dot));
    parent.total_ns = saturating_add(parent.total_ns, n.total_ns);
    parent.count += n.count;
  }
  // Depth-first layout, siblings by total time (then path, for ties).
  auto by_total = [&b](const std::string& x, const std::string& y) {
    const ModuleNode &a = b.by_path.at(x), &c = b.by_path.at(y);
    return a.total_ns != c.total_ns ? a.total_ns > c.total_ns : x < y;
  };
  std::map<std::string, std::vector<std::string>> kids;
  std::vector<std::string> roots;
  for (const auto& [path, n] : b.by_path) {
    size_t dot = path.rfind('.');
    if (dot == std::string::npos) roots.push_back(path);
    else kids[path.substr(0, dot)].push_back(path);
  }
  auto place = [&](auto& self, const std::string& path) -> size_t {
    size_t index = t.nodes.size();
    t.nodes.push_back(std::move(b.by_path.at(path)));
    std::vector<std::string>& children = kids[path];
    std::sort(children.begin(), children.end(), by_total);
    for (const std::string& c : children) {
      size_t ci = self(self, c);
      t.nodes[index].children.push_back(ci);
    }
    return index;
  };
  std::sort(roots.begin(), roots.end(), by_total);
  for (const std::string& r : roots) {
    size_t i = place(place, r);
    t.roots.push_back(i);
    t.tree_ns = saturating_add(t.tree_ns, t.nodes[i].total_ns);
  }
  return t;
}

TreeSort parse_tree_sort(const std::string& s) {
  if (s == "total") return TreeSort::total;
  if (s == "self") return TreeSort::self;
  if (s == "count") return TreeSort::count;
  throw std::invalid_argument("the tree's siblings are ordered by total, self or count, not '" + s + "'");
}

void order_module_tree(ModuleTree& t, TreeSort sort, size_t top_n) {
  if (sort == TreeSort::total && top_n == 0) return;  // build_module_tree's own layout
  auto value = [&](size_t i) -> int64_t {
    const ModuleNode& n = t.nodes[i];
    return sort == TreeSort::self ? n.self_ns : sort == TreeSort::count ? static_cast<int64_t>(n.count) : n.total_ns;
  };
  auto order = [&](std::vector<size_t> v) {
    std::sort(v.begin(), v.end(), [&](size_t x, size_t y) {
      const int64_t a = value(x), b = value(y);
      return a != b ? a > b : t.nodes[x].path < t.nodes[y].path;
    });
    if (top_n && v.size() > top_n) {
      t.left_out += v.size() - top_n;
      v.resize(top_n);
    }
    return v;
  };
  std::vector<ModuleNode> laid;
  auto place = [&](auto& self, size_t i) -> size_t {
    const size_t index = laid.size();
    laid.push_back(t.nodes[i]);
    laid[index].children.clear();
    for (size_t c : order(t.nodes[i].children)) {
      const size_t ci = self(self, c);
      laid[index].children.push_back(ci);
    }
    return index;
  };
  std::vector<size_t> roots;
  for (size_t r : order(t.roots)) roots.push_back(place(place, r));
  t.nodes = std::move(laid);
  t.roots = std::move(roots);
}

ModuleTree module_tree(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options) {
  ReadStats stats;
  std::unique_ptr<SummaryAggregator> agg = aggregate_traces(files, parse_group_keys("module"), threads, options, &stats);
  agg->resolve_nesting();
  ModuleTree t = build_module_tree(*agg);
  t.stats = stats;
  return t;
}

// ---------------------------------------------------------------------------
// Output

void write_module_tree_table(std::ostream& os, const ModuleTree& t) {
  std::vector<std::vector<std::string>> cells{{"module", "self", "total", "count", "share"}};
  for (const ModuleNode& n : t.nodes)
    cells.push_back({std::string(2 * n.depth, ' ') + n.name, human_time(ns_to_us(n.self_ns)),
                     human_time(ns_to_us(n.total_ns)), std::to_string(n.count), fmt_num(100 * t.share(n), 2) + "%"});
  std::vector<size_t> width(5, 0);
  for (const auto& row : cells)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : cells) {
    std::string line = row[0] + std::string(width[0] - row[0].size(), ' ');
    for (size_t i = 1; i < row.size(); ++i) line += "  " + std::string(width[i] - row[i].size(), ' ') + row[i];
    os << line << '\n';
  }
  os << t.nodes.size() << " modules, " << human_time(ns_to_us(t.tree_ns))
     << " self time in them (share = total over it); " << human_time(ns_to_us(t.unattributed_ns)) << " in "
     << t.unattributed_count << " events with no module, not in the tree\n";
  if (t.left_out)
    os << t.left_out << " modules left out by --top (with the modules under them; their time stays in their "
          "parents' totals)\n";
}

namespace {

void append_node_json(std::string& o, const ModuleTree& t, size_t i) {
  const ModuleNode& n = t.nodes[i];
  o += "{\"path\":";
  append_json_string(o, n.path);
  o += ",\"name\":";
  append_json_string(o, n.name);
  o += ",\"depth\":" + std::to_string(n.depth) + ",\"self_us\":" + json_num(ns_to_us(n.self_ns)) +
       ",\"total_us\":" + json_num(ns_to_us(n.total_ns)) + ",\"count\":" + std::to_string(n.count) +
       ",\"share\":" + json_num(t.share(n)) + ",\"children\":[";
  for (size_t k = 0; k < n.children.size(); ++k) {
    if (k) o += ',';
    append_node_json(o, t, n.children[k]);
  }
  o += "]}";
}

}  // namespace

void write_module_tree_json(std::ostream& os, const ModuleTree& t) {
  std::string o = "{\"tree_us\":" + json_num(ns_to_us(t.tree_ns)) +
                  ",\"unattributed_us\":" + json_num(ns_to_us(t.unattributed_ns)) +
                  ",\"unattributed_events\":" + std::to_string(t.unattributed_count) +
                  ",\"traced_us\":" + json_num(ns_to_us(t.traced_ns)) + ",\"modules\":" + std::to_string(t.nodes.size()) +
                  ",\"left_out\":" + std::to_string(t.left_out) +
                  ",\"roots\":[";
  for (size_t k = 0; k < t.roots.size(); ++k) {
    o += k ? ",\n" : "\n";
    append_node_json(o, t, t.roots[k]);
  }
  o += "]}\n";
  os << o;
}

void write_module_tree_csv(std::ostream& os, const ModuleTree& t) {
  std::string o = "path,depth,self_us,total_us,count,share\n";
  for (const ModuleNode& n : t.nodes)
    o += csv_field(n.path) + "," + std::to_string(n.depth) + "," + json_num(ns_to_us(n.self_ns)) + "," +
         json_num(ns_to_us(n.total_ns)) + "," + std::to_string(n.count) + "," + json_num(t.share(n)) + "\n";
  os << o;
}

}  // namespace dftracer::analyze
