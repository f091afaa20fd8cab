#include "merge_ranks.hpp"

#include <algorithm>
#include <charconv>

#include "summary.hpp"  // append_json_string
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

std::string int_list(const std::vector<int64_t>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + std::to_string(v[i]);
  return o + "]";
}

// Numeric pids get the next free number above every numeric pid seen; a
// string pid gets a suffix, so the output pid never names another process.
class PidAllocator {
 public:
  explicit PidAllocator(const std::vector<RankProcess>& ps) {
    for (const RankProcess& p : ps) {
      int64_t v = 0;
      auto r = std::from_chars(p.pid.data(), p.pid.data() + p.pid.size(), v);
      if (r.ec == std::errc() && r.ptr == p.pid.data() + p.pid.size()) next_ = std::max(next_, v + 1);
    }
  }
  std::string fresh(const std::string& pid) {
    if (!pid.empty() && pid[0] == '"') return pid.substr(0, pid.size() - 1) + "-" + std::to_string(++suffix_) + "\"";
    return std::to_string(next_++);
  }

 private:
  int64_t next_ = 1;
  int suffix_ = 0;
};

}  // namespace

MergeRankPlan plan_rank_merge(const RankReport& r) {
  MergeRankPlan plan;
  const size_t nfiles = r.files.size();
  plan.offset_ns.assign(nfiles, 0);
  plan.pids.resize(nfiles);
  plan.named.resize(nfiles);
  size_t ranks = 0;
  for (const RankProcess& p : r.processes) ranks += p.rank >= 0;
  if (ranks == 0) return plan;  // not a distributed run: merge as before

  // A pid seen in two files is one process only if rank and host agree
  // (a re-init in one process writes a second file with the same pid).
  std::map<std::string, std::pair<int64_t, std::string>> owner;  // output pid -> (rank, host)
  PidAllocator alloc(r.processes);
  std::string ranks_json;
  for (const RankProcess& p : r.processes) {
    if (p.file >= nfiles) continue;
    std::string out_pid = p.pid;
    auto [it, fresh] = owner.try_emplace(p.pid, p.rank, p.hostname);
    if (!fresh && it->second != std::make_pair(p.rank, p.hostname)) {
      out_pid = alloc.fresh(p.pid);
      plan.pids[p.file][p.pid] = out_pid;
      owner.emplace(out_pid, std::make_pair(p.rank, p.hostname));
    }
    if (p.rank < 0) continue;
    if (p.has_offset) plan.offset_ns[p.file] = p.clock_offset_ns;
    plan.named[p.file].insert(p.pid);
    plan.named_out_pids.insert(out_pid);
    std::string label = "rank " + std::to_string(p.rank) + " (pid " + p.pid + ")";
    std::string e = "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + out_pid + ",\"tid\":0,\"args\":{\"name\":";
    append_json_string(e, label);
    plan.name_events.push_back(e + "}}");
    plan.name_events.push_back("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + out_pid +
                               ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(p.rank) + "}}");
    ranks_json += ranks_json.empty() ? "{\"rank\":" : ",{\"rank\":";
    ranks_json += std::to_string(p.rank) + ",\"pid\":" + p.pid + ",\"merged_pid\":" + out_pid + ",\"hostname\":";
    append_json_string(ranks_json, p.hostname);
    ranks_json += ",\"file\":";
    append_json_string(ranks_json, r.files[p.file]);
    ranks_json += std::string(",\"complete\":") + (p.ended ? "true" : "false") + ",\"clock_offset_ns\":" +
                  (p.has_offset ? std::to_string(p.clock_offset_ns) : "null") + ",\"clock_offset_uncertainty_ns\":" +
                  (p.has_uncertainty ? std::to_string(p.uncertainty_ns) : "null") + "}";
  }
  std::string o = ",\"ranks\":{\"world_size\":" + (r.world_size >= 0 ? std::to_string(r.world_size) : "null");
  o += ",\"missing_ranks\":" + int_list(r.missing_ranks) + ",\"incomplete_ranks\":" + int_list(r.incomplete_ranks);
  o += ",\"max_clock_uncertainty_us\":" + json_num(ns_to_us(r.max_uncertainty_ns)) + ",\"alignment\":";
  append_json_string(o, alignment_note(r));
  plan.other_data = o + ",\"processes\":[" + ranks_json + "]}";
  const std::string problems = rank_problems_line(r);
  plan.note = std::to_string(ranks) + " ranks merged; " + alignment_note(r) + (problems.empty() ? "" : "; " + problems);
  return plan;
}

}  // namespace dftracer::analyze
