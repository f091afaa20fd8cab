// Partial summaries (the Dask path): a file read as ranges of its gzip
// members, each summarized alone and the parts combined, gives exactly the
// summary of one read -- self times of threads whose nesting spans the ranges
// included -- and a damaged part or one of other keys is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "diff.hpp"
#include "summary_expect.hpp"
#include "module_tree.hpp"
#include "partial_summary.hpp"
#include "summary.hpp"
#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

// Two threads of nested events written in end order (children first), each
// thread inside one region written last, so nesting spans every member.
std::string nested_trace(int steps) {
  std::mt19937 rng(11);
  std::vector<std::string> lines;
  for (int tid : {4243, 4244}) {
    double t = 1000.0 + tid;
    const double start = t;
    for (int s = 0; s < steps; ++s) {
      const double step_start = t;
      for (int k = 0; k < 3; ++k) {
        double dur = 1 + rng() % 50;
        lines.push_back(op_event(s * 10 + k, k % 2 ? "aten::mm" : "aten::add", t, dur, k ? "backward" : "forward",
                                 "model.layer" + std::to_string(k), 1000 * (k + 1), 64, 4242, tid,
                                 "\"step\":" + std::to_string(s)));
        t += dur + 0.5;
      }
      lines.push_back(op_event(s, "train_step", step_start, t - step_start, "forward", "model", -1, -1, 4242, tid));
      t += 2;
    }
    lines.push_back(op_event(0, "epoch", start, t - start + 1, "forward", "model", -1, -1, 4242, tid));
  }
  // Threads interleave in runs of lines, as the writer's chunks do.
  std::vector<std::string> mixed;
  size_t half = lines.size() / 2, a = 0, b = half;
  while (a < half || b < lines.size()) {
    for (int i = 0; i < 5 && a < half; ++i) mixed.push_back(lines[a++]);
    for (int i = 0; i < 3 && b < lines.size(); ++i) mixed.push_back(lines[b++]);
  }
  return pfw_text(mixed);
}

TEST(PartialSummary, MemberRangesCombinedEqualOneRead) {
  TempDir dir;
  const std::string path = dir.file("t.pfw.gz");
  write_gz(path, nested_trace(400), 97, /*index=*/true);
  std::vector<MemberRange> ranges = gzip_member_ranges(path, 4096);
  ASSERT_GE(ranges.size(), 4u);
  for (const char* by : {"name", "tid", "module,phase", "args.step"}) {
    std::vector<GroupKey> keys = parse_group_keys(by);
    Summary want = summarize({path}, keys, 0, 2);
    std::vector<std::string> parts;
    for (const MemberRange& r : ranges) parts.push_back(partial_summary_range(path, 0, r, keys));
    std::reverse(parts.begin(), parts.end());  // any order
    expect_same_summary(want, combine_partials(parts, keys, 0), by, {/*read_stats=*/true});
  }
}

// The other combine steps of the Dask path: diff joins two runs' combined
// partials, the module tree is built from the merged aggregate by module.
// The memory capture's sums travel in the parts too.
TEST(PartialSummary, MemorySumsCombinedEqualOneRead) {
  TempDir dir;
  const std::string path = dir.file("m.pfw.gz");
  std::vector<std::string> lines;
  for (int i = 0; i < 600; ++i)
    lines.push_back(op_event(i, i % 3 ? "aten::mm" : "aten::add", 1000 + i * 10, 5, "forward", "m", -1, -1, 4242, 4243,
                             "\"alloc_bytes\":" + std::to_string(64 * (i % 7)) + ",\"free_bytes\":" + std::to_string(i % 5)));
  write_gz(path, pfw_text(lines), 61, /*index=*/true);
  std::vector<GroupKey> keys = parse_group_keys("name");
  Summary want = summarize({path}, keys, 0, 1);
  ASSERT_TRUE(want.has_memory);
  std::vector<std::string> parts;
  for (const MemberRange& r : gzip_member_ranges(path, 4096)) parts.push_back(partial_summary_range(path, 0, r, keys));
  ASSERT_GE(parts.size(), 3u);
  Summary got = combine_partials(parts, keys, 0);
  ASSERT_TRUE(got.has_memory);
  ASSERT_EQ(got.rows.size(), want.rows.size());
  for (size_t i = 0; i < want.rows.size(); ++i) {
    EXPECT_EQ(got.rows[i].key, want.rows[i].key);
    EXPECT_EQ(got.rows[i].alloc_bytes, want.rows[i].alloc_bytes);
    EXPECT_EQ(got.rows[i].free_bytes, want.rows[i].free_bytes);
  }
}

TEST(PartialSummary, DiffAndModuleTreeFromPartsEqualOneRead) {
  TempDir dir;
  const std::string a = dir.file("a.pfw.gz"), b = dir.file("b.pfw.gz");
  write_gz(a, nested_trace(150), 53, true);
  write_gz(b, nested_trace(260), 71, true);
  auto parts_of = [](const std::string& path, const std::vector<GroupKey>& keys) {
    std::vector<std::string> parts;
    for (const MemberRange& r : gzip_member_ranges(path, 4096)) parts.push_back(partial_summary_range(path, 0, r, keys));
    EXPECT_GE(parts.size(), 3u);
    return parts;
  };
  for (const char* by : {"name", "module,phase"}) {
    SCOPED_TRACE(by);
    std::vector<GroupKey> keys = parse_group_keys(by);
    Diff want = diff_traces({a}, {b}, keys, 0, 2);
    Diff got = diff_summaries(combine_partials(parts_of(a, keys), keys, 0), combine_partials(parts_of(b, keys), keys, 0), 0);
    ASSERT_EQ(want.rows.size(), got.rows.size());
    EXPECT_EQ(want.traced_a_us, got.traced_a_us);
    EXPECT_EQ(want.traced_b_us, got.traced_b_us);
    for (size_t i = 0; i < want.rows.size(); ++i) {
      EXPECT_EQ(want.rows[i].key, got.rows[i].key);
      EXPECT_EQ(want.rows[i].count_a, got.rows[i].count_a);
      EXPECT_EQ(want.rows[i].count_b, got.rows[i].count_b);
      EXPECT_EQ(want.rows[i].times(), got.rows[i].times());
    }
  }
  std::vector<GroupKey> module = parse_group_keys("module");
  ModuleTree want = module_tree({b}, 2);
  ReadStats st;
  ModuleTree got = build_module_tree(*merge_partials(parts_of(b, module), module, &st));
  ASSERT_EQ(want.nodes.size(), got.nodes.size());
  ASSERT_GT(want.nodes.size(), 2u);
  EXPECT_EQ(want.traced_ns, got.traced_ns);
  EXPECT_EQ(want.unattributed_ns, got.unattributed_ns);
  for (size_t i = 0; i < want.nodes.size(); ++i) {
    EXPECT_EQ(want.nodes[i].path, got.nodes[i].path);
    EXPECT_EQ(want.nodes[i].self_ns, got.nodes[i].self_ns);
    EXPECT_EQ(want.nodes[i].total_ns, got.nodes[i].total_ns);
    EXPECT_EQ(want.nodes[i].count, got.nodes[i].count);
  }
  EXPECT_EQ(st.events, want.stats.events);
}

// The workers apply a time window to member ranges as the local reader does
// to the whole file (Dask: summary(..., from_ts=, to_ts=, client=)).
TEST(PartialSummary, WindowedRangesCombinedEqualAWindowedRead) {
  TempDir dir;
  const std::string path = dir.file("t.pfw.gz");
  write_gz(path, nested_trace(400), 97, true);
  std::vector<MemberRange> ranges = gzip_member_ranges(path, 4096);
  ASSERT_GE(ranges.size(), 4u);
  std::vector<GroupKey> keys = parse_group_keys("name");
  Summary all = summarize({path}, keys, 0, 2);
  ReadOptions ro;
  ro.from_ns = (1000 + 4243 + 3000) * 1000LL;  // a middle stretch of both threads
  ro.to_ns = (1000 + 4243 + 9000) * 1000LL;
  Summary want = summarize({path}, keys, 0, 2, ro);
  ASSERT_GT(want.complete_events, 0u);
  ASSERT_LT(want.complete_events, all.complete_events);
  std::vector<std::string> parts;
  for (const MemberRange& r : ranges) parts.push_back(partial_summary_range(path, 0, r, keys, ro));
  expect_same_summary(want, combine_partials(parts, keys, 0), "window", {/*read_stats=*/true});
}

TEST(PartialSummary, SelfTimeNeedsTheRunsOfOtherRanges) {
  // Each range alone counts the epoch's children as top level: the traced time
  // of the parts summed separately is larger than the one read's.
  TempDir dir;
  const std::string path = dir.file("t.pfw.gz");
  write_gz(path, nested_trace(200), 61, true);
  std::vector<GroupKey> keys = parse_group_keys("name");
  double separate = 0;
  for (const MemberRange& r : gzip_member_ranges(path, 2048))
    separate += combine_partials({partial_summary_range(path, 0, r, keys)}, keys, 0).traced_us;
  EXPECT_GT(separate, summarize({path}, keys, 0, 1).traced_us);
}

TEST(PartialSummary, FilesOfOnePartAndOfManyPartsAgree) {
  TempDir dir;
  std::vector<std::string> files;
  for (int i = 0; i < 6; ++i) {
    files.push_back(dir.file("f" + std::to_string(i) + ".pfw"));
    write_file(files.back(), nested_trace(20 + i));
  }
  std::vector<GroupKey> keys = parse_group_keys("name");
  Summary want = summarize(files, keys, 0, 2);
  std::vector<std::string> parts;
  for (size_t i = 0; i < files.size(); i += 2)
    parts.push_back(partial_summary({files[i], files[i + 1]}, {i, i + 1}, keys, 1));
  expect_same_summary(want, combine_partials(parts, keys, 0), "files in pairs", {/*read_stats=*/true});
}

TEST(PartialSummary, DamagedOrForeignPartsAreRefused) {
  TempDir dir;
  const std::string path = dir.file("t.pfw");
  write_file(path, nested_trace(5));
  std::vector<GroupKey> keys = parse_group_keys("name");
  std::string part = partial_summary({path}, {0}, keys, 1);
  EXPECT_THROW(combine_partials({part.substr(0, part.size() / 2)}, keys, 0), std::invalid_argument);
  EXPECT_THROW(combine_partials({part + "x"}, keys, 0), std::invalid_argument);
  EXPECT_THROW(combine_partials({"garbage"}, keys, 0), std::invalid_argument);
  EXPECT_THROW(combine_partials({part}, parse_group_keys("cat"), 0), std::invalid_argument);
}

TEST(PartialSummary, WithoutIndexAFileIsOneRange) {
  TempDir dir;
  const std::string path = dir.file("t.pfw.gz");
  write_gz(path, nested_trace(100), 50, /*index=*/false);
  std::vector<MemberRange> r = gzip_member_ranges(path, 1024);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].begin, 0u);
}

}  // namespace
}  // namespace dftracer::analyze::testing
