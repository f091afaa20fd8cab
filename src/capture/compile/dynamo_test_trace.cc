#include "dynamo_test_trace.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "call_stack.h"
#include "dftracer/dftracer.h"
#include "graph_call.h"

using namespace dftracer_test;

namespace dynamo_test {
namespace {

// The number after `"key":` in a JSON line, as written: for ts/dur,
// microseconds with up to three decimals, returned in ns; -1 when absent.
int64_t field_ns(const std::string& line, const char* key) {
  const std::string k = std::string("\"") + key + "\":";
  const size_t at = line.find(k);
  if (at == std::string::npos) return -1;
  const char* p = line.c_str() + at + k.size();
  char* end = nullptr;
  const int64_t whole = std::strtoll(p, &end, 10);
  int64_t frac = 0;
  int digits = 0;
  if (*end == '.') {
    for (++end; *end >= '0' && *end <= '9' && digits < 3; ++end, ++digits) frac = frac * 10 + (*end - '0');
  }
  for (; digits < 3; ++digits) frac *= 10;
  return whole * 1000 + frac;
}

uint64_t field_u64(const std::string& line, const char* key) {
  const std::string k = std::string("\"") + key + "\":";
  const size_t at = line.find(k);
  if (at == std::string::npos) return 0;
  return std::strtoull(line.c_str() + at + k.size(), nullptr, 10);
}

}  // namespace

Session::Session() : dir_(temp_dir("dynamo")), env_("DFTRACER_TRACE_COMPRESSION", "0") {
  EXPECT_EQ(dft_init_opt_in((dir_ + "/t").c_str(), nullptr, -1), 0);
  path_ = dft_trace_path();
}

std::vector<TracedEvent> Session::finish() {
  dft_finalize();
  const std::vector<std::string> lines = event_lines(read_all(path_));
  const std::vector<Event> parsed = parse_events(lines);
  std::vector<TracedEvent> out;
  if (parsed.size() != lines.size()) {
    ADD_FAILURE() << "some lines of " << path_ << " do not parse";
    return out;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    TracedEvent t;
    t.e = parsed[i];
    t.ts_ns = field_ns(lines[i], "ts");
    t.dur_ns = std::max<int64_t>(field_ns(lines[i], "dur"), 0);
    if (t.e.ph == "s" || t.e.ph == "f") t.flow_id = field_u64(lines[i], "id");
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<TracedEvent> dynamo_events(const std::vector<TracedEvent>& all, const std::string& ph) {
  std::vector<TracedEvent> out;
  for (const TracedEvent& t : all)
    if (t.e.cat == "dynamo" && t.e.ph == ph) out.push_back(t);
  return out;
}

std::vector<TracedEvent> named(const std::vector<TracedEvent>& evs, const std::string& name) {
  std::vector<TracedEvent> out;
  for (const TracedEvent& t : evs)
    if (t.e.name == name) out.push_back(t);
  return out;
}

std::vector<GraphCall> graph_calls(const std::vector<TracedEvent>& all) {
  std::vector<GraphCall> out;
  std::map<int64_t, GraphCall> open;  // by thread
  for (const TracedEvent& t : all) {
    if (t.e.cat != "dynamo") continue;
    GraphCall& cur = open[t.e.tid];
    if (t.e.ph == "s") cur.starts.insert(t.flow_id);
    if (t.e.ph == "f") cur.finishes.insert(t.flow_id);
    if (t.e.ph != "X") continue;
    if (t.e.name.rfind("graph.", 0) != 0) {
      cur.ops.push_back(t);
      continue;
    }
    cur.call = t;
    out.push_back(std::move(cur));
    cur = GraphCall{};
  }
  return out;
}

dftracer::dynamo::GraphSpec simple_graph(int phase, int n, int graph_id, std::vector<int> flows,
                                          uint32_t n_flow_groups, int pair_slot) {
  static const char* kPhase[] = {"forward", "backward", "inference"};
  dftracer::dynamo::GraphSpec s;
  s.event_name = std::string("graph.") + kPhase[phase];
  s.fragment = "\"graph\":" + std::to_string(graph_id);
  s.phase = phase;
  for (int i = 0; i < n; ++i) {
    s.names.push_back("function.op" + std::to_string(i));
    s.fragments.push_back("\"node\":" + std::to_string(i));
  }
  s.flows = flows.empty() ? std::vector<int>(n, -1) : std::move(flows);
  s.n_flow_groups = n_flow_groups;
  s.pair_slot = pair_slot;
  return s;
}

dftracer::dynamo::GraphSpec inner_graph(int graph_id) {
  dftracer::dynamo::GraphSpec g = simple_graph(dftracer::dynamo::kInference, 1, graph_id);
  g.event_name = "graph.inner";
  g.names[0] = "function.inner_op";
  return g;
}

void run_call(int slot, int n, int grad, uint32_t tags, uint64_t begin_key, uint64_t end_key) {
  dftracer::dynamo::begin_call(slot, grad, tags, begin_key);
  for (int i = 0; i <= n; ++i) dftracer::dynamo::mark(i);
  dftracer::dynamo::end_call(end_key);
}

}  // namespace dynamo_test
