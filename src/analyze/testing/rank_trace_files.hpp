// Test helper: hand-made rank trace files in the #16 contract (docs/analyzer.md,
// "Ranks"), with known arrivals and clock offsets, for the ranks and merge suites.
#pragma once

#include <string>
#include <vector>

#include "trace_files.hpp"

namespace dftracer::analyze::testing {

// One rank's trace file, in the #16 contract (docs/analyzer.md, "Ranks").
struct RankFile {
  int rank = 0, pid = 0;
  long long world = 2;
  std::string host = "node-a";
  bool offset = true;
  long long offset_ns = 0, uncertainty_ns = 0;
  bool finalized = true;
  std::vector<std::string> events;  // complete events, raw (this rank's clock)

  std::string meta(const std::string& key, const std::string& value) const {
    return "{\"id\":0,\"name\":\"" + key + "\",\"cat\":\"dftracer\",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(pid) + ",\"ph\":\"M\",\"args\":{\"hhash\":\"ab\",\"name\":\"" + key +
           "\",\"value\":" + value + "}}\n";
  }
  // ts/dur in us on rank 0's clock: written on this rank's own clock.
  void add(const std::string& name, const std::string& cat, long long aligned_ts_us, long long dur_us,
           const std::string& args = "") {
    long long ts = aligned_ts_us - (offset ? offset_ns / 1000 : 0);
    std::string s = "{\"id\":1,\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":" + std::to_string(pid) + ",\"ts\":" + std::to_string(1'700'000'000'000'000 + ts) +
                    ",\"dur\":" + std::to_string(dur_us) + ",\"ph\":\"X\"";
    if (!args.empty()) s += ",\"args\":{" + args + "}";
    events.push_back(s + "}\n");
  }
  void collective(const std::string& name, long long seq, long long ts, long long dur, int group_size = 2,
                  const std::string& extra = "") {
    add(name, "comm", ts, dur,
        "\"bytes\":4096,\"dtype\":\"float32\",\"group_size\":" + std::to_string(group_size) +
            ",\"group\":\"0\",\"seq\":" + std::to_string(seq) + extra);
  }
  std::string text() const {
    std::string s = "[\n" + meta("rank", std::to_string(rank)) + meta("local_rank", std::to_string(rank)) +
                    meta("world_size", std::to_string(world)) + meta("hostname", "\"" + host + "\"");
    if (offset)
      s += meta("clock_offset_ns", std::to_string(offset_ns)) +
           meta("clock_offset_uncertainty_ns", std::to_string(uncertainty_ns));
    for (auto& e : events) s += e;
    if (finalized)
      s += "{\"id\":9,\"name\":\"end\",\"cat\":\"dftracer\",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(pid) + ",\"ts\":1700000009000000,\"dur\":0,\"ph\":\"X\"}\n]\n";
    return s;
  }
};

// Three steps (main-thread region train_step, 1 s apart) on two ranks; rank 1's
// clock runs 5 ms behind rank 0's (offset +5 ms, +-3 us). One all_reduce per
// step with known arrivals (us after the step's start, rank 0's clock):
//   step 0: rank 0 at 100 (dur 50), rank 1 at 120 (dur 30): rank 1 last, rank 0 waits 20
//   step 1: rank 0 at 100 (dur 30), rank 1 at 90 (dur 40):  rank 0 last, rank 1 waits 10
//   step 2: rank 0 at 100 (dur 200050), rank 1 at 200100 (dur 50): rank 1 last, rank 0 waits 200000
// and in step 0 a send 0 -> 1 (rank 0 at 500, dur 40; rank 1's recv at 510, dur 30).
inline std::vector<RankFile> two_ranks() {
  std::vector<RankFile> f(2);
  for (int r = 0; r < 2; ++r) {
    f[r].rank = r;
    f[r].pid = 100 + r;
    f[r].offset_ns = r ? 5'000'000 : 0;
    f[r].uncertainty_ns = r ? 3000 : 0;
  }
  const long long arrive[3][2] = {{100, 120}, {100, 90}, {100, 200100}};
  const long long dur[3][2] = {{50, 30}, {30, 40}, {200050, 50}};
  for (int s = 0; s < 3; ++s)
    for (int r = 0; r < 2; ++r) {
      const long long base = s * 1'000'000LL;
      f[r].collective("all_reduce", s, base + arrive[s][r], dur[s][r]);
      if (s == 0 && r == 0) f[r].add("send", "comm", base + 500, 40, "\"group\":\"0\",\"seq\":0,\"peer\":1");
      if (s == 0 && r == 1) f[r].add("recv", "comm", base + 510, 30, "\"group\":\"0\",\"seq\":0,\"peer\":0");
      f[r].add("train_step", "app", base, 900'000);
    }
  return f;
}

inline std::vector<std::string> write_ranks(const TempDir& d, const std::vector<RankFile>& fs) {
  std::vector<std::string> paths;
  for (const RankFile& f : fs) {
    paths.push_back(d.file("trace-rank" + std::to_string(f.rank) + ".pfw"));
    write_file(paths.back(), f.text());
  }
  return paths;
}

}  // namespace dftracer::analyze::testing
