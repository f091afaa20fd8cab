// The module tree on a hand-made module set: every dotted prefix a node, a
// node's total its own self time plus its children's totals, forward and
// backward of a module on one node, siblings by total, events without a
// module outside the tree; the CLI's JSON nests the same numbers.
#include <gtest/gtest.h>

#include <simdjson.h>

#include "cli_run.hpp"
#include "module_tree.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

// A step region (no module) [0,200) over op events, one after another:
//   enc.layer.0.attn 10 fwd + 20 bwd, enc.layer.0.ffn 30, enc.layer.1.ffn 15,
//   enc 5 (an op of the module itself), head 8.  Step self: 200 - 88 = 112.
std::string module_trace() {
  return pfw_text({
      op_event(1, "train_step", 0, 200, "forward", ""),
      op_event(2, "mm", 0, 10, "forward", "enc.layer.0.attn"),
      op_event(3, "mm", 10, 30, "forward", "enc.layer.0.ffn"),
      op_event(4, "mm", 40, 15, "forward", "enc.layer.1.ffn"),
      op_event(5, "add", 55, 5, "forward", "enc"),
      op_event(6, "mm", 60, 8, "forward", "head"),
      op_event(7, "mm_bwd", 100, 20, "backward", "enc.layer.0.attn"),
  });
}

const ModuleNode& node(const ModuleTree& t, const std::string& path) {
  for (const ModuleNode& n : t.nodes)
    if (n.path == path) return n;
  throw std::runtime_error("no node " + path);
}

TEST(ModuleTree, TotalsAreSelfPlusChildren) {
  TempDir d;
  write_file(d.file("t.pfw"), module_trace());
  ModuleTree t = module_tree({d.file("t.pfw")}, 2);
  ASSERT_EQ(t.nodes.size(), 8u);  // enc, enc.layer, enc.layer.0, .attn, .ffn, enc.layer.1, .ffn, head
  EXPECT_EQ(t.tree_ns, 88000);
  EXPECT_EQ(t.unattributed_ns, 112000);
  EXPECT_EQ(t.traced_ns, 200000);
  struct Want {
    const char* path;
    int depth;
    int64_t self_us, total_us;
    uint64_t count;
  };
  for (const Want& w : {Want{"enc", 0, 5, 80, 5}, Want{"enc.layer", 1, 0, 75, 4}, Want{"enc.layer.0", 2, 0, 60, 3},
                        Want{"enc.layer.0.attn", 3, 30, 30, 2}, Want{"enc.layer.0.ffn", 3, 30, 30, 1},
                        Want{"enc.layer.1", 2, 0, 15, 1}, Want{"enc.layer.1.ffn", 3, 15, 15, 1},
                        Want{"head", 0, 8, 8, 1}}) {
    const ModuleNode& n = node(t, w.path);
    EXPECT_EQ(n.depth, w.depth) << w.path;
    EXPECT_EQ(n.self_ns, w.self_us * 1000) << w.path;
    EXPECT_EQ(n.total_ns, w.total_us * 1000) << w.path;
    EXPECT_EQ(n.count, w.count) << w.path;
  }
  // Depth-first, siblings by total (ties by path).
  std::vector<std::string> order;
  for (const ModuleNode& n : t.nodes) order.push_back(n.path);
  EXPECT_EQ(order, (std::vector<std::string>{"enc", "enc.layer", "enc.layer.0", "enc.layer.0.attn", "enc.layer.0.ffn",
                                             "enc.layer.1", "enc.layer.1.ffn", "head"}));
  EXPECT_DOUBLE_EQ(t.share(node(t, "enc")), 80.0 / 88.0);
}

// The report builds the tree from its name,module,phase groups: the same tree.
TEST(ModuleTree, FromCompositeGroupsIsTheSame) {
  TempDir d;
  write_file(d.file("t.pfw"), module_trace());
  ReadStats stats;
  auto agg = aggregate_traces({d.file("t.pfw")}, parse_group_keys("name,module,phase"), 1, {}, &stats);
  agg->resolve_nesting();
  ModuleTree composite = build_module_tree(*agg, 1);
  ModuleTree single = module_tree({d.file("t.pfw")}, 1);
  ASSERT_EQ(composite.nodes.size(), single.nodes.size());
  for (size_t i = 0; i < single.nodes.size(); ++i) {
    EXPECT_EQ(composite.nodes[i].path, single.nodes[i].path);
    EXPECT_EQ(composite.nodes[i].self_ns, single.nodes[i].self_ns) << single.nodes[i].path;
    EXPECT_EQ(composite.nodes[i].total_ns, single.nodes[i].total_ns) << single.nodes[i].path;
    EXPECT_EQ(composite.nodes[i].count, single.nodes[i].count) << single.nodes[i].path;
  }
  EXPECT_EQ(composite.unattributed_ns, 112000);
  EXPECT_EQ(node(composite, "enc.layer.0.attn").self_ns, 30000);  // forward 10 + backward 20 on one node
}

// "module":"" is the compiled model's own op: the node "(root)", never an
// event without a module. Both line decoders read it so (an escape in the
// name sends the second line to the full JSON decoder).
TEST(ModuleTree, TheModelsOwnOpsAreTheRootNode) {
  TempDir d;
  write_file(d.file("t.pfw"), pfw_text({
                                  op_event(1, "train_step", 0, 200, "forward", ""),
                                  op_event(2, "mean", 0, 10, "forward", "", -1, -1, 4242, 4243, "\"module\":\"\""),
                                  op_event(3, "r\\u0065lu", 10, 6, "forward", "", -1, -1, 4242, 4243,
                                           "\"module\":\"\""),
                                  op_event(4, "mm", 20, 30, "forward", "enc"),
                              }));
  ModuleTree t = module_tree({d.file("t.pfw")}, 1);
  EXPECT_EQ(node(t, "(root)").self_ns, 16000);
  EXPECT_EQ(node(t, "(root)").count, 2u);
  EXPECT_EQ(node(t, "(root)").depth, 0);
  EXPECT_EQ(t.tree_ns, 46000);
  EXPECT_EQ(t.unattributed_ns, 154000);  // the step's own time
  EXPECT_EQ(t.unattributed_count, 1u);
}

TEST(ModuleTree, CliTreeTableJsonCsv) {
  TempDir d;
  write_file(d.file("t.pfw"), module_trace());
  CliRun r = run_cli(d, "summary " + d.file("t.pfw") + " --by module --tree --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(r.out);
  EXPECT_EQ(double(doc["tree_us"]), 88);
  EXPECT_EQ(double(doc["unattributed_us"]), 112);
  simdjson::dom::array roots = doc["roots"];
  ASSERT_EQ(roots.size(), 2u);
  simdjson::dom::element enc = roots.at(0);
  EXPECT_EQ(std::string_view(enc["path"]), "enc");
  EXPECT_EQ(double(enc["total_us"]), 80);
  simdjson::dom::element layer0 = enc["children"].at(0)["children"].at(0);
  EXPECT_EQ(std::string_view(layer0["path"]), "enc.layer.0");
  EXPECT_EQ(double(layer0["total_us"]), 60);
  EXPECT_EQ(double(layer0["children"].at(0)["self_us"]), 30);

  r = run_cli(d, "summary " + d.file("t.pfw") + " --by module --tree");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\n    0   "), std::string::npos) << r.out;        // enc.layer.0, indented twice
  EXPECT_NE(r.out.find("\n      attn  "), std::string::npos) << r.out;    // its child, three times

  r = run_cli(d, "summary " + d.file("t.pfw") + " --by module --tree --format csv");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("path,depth,self_us,total_us,count,share\nenc,0,5,80,5,"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dftracer::analyze::testing
