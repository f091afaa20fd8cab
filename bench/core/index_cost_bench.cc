// The write-time index's cost on the writer thread (src/file/member_index.h):
// the same records formatted by the JSON-lines formatter and written as
// gzip members by GzipMemberSink, once with the index observing every line
// (what a session does) and once without an observer (the sink still writes
// one line per member, with empty statistics, as the version-1 index did),
// alternating rounds so both see the same machine load. The recording
// threads are not involved: nothing on the record path changed.
//
//   build/bench/core/bench_index_cost [EVENTS=2000000] [ROUNDS=5]
//
// Prints per round and variant the writer thread's CPU seconds and wall
// seconds, events per CPU second, and the sidecar's size beside the trace's;
// then the index observer's own cost per event with and without
// args.flops / args.bytes in the args it is handed.
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gzip_member_sink.h"
#include "json_lines_formatter.h"
#include "member_index.h"
#include "record.h"
#include "string_table.h"

using namespace dftracer;

namespace {

double thread_cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t file_size(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Op-like events on 4 threads: a parent region per 8 ops, written after its
// children (end order), 12 op names in 3 categories, like a training step.
std::vector<RecordHeader> make_records(size_t n) {
  StringTable& st = StringTable::instance();
  const char* ops[] = {"aten.mm.default",   "aten.addmm.default", "aten.relu.default", "aten.add.Tensor",
                       "aten.mul.Tensor",   "aten._softmax.default", "aten.bmm.default", "aten.view.default",
                       "aten.t.default",    "aten.gelu.default",  "aten.native_layer_norm.default",
                       "aten.threshold_backward.default"};
  const char* cats[] = {"dynamo", "torch", "cpu"};
  std::vector<RecordHeader> v(n);
  uint64_t t = 1700000000000000000ull;
  uint32_t parent = st.intern("graph_call", 10), pcat = st.intern("dynamo", 6);
  for (size_t i = 0; i < n; ++i) {
    RecordHeader& r = v[i];
    r.kind = RecordKind::kComplete;
    r.flags = kTimeIsNs;
    r.nslots = 2;
    r.nargs = 0;
    if (i % 9 == 8) {  // the parent of the 8 ops before it
      r.start = t - 8 * 2500 - 100;
      r.end = 8 * 2500 + 200;
      r.name = parent;
      r.cat = pcat;
      t += 1000;
    } else {
      r.start = t;
      r.end = 1500 + (i * 37) % 900;
      r.name = st.intern(ops[i % 12], std::char_traits<char>::length(ops[i % 12]));
      r.cat = st.intern(cats[i % 3], std::char_traits<char>::length(cats[i % 3]));
      t += 2500;
    }
  }
  return v;
}

struct Result {
  double cpu = 0, wall = 0;
  uint64_t trace_bytes = 0, index_bytes = 0;
};

Result run(const std::vector<RecordHeader>& recs, bool with_index, const std::string& dir) {
  SessionInfo info;
  info.pid = 4242;
  info.main_tid = 4242;
  info.config.whole_micros = false;
  std::string path = dir + (with_index ? "/with.pfw.gz" : "/without.pfw.gz");
  ::unlink(path.c_str());
  ::unlink((path + ".idx").c_str());
  std::string error;
  bool taken = false;
  std::unique_ptr<TraceSink> sink = GzipMemberSink::open(path, 1, &error, &taken);
  if (!sink) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::exit(1);
  }
  JsonLinesFormatter fmt(info);
  if (with_index) fmt.set_observer(sink->event_observer());
  OutBuffer out(2u << 20);
  double c0 = thread_cpu();
  auto w0 = std::chrono::steady_clock::now();
  uint64_t emitted = 0;
  auto emit = [&] {
    sink->write_chunk(out.data(), out.size(), fmt.lines() - emitted);
    emitted = fmt.lines();
    out.clear();
  };
  fmt.preamble(&out);
  for (size_t i = 0; i < recs.size(); ++i) {
    fmt.event(&recs[i], 4242 + static_cast<int64_t>(i / 9 % 4), &out);
    if (out.size() >= (1u << 20)) emit();
  }
  fmt.end(4242, 1700000000000000000ull + recs.size() * 3000, fmt.lines(), 0, &out);
  emit();
  sink->close();
  Result r;
  r.cpu = thread_cpu() - c0;
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  r.trace_bytes = file_size(path);
  r.index_bytes = file_size(path + ".idx");
  return r;
}

// The index's own cost per complete event for three kinds of args text (the
// members the formatter hands the observer): none, a compiled op's args
// without flops/bytes, and with them (the writer then finds and parses both
// numbers). Isolates what reading args.flops / args.bytes adds; 4 threads'
// worth of cells, the same names as the records above.
void args_cost(size_t events) {
  const char* kinds[][2] = {
      {"no args", ""},
      {"args, no flops",
       "\"hhash\":\"a1b2c3d4e5f60718\",\"phase\":\"forward\",\"graph\":0,\"node\":7,\"module\":\"model.layer1\","
       "\"shapes\":\"[[8, 16], [16, 32]]\",\"dtype\":\"float32\""},
      {"args + flops/bytes",
       "\"hhash\":\"a1b2c3d4e5f60718\",\"phase\":\"forward\",\"graph\":0,\"node\":7,\"module\":\"model.layer1\","
       "\"shapes\":\"[[8, 16], [16, 32]]\",\"dtype\":\"float32\",\"flops\":8192,\"bytes\":3072"}};
  std::printf("index observer CPU per complete event (MemberIndex::complete), by args text:\n");
  for (auto& k : kinds) {
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      MemberIndex index;
      index.file_pid(4242);
      const size_t len = std::char_traits<char>::length(k[1]);
      uint64_t t = 1700000000000000000ull;
      double c0 = thread_cpu();
      for (size_t i = 0; i < events; ++i) {
        const char* name = i % 2 ? "aten.mm.default" : "aten.add.Tensor";
        index.complete(name, 15, "dynamo", 6, 4242 + static_cast<int64_t>(i % 4), t, 1500, k[1], len);
        t += 2500;
      }
      best = std::min(best, thread_cpu() - c0);
    }
    std::printf("  %-20s %6.1f ns\n", k[0], best / events * 1e9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  char tmpl[] = "/tmp/dft-index-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::vector<RecordHeader> recs = make_records(events);
  std::printf("%zu events, %d rounds (alternating order); writer-thread CPU and wall seconds\n", events, rounds);
  std::printf("%-6s %-8s %9s %9s %14s %12s %10s\n", "round", "index", "cpu_s", "wall_s", "events/cpu_s", "trace_B",
              "idx_B");
  double best[2] = {1e30, 1e30}, best_wall[2] = {1e30, 1e30};
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      bool with = (r + k) % 2 == 0;
      Result res = run(recs, with, dir);
      best[with] = std::min(best[with], res.cpu);
      best_wall[with] = std::min(best_wall[with], res.wall);
      std::printf("%-6d %-8s %9.3f %9.3f %14.0f %12llu %10llu\n", r, with ? "on" : "off", res.cpu, res.wall,
                  events / res.cpu, static_cast<unsigned long long>(res.trace_bytes),
                  static_cast<unsigned long long>(res.index_bytes));
    }
  }
  std::printf("best cpu: off %.3f s, on %.3f s: +%.1f%% writer CPU (%.0f ns/event); best wall: off %.3f, on %.3f\n",
              best[0], best[1], (best[1] / best[0] - 1) * 100, (best[1] - best[0]) / events * 1e9, best_wall[0],
              best_wall[1]);
  args_cost(events);
  std::string cmd = "rm -rf " + dir;
  return std::system(cmd.c_str()) == 0 ? 0 : 1;
}
