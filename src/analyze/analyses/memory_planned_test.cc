// The compiled graphs' planned memory in `memory` (memory_planned.hpp): read
// from hand-written graph-call events, kept apart from the measured track.
#include "memory_planned.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "memory.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze {
namespace {

using testing::TempDir;

std::string graph_call(const std::string& graph, const std::string& phase, long long ts, const std::string& peak,
                       int node, const std::string& op, const std::string& modules) {
  return "{\"name\":\"graph." + phase + "\",\"cat\":\"dynamo\",\"pid\":7,\"tid\":7,\"ts\":" +
         std::to_string(1'000'000 + ts) + ",\"dur\":10,\"ph\":\"X\",\"args\":{\"phase\":\"" + phase +
         "\",\"graph\":" + graph + ",\"ops\":5,\"planned_peak_bytes\":" + peak +
         ",\"planned_peak_node\":" + std::to_string(node) + ",\"planned_peak_op\":\"" + op +
         "\",\"planned_peak_modules\":" + modules + "}}";
}

std::string node(long long ts) {  // an op event with planned args: not a measured allocation
  return "{\"name\":\"function.mm.default\",\"cat\":\"dynamo\",\"pid\":7,\"tid\":7,\"ts\":" +
         std::to_string(1'000'000 + ts) + ",\"dur\":2,\"ph\":\"X\",\"args\":{\"phase\":\"forward\",\"graph\":0,"
         "\"planned_alloc_bytes\":4096,\"planned_free_bytes\":0,\"planned_live_bytes\":4096}}";
}

TEST(MemoryPlanned, PerGraphPeakNodeAndModulesApartFromTheTrack) {
  TempDir d;
  const std::string f = d.file("planned.pfw");
  testing::write_file(
      f, testing::pfw_text({
             graph_call("0", "forward", 0, "12288", 3, "function.cat.default", "{\"enc\":8192,\"\":4096}"),
             node(1),
             // A later call at a larger size (a dynamic-shape graph): the graph's peak is the highest.
             graph_call("0", "forward", 100, "24576", 3, "function.cat.default", "{\"\":8192,\"enc\":16384}"),
             graph_call("0", "backward", 200, "512", 0, "function.mm.default", "{}"),
             graph_call("1", "forward", 300, "\"oops\"", 0, "function.mm.default", "{}"),
             "{\"name\":\"memory\",\"cat\":\"memory\",\"pid\":7,\"tid\":7,\"ts\":1000050,\"ph\":\"C\",\"args\":{\"cpu\":100}}",
         }));
  const MemoryPeaks m = memory_peaks({f});
  ASSERT_EQ(m.planned.size(), 2u);
  const PlannedGraph& bw = m.planned[0];
  const PlannedGraph& fw = m.planned[1];
  EXPECT_EQ(bw.phase, "backward");
  EXPECT_EQ(bw.peak, 512);
  EXPECT_TRUE(bw.modules.empty());
  EXPECT_EQ(fw.phase, "forward");
  EXPECT_EQ(fw.graph, "0");
  EXPECT_EQ(fw.calls, 2u);
  EXPECT_EQ(fw.peak, 24576);
  EXPECT_EQ(fw.peak_node, 3);
  EXPECT_EQ(fw.peak_op, "function.cat.default");
  ASSERT_EQ(fw.modules.size(), 2u);
  EXPECT_EQ(fw.modules[0].first, "enc");  // bytes descending
  EXPECT_EQ(fw.modules[0].second, 16384);
  EXPECT_EQ(m.bad_planned, 1u);
  EXPECT_EQ(memory_problems_line(m), "skipped 1 graph event whose planned_peak_bytes is not a number");
  // The measured track is the samples' alone: planned bytes are never added to it.
  ASSERT_EQ(m.series.size(), 1u);
  EXPECT_EQ(m.series[0].peak, 100);

  std::ostringstream table, json;
  write_memory_table(table, m);
  write_memory_json(json, m);
  EXPECT_NE(table.str().find("planned memory of compiled graphs"), std::string::npos);
  EXPECT_NE(table.str().find("24.00 KiB"), std::string::npos);
  EXPECT_NE(json.str().find("\"planned\":[{\"pid\":\"7\",\"graph\":\"0\",\"phase\":\"backward\""), std::string::npos);
  EXPECT_NE(json.str().find("\"peak_bytes\":24576,\"peak_node\":3,\"peak_op\":\"function.cat.default\","
                            "\"modules\":[{\"module\":\"enc\",\"bytes\":16384},{\"module\":\"\",\"bytes\":8192}]"),
            std::string::npos);
}

TEST(MemoryPlanned, ListedWithoutAMemoryTrack) {
  TempDir d;
  const std::string f = d.file("planned_only.pfw");
  testing::write_file(f, testing::pfw_text({graph_call("2", "inference", 0, "2048", 1, "function.add.Tensor",
                                                       "{\"fc\":2048}")}));
  const MemoryPeaks m = memory_peaks({f});
  EXPECT_TRUE(m.series.empty());
  ASSERT_EQ(m.planned.size(), 1u);
  std::ostringstream table;
  write_memory_table(table, m);
  EXPECT_NE(table.str().find("no memory counter track"), std::string::npos);
  EXPECT_NE(table.str().find("function.add.Tensor"), std::string::npos);

  // A module "" is the compiled model's own nodes: "(root)", as summary shows them.
  testing::write_file(f, testing::pfw_text({graph_call("2", "inference", 0, "2048", 1, "function.add.Tensor",
                                                       "{\"\":2048}")}));
  std::ostringstream root;
  write_memory_table(root, memory_peaks({f}));
  EXPECT_NE(root.str().find("function.add.Tensor  (root)"), std::string::npos) << root.str();
}

}  // namespace
}  // namespace dftracer::analyze
