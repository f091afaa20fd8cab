// dftracer._analyze: the analyzer's reader for Python (nanobind).
//
// Low-level on purpose: it returns plain dicts of NumPy arrays and lists, and
// dftracer/analyze/__init__.py builds the pandas objects, so this module never
// needs pandas headers or a pandas ABI. The GIL is released while reading.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "event_batches.hpp"
#include "calibration.hpp"
#include "category_wall.hpp"
#include "module_helpers.hpp"
#include "device_steps.hpp"
#include "device_time.hpp"
#include "diff.hpp"
#include "efficiency.hpp"
#include "io_view.hpp"
#include "merge.hpp"
#include "step_select.hpp"
#include "steps.hpp"
#include "module_tree.hpp"
#include "ranks.hpp"
#include "report.hpp"
#include "memory.hpp"
#include "summary.hpp"
#include "trace_time.hpp"
#include "trace_window.hpp"
#include "trace_reader.hpp"

namespace nb = nanobind;
using namespace dftracer::analyze;
using dftracer::analyze::py::EventBatch;
using dftracer::analyze::py::EventStream;
using dftracer::analyze::py::StreamOptions;
using dftracer::analyze::py::StringColumn;

// Not anonymous: module_helpers.hpp shares these with the other files of the module.
namespace dftracer::analyze::py {

void check_cpu() {
  if (const char* why = unsupported_cpu_reason()) throw std::runtime_error(why);
}

// 0: all cores (Python's threads=None); otherwise 1..kMaxThreads, else
// std::invalid_argument (ValueError). The library then clamps to the work.
unsigned thread_count(long long threads) { return threads == 0 ? default_threads() : checked_threads(threads); }

// The size limits of the reader (MiB; 1 .. 1 TiB, else ValueError).
ReadOptions read_options(long long max_line_mib, long long max_document_mib) {
  for (long long v : {max_line_mib, max_document_mib})
    if (v < 1 || v > (1LL << 20)) throw std::invalid_argument("a size limit must be 1 to 1048576 MiB, not " + std::to_string(v));
  ReadOptions o;
  o.max_line_bytes = static_cast<uint64_t>(max_line_mib) << 20;
  o.max_document_bytes = static_cast<uint64_t>(max_document_mib) << 20;
  return o;
}

void apply_chosen_spans(const ChosenSpans& spans, ReadOptions* ro) {
  if (!spans) return;
  StepSpans chosen;
  for (const auto& [file, pid, s] : *spans)
    if (!s.empty()) chosen.by_process[{file, pid}] = s;
  apply_step_spans(std::move(chosen), ro);
}

void apply_runtime_files(const RuntimeList& fhashes, ReadOptions* ro) {
  if (fhashes) ro->runtime_files = std::make_shared<RuntimeFiles>(*fhashes);
}

std::vector<std::string> expand_or_throw(const std::vector<std::string>& paths) {
  std::vector<LeftOutInput> left_out;
  std::vector<std::string> files = expand_inputs(paths, &left_out);
  if (!left_out.empty()) {  // one line on Python's stderr, as the command says it
    nb::gil_scoped_acquire gil;  // some callers have released it
    nb::module_::import_("sys").attr("stderr").attr("write")("dftracer.analyze: " + left_out_line(left_out) + "\n");
  }
  if (files.empty()) throw InputError("no trace file (*.pfw, *.pfw.gz, *.json, *.json.gz) under the given paths");
  return files;
}

// A Python str from UTF-8 bytes; undecodable bytes become U+FFFD rather than
// failing a whole batch (simdjson validates UTF-8, so this is belt and braces).
nb::object py_str(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw nb::python_error();
  return nb::steal(o);
}

// A 1-D NumPy array that takes over the vector's memory (no copy).
template <typename T>
nb::object numpy_array(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  if (heap->empty()) heap->reserve(1);  // a valid data pointer even for no rows
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  size_t n = heap->size();
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(heap->data(), {n}, owner), nb::rv_policy::reference);
}

// (codes: int32 array, values: list of str); code -1 = absent.
nb::object string_column(StringColumn& c) {
  nb::list values;
  for (const std::string& s : c.values()) values.append(py_str(s));
  return nb::make_tuple(numpy_array(c.take_codes()), values);
}

nb::object to_python(StringColumn& c) { return string_column(c); }
template <typename T>
nb::object to_python(std::vector<T>& v) {
  return numpy_array(std::move(v));
}

// {column: kind} of events() batches, in order ("args" last: raw JSON text).
nb::dict event_column_kinds() {
  nb::dict kinds;
  EventBatch{}.for_each_column([&kinds](const char* name, auto&, const char* kind) { kinds[name] = kind; });
  kinds["args"] = "json";
  return kinds;
}

nb::dict stats_dict(const ReadStats& s) {
  nb::dict d;
  d["files"] = s.files;
  d["input_bytes"] = s.input_bytes;
  d["json_bytes"] = s.json_bytes;
  d["events"] = s.events;
  d["malformed"] = s.malformed;
  d["bad_fields"] = s.bad_fields;
  d["truncated_members"] = s.truncated_members;
  d["corrupt_members"] = s.corrupt_members;
  d["empty_files"] = s.empty_files;
  d["bad_indexes"] = s.bad_indexes;
  d["boundary_mismatches"] = s.boundary_mismatches;
  d["oversized"] = s.oversized;
  d["indexed_files"] = s.indexed_files;
  d["skipped_lines"] = s.malformed + s.bad_fields + s.oversized;
  d["problems"] = s.problems_line();
  return d;
}

nb::dict batch_dict(EventBatch& b) {
  nb::dict d;
  d["size"] = b.size;
  b.for_each_column([&d](const char* name, auto& column, const char*) { d[name] = to_python(column); });
  if (b.has_args) {
    nb::list args;
    uint64_t begin = 0;
    for (uint64_t end : b.args_end) {
      args.append(py_str(std::string_view(b.args.data() + begin, end - begin)));
      begin = end;
    }
    d["args"] = args;
  }
  return d;
}

// The window bounds' texts ("" = open; absolute us or "+1.5s" / "-2s"),
// parsed before any input is read: bad text is a ValueError naming it.
// With the step range's text (--steps, "" = all), parsed at the same time.
struct WindowTexts {
  WindowBound from, to;
  StepSlice steps;
  WindowTexts(const std::string& from_us, const std::string& to_us, const std::string& steps_text = "")
      : from(parse_window_bound(from_us)),
        to(parse_window_bound(to_us)),
        steps(steps_text.empty() ? StepSlice{} : parse_step_slice(steps_text)) {}
  // Sets ro's window for `files` as the CLI's --from/--to (ValueError when it is empty), then
  // its step filter as --steps (ValueError when the input has no steps or the range picks none).
  void apply(const std::vector<std::string>& files, unsigned threads, ReadOptions* ro) const {
    resolve_window(from, to, files, threads, ro);
    apply_step_filter(steps, files, threads, ro);
  }
};

nb::dict py_summary(const std::vector<std::string>& paths, const std::string& by, size_t top, long long threads,
                    long long max_line_mib, long long max_document_mib, const std::string& sort,
                    const std::string& from_us, const std::string& to_us, bool use_index, const std::string& steps) {
  check_cpu();
  std::vector<GroupKey> keys = parse_group_keys(by);  // std::invalid_argument -> ValueError
  SummarySort order = parse_summary_sort(sort);
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  // Absolute microseconds or relative ("+1.5s", "-2s"): trace_window.hpp.
  const WindowTexts window(from_us, to_us, steps);
  ro.use_index = use_index;
  unsigned nthreads = thread_count(threads);
  std::vector<std::string> files = expand_or_throw(paths);
  Summary s;
  {
    nb::gil_scoped_release unlocked;
    window.apply(files, nthreads, &ro);
    s = summarize(files, keys, top, nthreads, ro, order);
  }
  return summary_dict(s);
}

// {'keys', 'columns', 'totals', 'stats'} of a summary: summary() and combine_partials().
nb::dict summary_dict(const Summary& s) {
  nb::list key_names;
  for (const GroupKey& k : s.keys) key_names.append(group_key_name(k));
  nb::dict cols;
  for (size_t k = 0; k < s.keys.size(); ++k) {
    nb::list col;
    for (const SummaryRow& r : s.rows) col.append(py_str(r.key[k]));
    cols[group_key_name(s.keys[k])] = col;
  }
  std::vector<uint64_t> count;
  std::vector<double> self, total, mean, mn, p50, p95, mx, share, gflops, gbps;
  for (const SummaryRow& r : s.rows) {
    count.push_back(r.count);
    self.push_back(r.self_us);
    total.push_back(r.total_us);
    mean.push_back(r.mean_us);
    mn.push_back(r.min_us);
    p50.push_back(r.p50_us);
    p95.push_back(r.p95_us);
    mx.push_back(r.max_us);
    share.push_back(r.share);
    gflops.push_back(r.gflops);
    gbps.push_back(r.gbps);
  }
  cols["count"] = numpy_array(std::move(count));
  cols["self_us"] = numpy_array(std::move(self));
  cols["total_us"] = numpy_array(std::move(total));
  cols["mean_us"] = numpy_array(std::move(mean));
  cols["min_us"] = numpy_array(std::move(mn));
  cols["p50_us"] = numpy_array(std::move(p50));
  cols["p95_us"] = numpy_array(std::move(p95));
  cols["max_us"] = numpy_array(std::move(mx));
  cols["share"] = numpy_array(std::move(share));
  cols["gflops"] = numpy_array(std::move(gflops));
  if (s.has_memory) {  // the memory capture's columns (memory.hpp), only when the trace has them
    std::vector<double> alloc, freed, net;
    for (const SummaryRow& r : s.rows) {
      alloc.push_back(r.alloc_bytes);
      freed.push_back(r.free_bytes);
      net.push_back(r.alloc_bytes - r.free_bytes);
    }
    cols[kMemoryColumns[0]] = numpy_array(std::move(alloc));
    cols[kMemoryColumns[1]] = numpy_array(std::move(freed));
    cols[kMemoryColumns[2]] = numpy_array(std::move(net));
  }
  cols["gbps"] = numpy_array(std::move(gbps));
  nb::dict totals;
  totals["complete_events"] = s.complete_events;
  totals["metadata_events"] = s.metadata_events;
  totals["other_events"] = s.other_events;
  totals["groups"] = s.groups;
  totals["total_us"] = s.total_us;
  totals["span_us"] = s.span_us;
  totals["traced_us"] = s.traced_us;
  totals["nesting_approximated"] = s.nesting.approximated;
  nb::dict out;
  out["keys"] = key_names;
  out["columns"] = cols;
  out["totals"] = totals;
  out["stats"] = stats_dict(s.stats);
  out["index"] = s.from_index;
  return out;
}

// diff(a, b): {'keys', 'columns' (the key columns, then kDiffColumns; rows by
// impact), 'totals', 'stats_a', 'stats_b'}: the numbers of `diff --format json`.
nb::dict py_diff(const std::vector<std::string>& a, const std::vector<std::string>& b, const std::string& by,
                 size_t top, long long threads, long long max_line_mib, long long max_document_mib,
                 const std::string& from_us, const std::string& to_us, const std::string& sort,
                 const std::string& steps) {
  check_cpu();
  std::vector<GroupKey> keys = parse_group_keys(by);
  const DiffSort order = parse_diff_sort(sort);  // std::invalid_argument -> ValueError, before any read
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  const WindowTexts window(from_us, to_us, steps);
  unsigned nthreads = thread_count(threads);
  std::vector<std::string> files_a = expand_or_throw(a), files_b = expand_or_throw(b);
  Diff d;
  {
    nb::gil_scoped_release unlocked;
    // A relative window is each run's own, as `diff --from/--to`: "+10s" is the first ten seconds of A and of B.
    ReadOptions ro_a = ro, ro_b = ro;
    window.apply(files_a, nthreads, &ro_a);
    window.apply(files_b, nthreads, &ro_b);
    d = diff_summaries(summarize(files_a, keys, 0, nthreads, ro_a), summarize(files_b, keys, 0, nthreads, ro_b), top,
                       order);
    // The noise estimate, as the command: each run's step-to-step spread.
    mark_noise(d, step_spread(analyze_steps(files_a, nthreads, ro_a)), step_spread(analyze_steps(files_b, nthreads, ro_b)));
  }
  return diff_dict(d);
}

// The dict of diff(): py_diff and the Dask combine step (partial_bindings.cc).
nb::dict diff_dict(const Diff& d) {
  nb::list key_names;
  nb::dict cols;
  for (size_t k = 0; k < d.keys.size(); ++k) {
    key_names.append(group_key_name(d.keys[k]));
    nb::list col;
    for (const DiffRow& r : d.rows) col.append(py_str(r.key[k]));
    cols[group_key_name(d.keys[k])] = col;
  }
  std::vector<uint64_t> count_a, count_b;
  std::vector<int64_t> count_delta;
  std::vector<double> times[8];
  std::vector<bool> within_noise;
  for (const DiffRow& r : d.rows) {
    within_noise.push_back(r.within_noise);
    count_a.push_back(r.count_a);
    count_b.push_back(r.count_b);
    count_delta.push_back(r.count_delta());
    std::array<double, 8> t = r.times();
    for (size_t c = 0; c < t.size(); ++c) times[c].push_back(t[c]);
  }
  cols["count_a"] = numpy_array(std::move(count_a));
  cols["count_b"] = numpy_array(std::move(count_b));
  cols["count_delta"] = numpy_array(std::move(count_delta));
  for (size_t c = 0; c < 8; ++c) cols[kDiffColumns[kDiffFirstTime + c]] = numpy_array(std::move(times[c]));
  nb::list noise;
  for (bool b : within_noise) noise.append(b);
  cols["within_noise"] = noise;
  nb::dict totals;
  totals["groups"] = d.groups;
  totals["traced_a_us"] = d.traced_a_us;
  totals["traced_b_us"] = d.traced_b_us;
  totals["total_a_us"] = d.total_a_us;
  totals["total_b_us"] = d.total_b_us;
  totals["complete_events_a"] = d.events_a;
  totals["complete_events_b"] = d.events_b;
  totals["noise_pct"] = d.noise_pct;  // NaN: a run with fewer than 2 steps (no row marked)
  for (auto [name, sp] : {std::pair{"spread_a", &d.spread_a}, std::pair{"spread_b", &d.spread_b}}) {
    nb::dict spread;  // the JSON's a/b steps, step_outliers, step_median_us, step_spread_pct
    spread["steps"] = sp->steps;
    spread["step_outliers"] = sp->outliers;
    spread["step_median_us"] = sp->median_us;
    spread["step_spread_pct"] = sp->spread_pct;
    totals[name] = spread;
  }
  nb::dict out;
  out["keys"] = key_names;
  out["columns"] = cols;
  out["totals"] = totals;
  out["stats_a"] = stats_dict(d.stats_a);
  out["stats_b"] = stats_dict(d.stats_b);
  return out;
}

// module_tree(paths): {'columns' (kModuleTreeColumns, depth-first), 'totals', 'stats'}.
nb::dict py_module_tree(const std::vector<std::string>& paths, long long threads, long long max_line_mib,
                        long long max_document_mib, const std::string& from_us, const std::string& to_us,
                        const std::string& sort, size_t top, const std::string& steps) {
  check_cpu();
  const TreeSort order = parse_tree_sort(sort);
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  const WindowTexts window(from_us, to_us, steps);
  unsigned nthreads = thread_count(threads);
  std::vector<std::string> files = expand_or_throw(paths);
  ModuleTree t;
  {
    nb::gil_scoped_release unlocked;
    window.apply(files, nthreads, &ro);
    t = module_tree(files, nthreads, ro);
    order_module_tree(t, order, top);
  }
  return module_tree_dict(t);
}

// The dict of module_tree(): py_module_tree and the Dask combine step.
nb::dict module_tree_dict(const ModuleTree& t) {
  nb::list path;
  std::vector<int64_t> depth;
  std::vector<uint64_t> count;
  std::vector<double> self, total, share;
  for (const ModuleNode& n : t.nodes) {
    path.append(py_str(n.path));
    depth.push_back(n.depth);
    self.push_back(ns_to_us(n.self_ns));
    total.push_back(ns_to_us(n.total_ns));
    count.push_back(n.count);
    share.push_back(t.share(n));
  }
  nb::dict cols;
  cols["path"] = path;
  cols["depth"] = numpy_array(std::move(depth));
  cols["self_us"] = numpy_array(std::move(self));
  cols["total_us"] = numpy_array(std::move(total));
  cols["count"] = numpy_array(std::move(count));
  cols["share"] = numpy_array(std::move(share));
  nb::dict totals;
  totals["tree_us"] = ns_to_us(t.tree_ns);
  totals["unattributed_us"] = ns_to_us(t.unattributed_ns);
  totals["unattributed_events"] = t.unattributed_count;
  totals["traced_us"] = ns_to_us(t.traced_ns);
  totals["left_out"] = t.left_out;
  nb::dict out;
  out["columns"] = cols;
  out["totals"] = totals;
  out["stats"] = stats_dict(t.stats);
  return out;
}

nb::dict py_merge(const std::vector<std::string>& paths, const std::string& output, long long threads,
                  long long max_line_mib, long long max_document_mib, bool epoch_ts, const std::string& from_us,
                  const std::string& to_us, const std::string& steps) {
  check_cpu();
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  const WindowTexts window(from_us, to_us, steps);
  unsigned nthreads = thread_count(threads);
  MergeResult r;
  {
    nb::gil_scoped_release unlocked;
    std::vector<std::string> files = expand_or_throw(paths);
    window.apply(files, nthreads, &ro);
    r = merge_traces(files, output, nthreads, ro, epoch_ts);
  }
  nb::dict out;
  out["events_written"] = r.events_written;
  out["names_added"] = r.names_added;
  out["rank_note"] = r.rank_note;  // ranks merged, alignment, missing/incomplete ranks ("" without ranks)
  out["stats"] = stats_dict(r.stats);
  return out;
}

EventStream* py_open_events(const std::vector<std::string>& paths, size_t batch_size, long long threads, bool raw_args,
                            const std::string& ph, size_t queue_capacity, long long max_line_mib,
                            long long max_document_mib, const std::string& from_us, const std::string& to_us) {
  check_cpu();
  StreamOptions opt;
  opt.read = read_options(max_line_mib, max_document_mib);
  const WindowTexts window(from_us, to_us);
  opt.batch_size = batch_size;
  opt.threads = thread_count(threads);
  opt.raw_args = raw_args;
  opt.ph = ph;
  opt.queue_capacity = queue_capacity;
  std::vector<std::string> files = expand_or_throw(paths);  // errors now, not at the first batch
  {
    nb::gil_scoped_release unlocked;  // a relative bound reads the inputs' time range
    window.apply(files, opt.threads, &opt.read);
  }
  return new EventStream(std::move(files), std::move(opt));
}

nb::object stream_next(EventStream& s) {
  std::unique_ptr<EventBatch> b;
  {
    nb::gil_scoped_release unlocked;
    b = s.next();
  }
  if (!b) return nb::none();
  return batch_dict(*b);
}

// An analysis written as the CLI's JSON text, run without the GIL: `write`
// takes (files, threads, options, stream) and returns the read stats. A
// window (from_us, to_us: "" for none) is resolved as the CLI's --from/--to.
template <class Write>
nb::tuple json_and_stats(const std::vector<std::string>& paths, long long threads, long long max_line_mib,
                         long long max_document_mib, Write write, const std::string& from_us = "",
                         const std::string& to_us = "", const std::string& steps = "") {
  check_cpu();
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  const WindowTexts window(from_us, to_us, steps);
  unsigned nthreads = thread_count(threads);
  std::ostringstream os;
  ReadStats stats;
  {
    nb::gil_scoped_release unlocked;
    std::vector<std::string> files = expand_or_throw(paths);
    window.apply(files, nthreads, &ro);
    stats = write(files, nthreads, ro, os);
  }
  return nb::make_tuple(os.str(), stats_dict(stats));
}

// Efficiency as the CLI's JSON text (summary --efficiency --format json).
nb::tuple py_efficiency(const std::vector<std::string>& paths, const std::string& by, size_t top, long long threads,
                        const std::string& calibration, long long max_line_mib, long long max_document_mib,
                        const std::string& from_us, const std::string& to_us, const std::string& sort,
                        const std::string& steps) {
  std::vector<GroupKey> keys = parse_group_keys(by);  // std::invalid_argument -> ValueError
  check_efficiency_sort(sort);
  return json_and_stats(paths, threads, max_line_mib, max_document_mib,
                        [&](const std::vector<std::string>& files, unsigned n, const ReadOptions& ro,
                            std::ostream& os) {
                          Efficiency e = efficiency(files, keys, top, n, ro, calibration, sort);
                          os << efficiency_text(e, "json");
                          return e.stats;
                        },
                        from_us, to_us, steps);
}

// `dftracer-analyze report -o OUTPUT`: the HTML page written to `output`;
// returns (the answer's lines the command prints, the read stats).
nb::tuple py_report(const std::vector<std::string>& paths, const std::string& output, size_t top, long long threads,
                    const std::string& calibration, long long max_line_mib, long long max_document_mib,
                    const std::string& from_us, const std::string& to_us, const std::string& steps) {
  if (top < 1) throw std::invalid_argument("top must be a positive number of rows, not " + std::to_string(top));
  return json_and_stats(paths, threads, max_line_mib, max_document_mib,
                        [&](const std::vector<std::string>& files, unsigned n, const ReadOptions& ro,
                            std::ostream& os) {
                          ReportResult r = write_report(files, output, top, n, ro, calibration);
                          os << r.answer;
                          return r.stats;
                        },
                        from_us, to_us, steps);
}

// `dftracer-analyze calibrate`: measures, writes, returns the JSON written.
std::string py_calibrate(const std::string& directory, const std::string& output, long long threads, bool force,
                         bool torch) {
  unsigned nthreads = thread_count(threads);
  std::string path;
  {
    nb::gil_scoped_release unlocked;
    std::vector<std::string> dirs;
    if (!directory.empty()) dirs.push_back(directory);
    calibrate_command(dirs, output, nthreads, force, torch);
    path = !output.empty() ? output
           : !directory.empty() ? directory + (directory.back() == '/' ? "" : "/") + kCalibrationFileName
                                : default_calibration_path();
  }
  return calibration_json(read_calibration(path));
}

// Steps as the CLI's JSON text (write_steps_json), so Python parses exactly
// what `summary --by step --format json` prints; plus the read stats.
// A step range keeps the chosen steps' rows, as `summary --by step --steps`.
// `spans`: a step filter chosen on a Dask client (the runs of the chosen
// steps' read, as `summary --by category --steps` has them); `runtime`: the
// runtime's files joined there.
nb::tuple py_steps(const std::vector<std::string>& paths, long long threads, long long max_line_mib,
                   long long max_document_mib, const std::string& from_us, const std::string& to_us,
                   const std::string& steps, const ChosenSpans& spans, const RuntimeList& runtime) {
  const StepSlice range = steps.empty() ? StepSlice{} : parse_step_slice(steps);
  return json_and_stats(paths, threads, max_line_mib, max_document_mib,
                        [&range, &spans, &runtime](const std::vector<std::string>& files, unsigned n,
                                                   const ReadOptions& ro, std::ostream& os) {
                          ReadOptions chosen = ro;
                          apply_chosen_spans(spans, &chosen);
                          apply_runtime_files(runtime, &chosen);
                          StepReport r = analyze_steps(files, n, chosen);
                          if (range.set()) keep_step_rows(range, r);
                          write_steps_json(os, r);
                          return r.stats;
                        },
                        from_us, to_us);
}

// `summary --by category` (compile vs run in wall time) as the CLI's JSON text, and the
// read stats of its summary, as the command reports them.
nb::tuple py_category_wall(const std::vector<std::string>& paths, long long threads, long long max_line_mib,
                           long long max_document_mib, const std::string& from_us, const std::string& to_us,
                           const std::string& steps_text) {
  return json_and_stats(paths, threads, max_line_mib, max_document_mib,
                        [](const std::vector<std::string>& files, unsigned n, const ReadOptions& ro, std::ostream& os) {
                          const CategoryWallReads w = read_category_wall(files, n, ro);
                          write_category_wall(os, w.steps, w.by_category, "json");
                          return w.by_category.stats;
                        },
                        from_us, to_us, steps_text);
}

// The I/O view as the CLI's JSON text (`io --format json`), plus the read
// stats: one implementation (io_view.cpp), so Python and the command agree.
nb::tuple py_io(const std::vector<std::string>& paths, long long threads, long long small_bytes, long long bin_ms,
                long long max_line_mib, long long max_document_mib, const std::string& from_us,
                const std::string& to_us, const std::string& steps) {
  if (small_bytes < 0 || small_bytes > (1LL << 40))
    throw nb::value_error(("small_bytes must be between 0 and 2**40, not " + std::to_string(small_bytes)).c_str());
  if (bin_ms < 1 || bin_ms > (1LL << 32))
    throw nb::value_error(("bin_ms must be between 1 and 2**32, not " + std::to_string(bin_ms)).c_str());
  IoOptions opt;
  opt.small_bytes = static_cast<uint64_t>(small_bytes);
  opt.bin_ns = bin_ms * 1000000;
  return json_and_stats(paths, threads, max_line_mib, max_document_mib,
                        [opt](const std::vector<std::string>& files, unsigned n, const ReadOptions& ro,
                              std::ostream& os) {
                          IoView v = io_view(files, opt, n, ro);
                          write_io_json(os, v);
                          return v.stats;
                        },
                        from_us, to_us, steps);
}

// Device time from Kineto traces as the CLI's JSON text (`device --format json`), plus the read stats.
nb::tuple py_device(const std::vector<std::string>& paths, long long threads, long long max_line_mib,
                    long long max_document_mib, const std::string& from_us, const std::string& to_us) {
  return json_and_stats(paths, threads, max_line_mib, max_document_mib,
                        [](const std::vector<std::string>& files, unsigned n, const ReadOptions& ro, std::ostream& os) {
                          DeviceReport r = device_report(read_device_timeline_with_steps(files, n, ro));
                          write_device_json(os, r);
                          return r.stats;
                        },
                        from_us, to_us);
}

// The memory counter tracks as the CLI's JSON text (`memory --format json`), plus the read stats.
nb::tuple py_memory(const std::vector<std::string>& paths, long long max_line_mib, long long max_document_mib,
                    const std::string& from_us, const std::string& to_us, const std::string& steps) {
  return json_and_stats(
      paths, 1, max_line_mib, max_document_mib,
      [](const std::vector<std::string>& files, unsigned, const ReadOptions& ro, std::ostream& os) {
        MemoryPeaks m = memory_peaks(files, ro);
        write_memory_json(os, m);
        return m.stats;
      },
      from_us, to_us, steps);
}

// The cross-rank tables as the CLI's JSON text (`ranks --format json`, or
// `summary --by rank --format json` without steps), plus the read stats.
nb::tuple py_ranks(const std::vector<std::string>& paths, long long threads, bool with_steps, long long max_line_mib,
                   long long max_document_mib, const std::string& from_us, const std::string& to_us,
                   const std::string& sort, size_t top) {
  if (!sort.empty()) check_rank_sort(sort);
  return json_and_stats(paths, threads, max_line_mib, max_document_mib,
                        [with_steps, &sort, top](const std::vector<std::string>& files, unsigned n,
                                                 const ReadOptions& ro, std::ostream& os) {
                          RankReport r = analyze_ranks(files, n, ro, with_steps);
                          if (!with_steps) {  // `summary --by rank`, its rows ordered and cut as there
                            write_rank_summary_json(os, r, sort, top);
                            return r.stats;
                          }
                          std::ostringstream tables, note;
                          write_ranks_json(tables, r);
                          std::string o = tables.str();
                          if (write_no_ranks(note, r, "table")) {  // the command's line instead of tables
                            std::string line = note.str();
                            line.pop_back();  // its newline
                            o.resize(o.rfind('}'));
                            o += ",\"note\":";
                            append_json_string(o, line);
                            o += "}\n";
                          }
                          os << o;
                          return r.stats;
                        },
                        from_us, to_us);
}

}  // namespace dftracer::analyze::py

using namespace dftracer::analyze::py;

NB_MODULE(_analyze, m) {
  m.doc() = "dftracer-analyze's C++ trace reader (low level; use dftracer.analyze)";

  // A missing input is FileNotFoundError (message names the path); other
  // unreadable inputs and outputs are OSError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const InputError& e) {
      const char* msg = e.what();
      bool missing = std::strncmp(msg, "no such file", 12) == 0 || std::strncmp(msg, "no file matches", 15) == 0 ||
                     std::strncmp(msg, "no trace file", 13) == 0;
      PyErr_SetString(missing ? PyExc_FileNotFoundError : PyExc_OSError, msg);
    }
  });

  m.def("expand_inputs", [](const std::vector<std::string>& paths) { return expand_or_throw(paths); },
        nb::arg("paths"), "The trace files that PATHS (files, directories, globs) name, sorted and de-duplicated.");
  const long long line_mib = ReadOptions::kDefaultMaxLineBytes >> 20;
  const long long document_mib = ReadOptions::kDefaultMaxDocumentBytes >> 20;
  m.attr("DEFAULT_MAX_LINE_MIB") = line_mib;
  m.attr("DEFAULT_MAX_DOCUMENT_MIB") = document_mib;
  m.def("summary", &py_summary, nb::arg("paths"), nb::arg("by") = "name", nb::arg("top") = 0,
        nb::arg("threads") = 0, nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib,
        nb::arg("sort") = "self", nb::arg("from_us") = "", nb::arg("to_us") = "", nb::arg("use_index") = true,
        nb::arg("steps") = "",
        "Summary of complete events: {'keys', 'columns', 'totals', 'stats', 'index'} (threads 0 = all cores).");
  m.def("diff", &py_diff, nb::arg("a"), nb::arg("b"), nb::arg("by") = "name", nb::arg("top") = 0,
        nb::arg("threads") = 0, nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib,
        nb::arg("from_us") = "", nb::arg("to_us") = "", nb::arg("sort") = "self", nb::arg("steps") = "",
        "Two runs compared per group, as `dftracer-analyze diff --format json` (a relative window is each run's own).");
  m.def("module_tree", &py_module_tree, nb::arg("paths"), nb::arg("threads") = 0,
        nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "",
        nb::arg("to_us") = "", nb::arg("sort") = "total", nb::arg("top") = 0, nb::arg("steps") = "",
        "Self and total time per nn.Module path, depth-first, as `summary --by module --tree`.");
  m.def("merge", &py_merge, nb::arg("paths"), nb::arg("output"), nb::arg("threads") = 0,
        nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib, nb::arg("epoch_ts") = false,
        nb::arg("from_us") = "", nb::arg("to_us") = "", nb::arg("steps") = "",
        "Merge traces into one strict-JSON Chrome trace (.json or .json.gz).");
  m.def("memory_json", &py_memory, nb::arg("paths"), nb::arg("max_line_mib") = line_mib,
        nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "", nb::arg("to_us") = "",
        nb::arg("steps") = "", "The memory counter tracks as `memory --format json` text, and the read stats.");
  m.def("io_json", &py_io, nb::arg("paths"), nb::arg("threads") = 0, nb::arg("small_bytes") = 4096,
        nb::arg("bin_ms") = 1000, nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib,
        nb::arg("from_us") = "", nb::arg("to_us") = "", nb::arg("steps") = "",
        "The I/O view (`dftracer-analyze io --format json`) as JSON text, and the read stats.");
  m.def("device_json", &py_device, nb::arg("paths"), nb::arg("threads") = 0, nb::arg("max_line_mib") = line_mib,
        nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "", nb::arg("to_us") = "",
        "Device time of Kineto traces (`dftracer-analyze device --format json`) as JSON text, and the read stats.");
  m.def("steps_json", &py_steps, nb::arg("paths"), nb::arg("threads") = 0, nb::arg("max_line_mib") = line_mib,
        nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "", nb::arg("to_us") = "",
        nb::arg("steps") = "", nb::arg("spans") = nb::none(), nb::arg("runtime") = nb::none(),
        "Per-step breakdown as JSON text, and the read stats; spans: [(file, pid, [(ts_ns, end_ns)])] read "
        "alone (a step filter chosen on a Dask client); runtime: the runtime's files (fhashes) joined there.");
  m.def("category_wall_json", &py_category_wall, nb::arg("paths"), nb::arg("threads") = 0,
        nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "",
        nb::arg("to_us") = "", nb::arg("steps") = "", "`summary --by category` (wall time per category) as JSON text, and the read stats.");
  m.def("efficiency_json", &py_efficiency, nb::arg("paths"), nb::arg("by") = "name", nb::arg("top") = 0,
        nb::arg("threads") = 0, nb::arg("calibration") = "", nb::arg("max_line_mib") = line_mib,
        nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "", nb::arg("to_us") = "",
        nb::arg("sort") = "self", nb::arg("steps") = "", "FLOPs, bytes, achieved rates and fraction of the roofline per group, as JSON text, and the read stats.");
  m.def("report", &py_report, nb::arg("paths"), nb::arg("output"), nb::arg("top") = 20, nb::arg("threads") = 0,
        nb::arg("calibration") = "", nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib,
        nb::arg("from_us") = "", nb::arg("to_us") = "", nb::arg("steps") = "",
        "Writes `dftracer-analyze report`'s HTML page to OUTPUT; returns (the answer's lines, the read stats).");
  m.def("calibrate", &py_calibrate, nb::arg("directory") = "", nb::arg("output") = "", nb::arg("threads") = 0,
        nb::arg("force") = false, nb::arg("torch") = true,
        "Measures this machine's peaks and writes them (as `dftracer-analyze calibrate`); returns the JSON.");
  m.def("ranks_json", &py_ranks, nb::arg("paths"), nb::arg("threads") = 0, nb::arg("with_steps") = true,
        nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "",
        nb::arg("to_us") = "", nb::arg("sort") = "", nb::arg("top") = 0,
        "Cross-rank tables (ranks, steps, stragglers, collectives, waits) as JSON text, and the read stats.");
  m.def("default_threads", &default_threads);
  register_partial_summary(m);
  m.attr("MAX_THREADS") = kMaxThreads;
  // The column lists dftracer.analyze exports, from the same tables as the reader.
  m.attr("EVENT_COLUMN_KINDS") = event_column_kinds();
  nb::list summary_columns;
  for (const char* c : kSummaryColumns) summary_columns.append(c);
  m.attr("SUMMARY_COLUMNS") = nb::tuple(summary_columns);
  nb::list diff_columns, module_tree_columns;
  for (const char* c : kDiffColumns) diff_columns.append(c);
  for (const char* c : kModuleTreeColumns) module_tree_columns.append(c);
  m.attr("DIFF_COLUMNS") = nb::tuple(diff_columns);
  m.attr("MODULE_TREE_COLUMNS") = nb::tuple(module_tree_columns);
  nb::list efficiency_columns;
  for (const char* c : kEfficiencyColumns) efficiency_columns.append(c);
  m.attr("EFFICIENCY_COLUMNS") = nb::tuple(efficiency_columns);
  m.attr("GROUP_KEY_CHOICES") = group_key_choices();

  nb::class_<EventStream>(m, "EventStream",
                          "Batches of decoded events, read on a background thread (see dftracer.analyze.events).")
      .def("next_batch", &stream_next,
           "The next batch as a dict of columns, or None at the end. Strings are (codes, values) pairs.")
      .def(
          "close",
          [](EventStream& s) {
            nb::gil_scoped_release unlocked;
            s.close();
          },
          "Stop decoding and wait for the reader thread.")
      .def_prop_ro("finished", [](EventStream& s) { return s.finished(); })
      .def_prop_ro("stats", [](EventStream& s) { return stats_dict(s.stats()); });
  m.def("open_events", &py_open_events, nb::arg("paths"), nb::arg("batch_size") = 65536, nb::arg("threads") = 1,
        nb::arg("raw_args") = true, nb::arg("ph") = "", nb::arg("queue_capacity") = 2,
        nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib, nb::arg("from_us") = "",
        nb::arg("to_us") = "", nb::rv_policy::take_ownership,
        "Start reading PATHS into batches of events (of from_us <= ts < to_us; metadata always).");
}
