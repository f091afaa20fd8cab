// dftracer-analyze: summary, merge and report over .pfw / .pfw.gz / Chrome JSON traces.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "category_wall.hpp"
#include "device_steps.hpp"
#include "device_time.hpp"
#include "diff.hpp"
#include "efficiency.hpp"
#include "io_view.hpp"
#include "memory.hpp"
#include "merge.hpp"
#include "module_tree.hpp"
#include "output_file.hpp"
#include "ranks.hpp"
#include "python_delegate.hpp"
#include "report.hpp"
#include "step_select.hpp"
#include "steps.hpp"
#include "summary.hpp"
#include "trace_reader.hpp"
#include "trace_time.hpp"
#include "trace_window.hpp"

using namespace dftracer::analyze;

namespace {

const char* kUsage =
    "usage: dftracer-analyze <command> [options] PATH...\n"
    "\n"
    "PATH: .pfw, .pfw.gz, Chrome trace .json/.json.gz files, directories, or glob patterns.\n"
    "\n"
    "commands:\n"
    "  summary   time per group: count, self, total, mean, min, p50, p95, max, share, GFLOP/s, GB/s\n"
    "            (self: duration minus the events nested inside it on the same thread; share:\n"
    "            of the traced time, the self times of all events, so shares add up to 100%);\n"
    "            with memory capture: allocated, freed, net (self bytes of the groups' ops)\n"
    "              --by KEYS      name (default), cat, pid, tid, module, phase, graph, step, epoch, ...,\n"
    "                             category (compile, forward, backward, optimizer, comm, data, gc, other),\n"
    "                             or\n"
    "                             any args.<key> (e.g. args.step); comma-joined for several;\n"
    "                             step alone: per training step, its time split into compile,\n"
    "                             forward, backward, optimizer, comm, data, gc, other, outliers flagged\n"
    "              --top N        the N groups with the most self time, or total with --sort total\n"
    "              --sort S       self (default) or total: the order of the rows and of --top\n"
    "              --format F     table (default), json or csv\n"
    "              -o FILE        write there instead of stdout\n"
    "              --tree         with --by module: self and total time per nn.Module path as an\n"
    "                             indented tree (a node's total = its self + its children's totals);\n"
    "                             siblings by --sort total (default), self or count; --top N: the\n"
    "                             N first children of every node\n"
    "              --efficiency   per group (--by name, module, ...): FLOPs, bytes, GFLOP/s, GB/s,\n"
    "                             FLOP/byte, the roofline's attainable GFLOP/s and the fraction of it\n"
    "                             achieved, against the peaks of 'calibrate'; --sort COLUMN: self\n"
    "                             (default), count, flops, bytes, gflops, gbps, ai, attainable_gflops\n"
    "                             or peak_frac\n"
    "              --calibration FILE  the peaks to use (default: dftracer-calibration.json beside\n"
    "                             an input, else the one in the user's cache dir)\n"
    "  memory    the memory counter track (DFTRACER_MEMORY=1): per process and device, the peak of\n"
    "            bytes allocated, when it was, the first and last samples; compiled graphs' planned\n"
    "            peaks (capture backend), apart; --format table or json\n"
    "  diff A B  two runs compared per group (A, B: each a file, directory or glob): count, self and\n"
    "            total time in A and B and their deltas, sorted by |self-time delta| (a group found\n"
    "            in one run only has 0 in the other); --sort total or count: by |total delta| or\n"
    "            |count delta|; --by, --top, --format, -o as for summary\n"
    "  merge     all inputs into one strict-JSON trace for Perfetto / chrome://tracing\n"
    "              -o FILE        output, .json or .json.gz (required)\n"
    "              --epoch-ts     keep epoch timestamps (default: microseconds from\n"
    "                             otherData.ts_base_us, exact for sub-us events in viewers)\n"
    "  report    one self-contained HTML page, opening on the answer (top self-time ops and modules,\n"
    "            compile vs run, per step), then the module tree, the roofline, steps per process over\n"
    "            time and the skipped input; prints the answer's lines\n"
    "              -o FILE        output .html (required)\n"
    "              --top N        rows of the ops, modules, compile and regions charts (default 20)\n"
    "              --calibration FILE  peaks for the roofline (as for summary --efficiency)\n"
    "  calibrate [DIR]  measures this machine's peaks for --efficiency and the roofline: the best\n"
    "            float32 GFLOP/s and memory GB/s of our kernels and, when a Python with torch is found\n"
    "            ($DFTRACER_PYTHON, the python3 beside this command, python3 on PATH), of torch's mm,\n"
    "            conv2d, copy and add, at 1 thread and at --threads (default: every CPU); a few\n"
    "            seconds; writes DIR/dftracer-calibration.json, or -o FILE, or by default the user's\n"
    "            cache dir ($XDG_CACHE_HOME/dftracer/calibration.json)\n"
    "              --force        on a loaded machine (more runnable tasks than the CPUs it leaves\n"
    "                             free): write the peaks marked \"loaded\" instead of refusing\n"
    "              --no-torch     our kernels only\n"
    "            --by rank: per rank (torchrun): count, self, total, time in collectives, waiting;\n"
    "            in the order read, or by --sort self|total (self with --top alone), --top N\n"
    "  ranks     across ranks: step x rank table, per step the straggler rank, every collective matched\n"
    "            across ranks by (group, name, seq): who arrived last, the others' wait and transfer\n"
    "              --format F     table (default), json (every table) or csv (one table: --table)\n"
    "              --table T      csv: ranks, steps (default), stragglers, collectives or waits\n"
    "              --top N        text: the N collectives with the longest spread (default 20)\n"
    "  io        POSIX/STDIO events: bytes and time by file, call and process, bandwidth over time,\n"
    "            small-I/O counts\n"
    "              --small-bytes N  a data call moving fewer bytes is small I/O (default 4096)\n"
    "              --bin-ms N       bandwidth bin width in ms (default 1000)\n"
    "              --top N          table: the N files, calls and processes with the most time,\n"
    "                               then one line for the rest (default 20; 0: all; not with json)\n"
    "              --format F       table (default) or json;  -o FILE  write there instead of stdout\n"
    "  device    device time from torch.profiler/Kineto traces (kernel, gpu_memcpy, gpu_memset events):\n"
    "            each linked to its launch call (correlation), CPU op (External id), module and\n"
    "            ProfilerStep; device time beside CPU time, launch delay, GPU idle time per step,\n"
    "            each step GPU-bound or CPU-bound\n"
    "              --by T         op (default), kernel, module, phase, category, stream or step\n"
    "              --top N        table, csv: the first N rows;  --format table|json|csv;  -o FILE\n"
    "  export    every event as a Parquet dataset, hive-partitioned by rank when the traces carry\n"
    "            rank metadata, else by pid (run by Python: pyarrow)\n"
    "              --format parquet -o DIR   DIR must not exist or be empty;  --dask SCHEDULER\n"
    "  summary --dask SCHEDULER   read on a Dask cluster (address, or 'local' for a LocalCluster\n"
    "            of --workers N processes): same numbers; run by Python (dftracer.analyze)\n"
    "\n"
    "common options:\n"
    "  --threads N     reader threads, 1 to 1024 (default: all cores; never more than the\n"
    "                  cores or the pieces of input there are)\n"
    "  --no-progress   no progress bar (it only shows when stderr is a terminal)\n"
    "  --max-line-mib N      skip (and count) lines longer than N MiB (default 16)\n"
    "  --max-document-mib N  skip (and count) whole-document JSON larger than N MiB (default 1024)\n"
  "  --from TS, --to TS    read only events with TS_from <= ts < TS_to, in the file's ts unit\n"
  "                        (microseconds since the epoch, decimals allowed), or relative: +1.5s,\n"
  "                        +250ms after the trace start, -2s before its end (units s ms us ns;\n"
  "                        start/end: the inputs' first ts and last ts+dur, each run's own for\n"
  "                        diff); metadata is always read; gzip members the write-time index\n"
  "                        puts outside are not inflated\n"
  "  --steps RANGE         summary (every --by, --tree, --efficiency), memory, io, merge, report, diff:\n"
  "                        only the events inside the chosen steps of their process (the steps\n"
  "                        summary --by step finds and numbers from 0), as a Python slice: 1: (all\n"
  "                        but the first), 3:10, :-1, 4 (one step); a process without steps keeps\n"
  "                        none; with --by step, the chosen steps' rows\n"
  "  --no-index            summary: read the events even where write-time indexes could answer\n"
  "                        (the JSON output's \"index\" says which was used)\n"
    "\n"
    "An option the command would not use (--sort with io, --top with memory, --format with\n"
    "merge, ...) is a usage error, never ignored.\n"
    "\n"
    "Bad input (garbage or half lines, wrongly typed fields, truncated gzip members, empty files) is\n"
    "skipped and counted in one line on stderr; the exit status is 0 when any event was read, 1 when\n"
    "none was, 2 for a usage error, a missing or unreadable path, an output that is one of the inputs,\n"
    "or an output that could not be written.\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "dftracer-analyze: %s\n(run 'dftracer-analyze --help' for usage)\n", msg.c_str());
  std::exit(2);
}

size_t parse_count(const std::string& opt, const char* v) {
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (!*v || *end || n < 0) usage_error(opt + " needs a non-negative integer, not '" + v + "'");
  return static_cast<size_t>(n);
}

// An integer option in [lo, hi]: anything else (0 or huge --threads, text,
// a value that overflows) is one line and exit 2, never a wrapped value.
long long parse_bounded(const std::string& opt, const char* v, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (!*v || *end || errno == ERANGE || n < lo || n > hi)
    usage_error(opt + " needs an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not '" + v +
                "'");
  return n;
}

constexpr long long kMaxLimitMib = 1 << 20;  // 1 TiB: a size limit, not a wish

struct Args {
  std::string command;
  std::vector<std::string> paths;
  std::string by = "name", format = "table", out, sort = "self", table = "steps";
  size_t top = 0;
  bool top_set = false;
  std::set<std::string> given;  // the options on the command line (-o for --output)
  unsigned threads = default_threads();
  bool progress = true;
  bool epoch_ts = false;
  bool tree = false;
  bool efficiency = false;
  std::string calibration;
  bool force = false, torch = true;  // calibrate
  uint64_t max_line_mib = ReadOptions::kDefaultMaxLineBytes >> 20;
  uint64_t max_document_mib = ReadOptions::kDefaultMaxDocumentBytes >> 20;
  IoOptions io;
  StepSlice steps;  // --steps (step_select.hpp)
  WindowBound from, to;  // resolved against the inputs once they are known (trace_window.hpp)
  bool use_index = true;
};

// --from/--to: absolute (microseconds as the file's ts) or relative (+1.5s, -2s).
WindowBound parse_window(const std::string& opt, const char* v) {
  try {
    return parse_window_bound(v);
  } catch (const std::invalid_argument& e) {
    usage_error(opt + ": " + e.what());
  }
}

// Sets the reader's window for `files`; a window that resolves empty is a usage error.
// `side`: "A: " or "B: " for diff, whose runs each have their own window.
void resolve_window_or_exit(const Args& a, const std::vector<std::string>& files, ReadOptions* ro,
                            const char* side = "") {
  try {
    resolve_window(a.from, a.to, files, a.threads, ro);
  } catch (const std::invalid_argument& e) {
    usage_error(side + std::string(e.what()));
  }
}

// --steps: the reader keeps the chosen steps' events (step_select.hpp); a
// range that cannot apply (no steps, none picked) is a usage error.
void apply_steps_or_exit(const Args& a, const std::vector<std::string>& files, ReadOptions* ro,
                         const char* side = "") {
  try {
    apply_step_filter(a.steps, files, a.threads, ro);
  } catch (const std::invalid_argument& e) {
    usage_error(side + std::string(e.what()));
  }
}

// An option the command would not use is refused (one line, exit 2), never
// silently dropped: a user who asks for an order or a cut gets it or is told.
void refuse_unused_options(const Args& a) {
  const std::string& c = a.command;
  auto given = [&](const char* opt) { return a.given.count(opt) > 0; };
  if (given("--by") && c != "summary" && c != "diff" && c != "device")
    usage_error("--by works only with summary, diff and device, not " + c);
  if (given("--sort") && c != "summary" && c != "diff")
    usage_error("--sort works only with summary and diff, not " + c);
  if (given("--top") && (c == "merge" || c == "memory" || c == "calibrate"))
    usage_error("--top: " + c + " has no rows to cut");
  if (given("--format") && c == "merge") usage_error("--format: merge writes the format -o names (.json or .json.gz)");
  if (given("--format") && c == "report") usage_error("--format: report writes one HTML page");
  if (given("--format") && c == "calibrate") usage_error("--format: calibrate writes its peaks as JSON");
  if (given("--calibration") && c != "report" && !(c == "summary" && a.efficiency))
    usage_error("--calibration works only with summary --efficiency and report");
  if (given("--table") && !(c == "ranks" && a.format == "csv"))
    usage_error("--table picks the one table of ranks --format csv (table and json show them all)");
  for (const char* opt : {"--small-bytes", "--bin-ms"})
    if (given(opt) && c != "io") usage_error(std::string(opt) + " works only with io");
  if (given("--epoch-ts") && c != "merge") usage_error("--epoch-ts works only with merge");
  if (given("--no-index") && c != "summary") usage_error("--no-index works only with summary");
  if (given("--steps") && (c == "ranks" || c == "device" || c == "calibrate" || (c == "summary" && a.by == "rank")))
    usage_error("--steps: " + c + (c == "summary" ? " --by rank" : "") +
                " does not take a step range (ranks and device tables are per step already; calibrate reads no trace)");
  if (c == "calibrate")
    for (const char* opt : {"--from", "--to", "--max-line-mib", "--max-document-mib"})
      if (given(opt)) usage_error(std::string(opt) + ": calibrate reads no trace");
  if (c == "device" && a.format == "json" && (given("--top") || given("--by")))
    usage_error(std::string(given("--top") ? "--top" : "--by") +
                ": device --format json writes every table whole (--by and --top pick a table's rows)");
  if (c == "device" && a.by == "step" && given("--top")) usage_error("device --by step shows every step: no --top");
  if (c == "io" && a.format == "json" && given("--top"))
    usage_error("--top: io --format json holds every file, call and process (--top cuts the table)");
  if (c == "ranks" && a.format != "table" && given("--top"))
    usage_error("--top cuts the collectives of the ranks text; --format " + a.format + " holds every row");
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) usage_error("missing command");
  a.command = argv[1];
  if (a.command == "-h" || a.command == "--help" || a.command == "help") {
    std::fputs(kUsage, stdout);
    std::exit(0);
  }
  if (a.command != "summary" && a.command != "merge" && a.command != "report" && a.command != "io" &&
      a.command != "diff" && a.command != "calibrate" && a.command != "ranks" && a.command != "device" &&
      a.command != "memory")
    usage_error("unknown command '" + a.command + "'");
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error(s + " needs a value");
      return argv[++i];
    };
    if (s.size() > 1 && s[0] == '-') a.given.insert(s == "--output" ? "-o" : s);
    if (s == "-h" || s == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (s == "--by") a.by = value();
    else if (s == "--sort") a.sort = value();
    else if (s == "--format") a.format = value();
    else if (s == "--top") {
      a.top = parse_count(s, value());
      a.top_set = true;
    } else if (s == "-o" || s == "--output") a.out = value();
    else if (s == "--threads") a.threads = checked_threads(parse_bounded(s, value(), 1, kMaxThreads));
    else if (s == "--max-line-mib") a.max_line_mib = parse_bounded(s, value(), 1, kMaxLimitMib);
    else if (s == "--max-document-mib") a.max_document_mib = parse_bounded(s, value(), 1, kMaxLimitMib);
    else if (s == "--no-progress") a.progress = false;
    else if (s == "--from") a.from = parse_window(s, value());
    else if (s == "--to") a.to = parse_window(s, value());
    else if (s == "--no-index") a.use_index = false;
    else if (s == "--steps") {
      try {
        a.steps = parse_step_slice(value());
      } catch (const std::invalid_argument& e) {
        usage_error(e.what());
      }
    }
    else if (s == "--epoch-ts") a.epoch_ts = true;
    else if (s == "--tree") a.tree = true;
    else if (s == "--efficiency") a.efficiency = true;
    else if (s == "--calibration") a.calibration = value();
    else if (s == "--force" && a.command == "calibrate") a.force = true;
    else if (s == "--no-torch" && a.command == "calibrate") a.torch = false;
    else if (s == "--table") a.table = value();
    else if (s == "--small-bytes") a.io.small_bytes = parse_bounded(s, value(), 0, 1LL << 40);
    else if (s == "--bin-ms") a.io.bin_ns = parse_bounded(s, value(), 1, 1LL << 32) * 1000000;
    else if (s.size() > 1 && s[0] == '-') usage_error("unknown option '" + s + "'");
    else a.paths.push_back(s);
  }
  if (a.paths.empty() && a.command != "calibrate") usage_error("no input path given");
  if (a.efficiency && (a.command != "summary" || a.tree || a.by == "step" || a.by == "rank"))
    usage_error("--efficiency works only with summary (--by name, module, ...; not step, rank or --tree)");
  using Anchor = WindowBound::Anchor;
  if (a.from.anchor != Anchor::none && a.from.anchor == a.to.anchor &&
      (a.from.anchor == Anchor::end ? a.from.ns <= a.to.ns : a.from.ns >= a.to.ns))
    usage_error("--from must be before --to");
  if (a.format != "table" && a.format != "json" && a.format != "csv")
    usage_error("--format must be table, json or csv, not '" + a.format + "'");
  if (a.command == "diff" && a.paths.size() != 2)
    usage_error("diff needs two inputs, A and B (each a file, directory or glob), not " +
                std::to_string(a.paths.size()));
  if (a.tree && (a.command != "summary" || a.by != "module"))
    usage_error("--tree works only with summary --by module");
  if ((a.command == "merge" || a.command == "report") && a.out.empty())
    usage_error(a.command + " needs -o FILE");
  refuse_unused_options(a);
  return a;
}

// expand_inputs, and one line on stderr naming our own outputs it left out.
std::vector<std::string> expand_inputs_noting(const std::vector<std::string>& paths, const char* side = "") {
  std::vector<LeftOutInput> left_out;
  std::vector<std::string> files = expand_inputs(paths, &left_out);
  const std::string line = left_out_line(left_out);
  if (!line.empty()) std::fprintf(stderr, "dftracer-analyze: %s%s\n", side, line.c_str());
  return files;
}

// The one line about skipped input, and the exit status it implies.
int finish(const ReadStats& st) {
  std::string line = st.problems_line();
  if (!line.empty()) std::fprintf(stderr, "dftracer-analyze: %s\n", line.c_str());
  if (st.events == 0) {
    std::fprintf(stderr, "dftracer-analyze: no event could be read\n");
    return 1;
  }
  return 0;
}

// Writes `text` where -o says, or to stdout.
void emit(const Args& a, const std::string& text) {
  if (a.out.empty()) write_stdout(text);
  else write_output_file(a.out, text);
}

// diff: each side's inputs expanded and read on its own; the skipped-input
// line and the exit status say which side they are about.
int run_diff(const Args& a, const std::vector<GroupKey>& keys, const ReadOptions& ro) {
  std::vector<std::string> sides[2];
  for (int i = 0; i < 2; ++i) {
    sides[i] = expand_inputs_noting({a.paths[i]}, i ? "B: " : "A: ");
    if (sides[i].empty())
      throw InputError(std::string(i ? "B" : "A") + ": no trace file (*.pfw, *.pfw.gz, *.json, *.json.gz) under '" +
                       a.paths[i] + "'");
  }
  if (!a.out.empty()) {
    refuse_input_as_output(a.out, sides[0]);
    refuse_input_as_output(a.out, sides[1]);
  }
  // A relative window is each run's own: "+10s" is the first ten seconds of A and of B.
  ReadOptions ro_side[2] = {ro, ro};
  for (int i = 0; i < 2; ++i) resolve_window_or_exit(a, sides[i], &ro_side[i], i ? "B: " : "A: ");
  for (int i = 0; i < 2; ++i) apply_steps_or_exit(a, sides[i], &ro_side[i], i ? "B: " : "A: ");
  Diff d = diff_summaries(summarize(sides[0], keys, 0, a.threads, ro_side[0]),
                          summarize(sides[1], keys, 0, a.threads, ro_side[1]), a.top, parse_diff_sort(a.sort));
  // The noise estimate: each run's step-to-step spread (two more reads per run).
  mark_noise(d, step_spread(analyze_steps(sides[0], a.threads, ro_side[0])),
             step_spread(analyze_steps(sides[1], a.threads, ro_side[1])));
  std::ostringstream os;
  if (a.format == "json") write_diff_json(os, d);
  else if (a.format == "csv") write_diff_csv(os, d);
  else write_diff_table(os, d);
  emit(a, os.str());
  int status = 0;
  for (int i = 0; i < 2; ++i) {
    const ReadStats& st = i ? d.stats_b : d.stats_a;
    const char* side = i ? "B" : "A";
    std::string line = st.problems_line();
    if (!line.empty()) std::fprintf(stderr, "dftracer-analyze: %s: %s\n", side, line.c_str());
    if (st.events == 0) {
      std::fprintf(stderr, "dftracer-analyze: %s: no event could be read\n", side);
      status = 1;
    }
  }
  return status;
}

int run_module_tree(const Args& a, const std::vector<std::string>& files, const ReadOptions& ro) {
  if (!a.out.empty()) refuse_input_as_output(a.out, files);
  ModuleTree t = module_tree(files, a.threads, ro);
  // Siblings by total time unless --sort says otherwise.
  order_module_tree(t, parse_tree_sort(a.given.count("--sort") ? a.sort : "total"), a.top);
  std::ostringstream os;
  if (a.format == "json") write_module_tree_json(os, t);
  else if (a.format == "csv") write_module_tree_csv(os, t);
  else write_module_tree_table(os, t);
  emit(a, os.str());
  return finish(t.stats);
}

// `ranks` and `summary --by rank` (ranks.hpp).
int run_ranks(const Args& a, const std::vector<std::string>& files, const ReadOptions& ro) {
  const bool summary = a.command == "summary";
  if (!summary && std::find(std::begin(kRankTables), std::end(kRankTables), a.table) == std::end(kRankTables))
    usage_error("--table must be ranks, steps, stragglers, collectives or waits, not '" + a.table + "'");
  if (!a.out.empty()) refuse_input_as_output(a.out, files);
  RankReport r = analyze_ranks(files, a.threads, ro, !summary);
  std::ostringstream os;
  if (!summary && a.format != "csv" && write_no_ranks(os, r, a.format)) {  // one line, not empty tables
    emit(a, os.str());
    return finish(r.stats);
  }
  // --sort or --top: the ranks by that time (self by default), else in the order read.
  const std::string sort = a.given.count("--sort") || a.top_set ? a.sort : "";
  if (summary && a.format == "json") write_rank_summary_json(os, r, sort, a.top);
  else if (summary && a.format == "csv") write_rank_summary_csv(os, r, sort, a.top);
  else if (summary) write_rank_summary_table(os, r, sort, a.top);
  else if (a.format == "json") write_ranks_json(os, r);
  else if (a.format == "csv") write_ranks_csv(os, r, a.table);
  else write_ranks_text(os, r, a.top);
  emit(a, os.str());
  const std::string problems = rank_problems_line(r);
  if (!problems.empty()) std::fprintf(stderr, "dftracer-analyze: %s\n", problems.c_str());
  return finish(r.stats);
}

// `device` (device_time.hpp): --by picks the table; json writes them all.
int run_device(const Args& a, const std::vector<std::string>& files, const ReadOptions& ro) {
  const std::string by = a.by == "name" ? "op" : a.by;
  if (std::find(std::begin(kDeviceTables), std::end(kDeviceTables), by) == std::end(kDeviceTables))
    usage_error("device: --by must be op, kernel, module, phase, category, stream or step, not '" + by + "'");
  if (!a.out.empty()) refuse_input_as_output(a.out, files);
  const DeviceReport r = device_report(read_device_timeline_with_steps(files, a.threads, ro));
  std::ostringstream os;
  if (a.format == "json") write_device_json(os, r);
  else if (a.format == "csv") write_device_csv(os, r, by, a.top_set ? a.top : 0);
  else write_device_table(os, r, by, a.top_set ? a.top : 0);
  emit(a, os.str());
  if (r.stats.events > 0 && r.device_events == 0)
    std::fprintf(stderr, "dftracer-analyze: no device events (cat kernel, gpu_memcpy, gpu_memset) in the input\n");
  if (r.events_not_kept)
    std::fprintf(stderr, "dftracer-analyze: %s\n", device_cap_line(r).c_str());
  return finish(r.stats);
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* why = unsupported_cpu_reason()) {
    std::fprintf(stderr, "dftracer-analyze: error: %s\n", why);
    return 2;
  }
  if (int rc = run_python_command(argc, argv); rc >= 0) return rc;  // summary --dask, export
  Args a = parse_args(argc, argv);
  ReadOptions ro;
  ro.progress = a.progress;
  ro.max_line_bytes = a.max_line_mib << 20;
  ro.max_document_bytes = a.max_document_mib << 20;
  ro.use_index = a.use_index;
  // A bad --by is a usage error, found before any input is read.
  std::vector<GroupKey> keys;
  SummarySort sort = SummarySort::self;
  const bool by_step = a.command == "summary" && a.by == "step";  // steps.hpp; args.step still groups
  const bool by_rank = a.command == "summary" && a.by == "rank";  // ranks.hpp
  if (by_step && (a.top_set || a.sort != "self")) usage_error("--by step shows every step: no --top or --sort");
  const bool by_category = a.command == "summary" && a.by == "category" && !a.efficiency && !a.tree;
  // Views with an order of their own: --sort names one of their columns.
  try {
    if (a.command == "diff") parse_diff_sort(a.sort);
    else if (a.tree) parse_tree_sort(a.sort);
    else if (a.efficiency) check_efficiency_sort(a.sort);
    else if (by_rank) check_rank_sort(a.sort);
  } catch (const std::invalid_argument& e) {
    usage_error(std::string("--sort: ") + e.what());
  }
  if (by_category && (a.top_set || a.sort != "self"))
    usage_error("--by category shows every category: no --top or --sort");
  if ((a.command == "summary" && !by_step && !by_rank) || a.command == "diff") {
    try {
      keys = parse_group_keys(a.by);
    } catch (const std::invalid_argument& e) {
      usage_error(std::string("--by: ") + e.what());
    }
    if (a.command == "summary" && !a.tree && !a.efficiency) try {
      sort = parse_summary_sort(a.sort);
    } catch (const std::invalid_argument& e) {
      usage_error(std::string("--sort: ") + e.what());
    }
  }
  try {
    if (a.command == "diff") return run_diff(a, keys, ro);
    if (a.command == "calibrate") {
      write_stdout(calibrate_command(a.paths, a.out, a.threads, a.force, a.torch));
      return 0;
    }
    std::vector<std::string> files = expand_inputs_noting(a.paths);
    if (files.empty()) throw InputError("no trace file (*.pfw, *.pfw.gz, *.json, *.json.gz) under the given paths");
    resolve_window_or_exit(a, files, &ro);
    if (a.command == "ranks" || by_rank) return run_ranks(a, files, ro);
    if (a.command == "device") return run_device(a, files, ro);
    if (!by_step) apply_steps_or_exit(a, files, &ro);
    if (a.command == "summary") {
      if (!a.out.empty()) refuse_input_as_output(a.out, files);  // before reading: fail fast
      if (by_step) {
        StepReport r = analyze_steps(files, a.threads, ro);
        if (a.steps.set()) {
          try {
            keep_step_rows(a.steps, r);
          } catch (const std::invalid_argument& e) {
            usage_error(e.what());
          }
        }
        std::ostringstream os;
        if (a.format == "json") write_steps_json(os, r);
        else if (a.format == "csv") write_steps_csv(os, r);
        else write_steps_table(os, r);
        if (a.out.empty()) write_stdout(os.str());
        else write_output_file(a.out, os.str());
        return finish(r.stats);
      }
      if (a.tree) return run_module_tree(a, files, ro);
      if (by_category) {  // compile vs run: wall time (category_wall.hpp)
        const CategoryWallReads w = read_category_wall(files, a.threads, ro);
        std::ostringstream os;
        write_category_wall(os, w.steps, w.by_category, a.format);
        emit(a, os.str());
        return finish(w.by_category.stats);
      }
      if (a.efficiency) {
        Efficiency e = efficiency(files, keys, a.top, a.threads, ro, a.calibration, a.sort);
        emit(a, efficiency_text(e, a.format));
        if (a.format != "table" && above_peak_rows(e))  // the table says it in its last lines
          std::fprintf(stderr, "dftracer-analyze: %zu of the groups: %s\n", above_peak_rows(e),
                       above_peak_line(e.calibration).c_str());
        return finish(e.stats);
      }
      Summary s = summarize(files, keys, a.top, a.threads, ro, sort);
      std::ostringstream os;
      if (a.format == "json") write_summary_json(os, s);
      else if (a.format == "csv") write_summary_csv(os, s);
      else write_summary_table(os, s);
      if (a.out.empty()) write_stdout(os.str());
      else write_output_file(a.out, os.str());
      return finish(s.stats);
    }
    if (a.command == "memory") {
      if (a.format == "csv") usage_error("memory: --format must be table or json");
      if (!a.out.empty()) refuse_input_as_output(a.out, files);
      MemoryPeaks m = memory_peaks(files, ro);
      std::ostringstream os;
      if (a.format == "json") write_memory_json(os, m);
      else write_memory_table(os, m);
      if (a.out.empty()) write_stdout(os.str());
      else write_output_file(a.out, os.str());
      const std::string problems = memory_problems_line(m);
      if (!problems.empty()) std::fprintf(stderr, "dftracer-analyze: %s\n", problems.c_str());
      return finish(m.stats);
    }
    if (a.command == "io") {
      if (a.format == "csv") usage_error("io: --format must be table or json");
      if (!a.out.empty()) refuse_input_as_output(a.out, files);
      IoView v = io_view(files, a.io, a.threads, ro);
      std::ostringstream os;
      if (a.format == "json") write_io_json(os, v);
      else write_io_table(os, v, a.top_set ? a.top : 20);
      if (a.out.empty()) write_stdout(os.str());
      else write_output_file(a.out, os.str());
      return finish(v.stats);
    }
    if (a.command == "merge") {
      MergeResult r = merge_traces(files, a.out, a.threads, ro, a.epoch_ts);
      std::fprintf(stderr, "dftracer-analyze: wrote %llu events to %s\n",
                   static_cast<unsigned long long>(r.events_written), a.out.c_str());
      if (!r.rank_note.empty()) std::fprintf(stderr, "dftracer-analyze: %s\n", r.rank_note.c_str());
      return finish(r.stats);
    }
    ReportResult r = write_report(files, a.out, a.top_set ? a.top : 20, a.threads, ro, a.calibration);
    write_stdout(r.answer);
    std::fprintf(stderr, "dftracer-analyze: wrote report of %llu events to %s\n",
                 static_cast<unsigned long long>(r.stats.events), a.out.c_str());
    return finish(r.stats);
  } catch (const InputError& e) {
    std::fprintf(stderr, "dftracer-analyze: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dftracer-analyze: error: %s\n", e.what());
    return 2;
  }
}
