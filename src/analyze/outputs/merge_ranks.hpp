// What `merge` does for the ranks of a torchrun job, planned from
// one metadata scan (ranks.hpp) before anything is written: each file's clock
// offset to rank 0 (added to its `ts`), pids that two hosts or two ranks share
// given distinct output pids, one `process_name` "rank R (pid P)" and a
// `process_sort_index` R per rank (the input's own process_name of that
// process dropped), and the run's ranks, missing and cut-short ranks and
// clock alignment in otherData.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ranks.hpp"

namespace dftracer::analyze {

struct MergeRankPlan {
  std::vector<int64_t> offset_ns;                         // per file: added to every ts
  std::vector<std::map<std::string, std::string>> pids;   // per file: input pid -> output pid (only changed ones)
  std::vector<std::set<std::string>> named;               // per file: input pids whose process_name we write
  std::vector<std::string> name_events;                   // process_name + process_sort_index per rank
  std::set<std::string> named_out_pids;                   // the output pids those name
  std::string other_data;                                 // ",\"ranks\":{...}" for otherData, "" without ranks
  std::string note;                                       // the one stderr line ("" when all is well)
};

MergeRankPlan plan_rank_merge(const RankReport& r);

}  // namespace dftracer::analyze
