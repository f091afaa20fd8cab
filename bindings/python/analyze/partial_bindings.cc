// dftracer._analyze's entry points for distributed analysis (dftracer.analyze
// with a Dask client): the pieces of the input a worker reads (gzip member
// ranges), a piece's partial summary as bytes, the combine step, and one
// piece's events as batches. Thin: the work is in src/analyze/analyses/partial_summary.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <limits>
#include <sstream>

#include "module_helpers.hpp"
#include "category_wall.hpp"
#include "index_summary.hpp"
#include "partial_summary.hpp"
#include "runtime_files.hpp"
#include "step_select.hpp"
#include "trace_window.hpp"

namespace dftracer::analyze::py {

namespace {

nb::bytes to_bytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

// [(begin, end)] byte offsets of runs of whole gzip members of about target_bytes.
nb::list py_member_ranges(const std::string& path, unsigned long long target_bytes) {
  if (target_bytes < 1) throw std::invalid_argument("target_bytes must be at least 1");
  std::vector<MemberRange> ranges;
  {
    nb::gil_scoped_release unlocked;
    ranges = gzip_member_ranges(path, target_bytes);
  }
  nb::list out;
  for (const MemberRange& r : ranges) out.append(nb::make_tuple(r.begin, r.end));
  return out;
}

// The reader's options of a piece: size limits and the window, already
// resolved to absolute ns on the client (resolve_window below).
ReadOptions piece_options(long long max_line_mib, long long max_document_mib, int64_t from_ns, int64_t to_ns) {
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  ro.from_ns = from_ns;
  ro.to_ns = to_ns;
  return ro;
}

nb::bytes py_partial_summary(const std::vector<std::string>& files, const std::vector<size_t>& file_ids,
                             const std::string& by, long long threads, long long max_line_mib,
                             long long max_document_mib, int64_t from_ns, int64_t to_ns, bool use_index,
                             const ChosenSpans& spans, const RuntimeList& runtime) {
  check_cpu();
  std::vector<GroupKey> keys = parse_group_keys(by);
  ReadOptions ro = piece_options(max_line_mib, max_document_mib, from_ns, to_ns);
  ro.use_index = use_index;
  apply_chosen_spans(spans, &ro);
  apply_runtime_files(runtime, &ro);
  unsigned nthreads = threads == 0 ? default_threads() : checked_threads(threads);
  std::string part;
  {
    nb::gil_scoped_release unlocked;
    part = partial_summary(files, file_ids, keys, nthreads, ro);
  }
  return to_bytes(part);
}

nb::bytes py_partial_summary_range(const std::string& file, size_t file_id, uint64_t begin, uint64_t end,
                                   const std::string& by, long long max_line_mib, long long max_document_mib,
                                   int64_t from_ns, int64_t to_ns, const ChosenSpans& spans,
                                   const RuntimeList& runtime) {
  check_cpu();
  std::vector<GroupKey> keys = parse_group_keys(by);
  ReadOptions ro = piece_options(max_line_mib, max_document_mib, from_ns, to_ns);
  apply_chosen_spans(spans, &ro);  // the range's file is index 0
  apply_runtime_files(runtime, &ro);
  std::string part;
  {
    nb::gil_scoped_release unlocked;
    part = partial_summary_range(file, file_id, MemberRange{begin, end}, keys, ro);
  }
  return to_bytes(part);
}

// Every process of whole FILES, with the steps a range picks among its own:
// [(file, pid, model_work, steps, [(ts_ns, end_ns)])], file indexing FILES.
// The client joins the pieces' lists, leaves out helper processes and
// refuses a range that picks no step anywhere (step_range_error).
nb::list py_chosen_steps(const std::vector<std::string>& files, const std::string& steps, long long threads,
                         long long max_line_mib, long long max_document_mib, int64_t from_ns, int64_t to_ns) {
  check_cpu();
  const StepSlice range = parse_step_slice(steps);
  ReadOptions ro = piece_options(max_line_mib, max_document_mib, from_ns, to_ns);
  unsigned nthreads = threads == 0 ? default_threads() : checked_threads(threads);
  StepPlan plan;
  {
    nb::gil_scoped_release unlocked;
    plan = find_steps(files, nthreads, ro);
  }
  nb::list out;
  for (const auto* group : {&plan.processes, &plan.without_steps})
    for (const ProcessSteps& p : *group) {
      nb::list spans;
      for (size_t i : range.pick(p.steps.size())) spans.append(nb::make_tuple(p.steps[i].ts, p.steps[i].end));
      out.append(nb::make_tuple(p.file, p.pid, p.model_work, p.steps.size(), spans));
    }
  return out;
}

// [(fhash, path)] of the FH records of whole FILES: a piece's part of the
// runtime's files, which the client joins (runtime_fhashes).
nb::list py_file_names(const std::vector<std::string>& files, long long threads, long long max_line_mib,
                       long long max_document_mib) {
  check_cpu();
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  unsigned nthreads = threads == 0 ? default_threads() : checked_threads(threads);
  FileNames names;
  {
    nb::gil_scoped_release unlocked;
    names = scan_file_names(files, nthreads, ro);
  }
  nb::list out;
  for (const auto& [fhash, path] : names.paths()) out.append(nb::make_tuple(fhash, path));
  return out;
}

// The runtime's files (sorted fhashes) among the named files of the whole input.
std::vector<std::string> py_runtime_fhashes(const std::vector<std::pair<std::string, std::string>>& names) {
  FileNames all;
  for (const auto& [fhash, path] : names) all.add(fhash, path);
  const RuntimeFiles rt(all);
  return {rt.fhashes().begin(), rt.fhashes().end()};
}

// (any, first_ns, last_end_ns, from_index) of FILES: one piece of the range a
// relative window is resolved against (the client takes min / max of them).
nb::tuple py_time_range(const std::vector<std::string>& files, long long threads, long long max_line_mib,
                        long long max_document_mib) {
  check_cpu();
  ReadOptions ro = read_options(max_line_mib, max_document_mib);
  unsigned nthreads = threads == 0 ? default_threads() : checked_threads(threads);
  TraceTimeRange r;
  {
    nb::gil_scoped_release unlocked;
    r = trace_time_range(files, nthreads, ro);
  }
  return nb::make_tuple(r.any, r.first_ns, r.last_end_ns, r.from_index);
}

// (from_ns, to_ns) of the bounds' texts against a known range (INT64_MIN /
// INT64_MAX for an open bound); ValueError for bad text or an empty window.
nb::tuple py_resolve_window(const std::string& from, const std::string& to, bool any, int64_t first_ns,
                            int64_t last_end_ns) {
  TraceTimeRange r;
  r.any = any;
  r.first_ns = first_ns;
  r.last_end_ns = last_end_ns;
  ReadOptions ro;
  resolve_window(parse_window_bound(from), parse_window_bound(to), r, &ro);
  return nb::make_tuple(ro.from_ns, ro.to_ns);
}

// Whether a bound's text is relative ("+1.5s", "-2s"); ValueError for bad text.
bool py_window_is_relative(const std::string& text) { return parse_window_bound(text).relative(); }

std::vector<std::string> blobs_of(const std::vector<nb::bytes>& parts) {
  std::vector<std::string> blobs;
  blobs.reserve(parts.size());
  for (const nb::bytes& b : parts) blobs.emplace_back(b.c_str(), b.size());
  return blobs;
}

Summary combine(const std::vector<nb::bytes>& parts, const std::string& by, size_t top, const std::string& sort) {
  std::vector<GroupKey> keys = parse_group_keys(by);
  SummarySort order = parse_summary_sort(sort);
  std::vector<std::string> blobs = blobs_of(parts);
  nb::gil_scoped_release unlocked;
  return combine_partials(blobs, keys, top, order);
}

// A run's step spread from its steps' durations and outlier flags (steps()'s rows).
StepSpread spread_of(const std::vector<double>& durations_us, const std::vector<bool>& outliers) {
  if (durations_us.size() != outliers.size()) throw std::invalid_argument("durations and outliers differ in length");
  StepReport r;
  for (size_t i = 0; i < durations_us.size(); ++i) {
    StepRow row;
    row.duration_us = durations_us[i];
    row.outlier = outliers[i];
    r.rows.push_back(std::move(row));
  }
  return step_spread(r);
}

// diff()'s dict from the partial summaries of run A and run B (each made with `by`),
// its rows marked by the runs' step spreads (each run's step durations and outliers).
nb::dict py_diff_partials(const std::vector<nb::bytes>& parts_a, const std::vector<nb::bytes>& parts_b,
                          const std::string& by, size_t top, const std::vector<double>& steps_a_us,
                          const std::vector<bool>& outliers_a, const std::vector<double>& steps_b_us,
                          const std::vector<bool>& outliers_b, const std::string& sort) {
  std::vector<GroupKey> keys = parse_group_keys(by);
  const DiffSort order = parse_diff_sort(sort);
  std::vector<std::string> a = blobs_of(parts_a), b = blobs_of(parts_b);
  Diff d;
  {
    nb::gil_scoped_release unlocked;
    d = diff_summaries(combine_partials(a, keys, 0), combine_partials(b, keys, 0), top, order);
    mark_noise(d, spread_of(steps_a_us, outliers_a), spread_of(steps_b_us, outliers_b));
  }
  return diff_dict(d);
}

// module_tree()'s dict from partial summaries made with by="module".
nb::dict py_module_tree_partials(const std::vector<nb::bytes>& parts, const std::string& sort, size_t top) {
  const TreeSort order = parse_tree_sort(sort);
  std::vector<std::string> blobs = blobs_of(parts);
  ModuleTree t;
  {
    nb::gil_scoped_release unlocked;
    ReadStats st;
    std::unique_ptr<SummaryAggregator> all = merge_partials(blobs, parse_group_keys("module"), &st);
    t = build_module_tree(*all);
    order_module_tree(t, order, top);
    t.stats = st;
  }
  return module_tree_dict(t);
}

nb::dict py_combine(const std::vector<nb::bytes>& parts, const std::string& by, size_t top, const std::string& sort) {
  return summary_dict(combine(parts, by, top, sort));
}

// The combined summary as `dftracer-analyze summary --format F` prints it.
std::string py_combine_text(const std::vector<nb::bytes>& parts, const std::string& by, size_t top,
                            const std::string& sort, const std::string& format) {
  if (format != "table" && format != "json" && format != "csv")
    throw std::invalid_argument("--format must be table, json or csv, not '" + format + "'");
  Summary s = combine(parts, by, top, sort);
  std::ostringstream os;
  if (format == "json") write_summary_json(os, s);
  else if (format == "csv") write_summary_csv(os, s);
  else write_summary_table(os, s);
  return os.str();
}

// `summary --by category`'s text (--format FORMAT) from partial summaries made with by="category"
// and the processes' runs of steps()' document (per process: its source, span, wall
// time per category in kStepCategories' order, untraced time): the command's writer.
std::string py_category_wall_partials(const std::vector<nb::bytes>& parts, const std::vector<std::string>& sources,
                                      const std::vector<double>& spans_us,
                                      const std::vector<std::vector<double>>& walls_us,
                                      const std::vector<double>& untraced_us, const std::string& format) {
  if (format != "table" && format != "json" && format != "csv")
    throw std::invalid_argument("--format must be table, json or csv, not '" + format + "'");
  const size_t n = sources.size();
  if (spans_us.size() != n || walls_us.size() != n || untraced_us.size() != n)
    throw std::invalid_argument("runs: sources, spans, walls and untraced differ in length");
  StepReport steps;
  for (size_t i = 0; i < n; ++i) {
    if (walls_us[i].size() != kNumStepCategories)
      throw std::invalid_argument("runs: a wall time per category (" + std::to_string(kNumStepCategories) + ")");
    ProcessRun run;
    run.source = sources[i];
    run.span_us = spans_us[i];
    run.untraced_us = untraced_us[i];
    for (size_t c = 0; c < kNumStepCategories; ++c) run.wall_us[c] = walls_us[i][c];
    steps.runs.push_back(std::move(run));
  }
  const Summary s = combine(parts, "category", 0, "self");
  std::ostringstream os;
  write_category_wall(os, steps, s, format);
  return os.str();
}

// All events of one piece (a member range, or a whole file as (0, size)) as a
// list of batch dicts, and the read stats: one Dask partition's worth.
nb::tuple py_range_events(const std::string& path, uint64_t begin, uint64_t end, size_t batch_size, bool raw_args,
                          const std::string& ph, long long max_line_mib, long long max_document_mib,
                          int64_t from_ns, int64_t to_ns) {
  check_cpu();
  StreamOptions opt;
  opt.read = piece_options(max_line_mib, max_document_mib, from_ns, to_ns);
  opt.batch_size = batch_size ? batch_size : 65536;
  opt.raw_args = raw_args;
  opt.ph = ph;
  BatchQueue queue(std::numeric_limits<size_t>::max());  // never blocks: this thread also drains it
  ReadStats st;
  {
    nb::gil_scoped_release unlocked;
    BatchBuilder builder(opt, queue);
    st = read_member_range(path, MemberRange{begin, end}, builder, opt.read);
    builder.flush();
    queue.finish(st, nullptr);
  }
  nb::list batches;
  while (std::unique_ptr<EventBatch> b = queue.pop()) batches.append(batch_dict(*b));
  return nb::make_tuple(batches, stats_dict(st));
}

}  // namespace

void register_partial_summary(nb::module_& m) {
  const long long line_mib = ReadOptions::kDefaultMaxLineBytes >> 20;
  const long long document_mib = ReadOptions::kDefaultMaxDocumentBytes >> 20;
  m.def("member_ranges", &py_member_ranges, nb::arg("path"), nb::arg("target_bytes"),
        "[(begin, end)]: the file's gzip members (from its .idx) in runs of about target_bytes; one range "
        "(0, size) for a plain file, a small one, or one without a usable index.");
  const int64_t open_from = std::numeric_limits<int64_t>::min(), open_to = std::numeric_limits<int64_t>::max();
  m.def("index_answers", [](const std::string& path) { return index_answers(path); }, nb::arg("path"),
        "True when PATH's write-time index can answer a summary by name/cat/pid/tid without reading it.");
  m.def("partial_summary", &py_partial_summary, nb::arg("files"), nb::arg("file_ids"), nb::arg("by") = "name",
        nb::arg("threads") = 1, nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib,
        nb::arg("from_ns") = open_from, nb::arg("to_ns") = open_to, nb::arg("use_index") = true,
        nb::arg("spans") = nb::none(), nb::arg("runtime") = nb::none(),
        "The partial summary aggregate of FILES (numbered FILE_IDS in the whole input) as bytes, of the events "
        "with from_ns <= ts < to_ns; finalized .pfw.gz files answer from their write-time indexes where they "
        "can (stats' indexed_files), unless use_index is false. spans: [(file, pid, [(ts_ns, end_ns)])], a "
        "step filter (file indexes FILES); runtime: the whole input's runtime files (runtime_fhashes), for "
        "a category key.");
  m.def("partial_summary_range", &py_partial_summary_range, nb::arg("path"), nb::arg("file_id"), nb::arg("begin"),
        nb::arg("end"), nb::arg("by") = "name", nb::arg("max_line_mib") = line_mib,
        nb::arg("max_document_mib") = document_mib, nb::arg("from_ns") = open_from, nb::arg("to_ns") = open_to,
        nb::arg("spans") = nb::none(), nb::arg("runtime") = nb::none(),
        "The partial summary aggregate of one member range of PATH as bytes (spans: a step filter, file 0; "
        "runtime: the whole input's runtime files, for a category key).");
  m.def("file_names", &py_file_names, nb::arg("files"), nb::arg("threads") = 1, nb::arg("max_line_mib") = line_mib,
        nb::arg("max_document_mib") = document_mib,
        "[(fhash, path)]: the FH records of whole FILES (one read that decodes only those lines).");
  m.def("runtime_fhashes", &py_runtime_fhashes, nb::arg("names"),
        "The fhashes of the runtime's own files (imports, libraries: `io`'s runtime files) among NAMES "
        "[(fhash, path)] of the whole input, sorted: their I/O is other work, not data.");
  m.def("chosen_steps", &py_chosen_steps, nb::arg("files"), nb::arg("steps"), nb::arg("threads") = 1,
        nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib,
        nb::arg("from_ns") = open_from, nb::arg("to_ns") = open_to,
        "[(file, pid, model_work, steps, [(ts_ns, end_ns)])]: every process of whole FILES and the spans of the "
        "steps the range STEPS picks among its own.");
  m.def("pick_steps", [](const std::string& steps, size_t n) { return parse_step_slice(steps).pick(n); },
        nb::arg("steps"), nb::arg("n"), "The positions among N steps the range STEPS picks, ascending.");
  m.def("step_range_error", [](const std::string& steps, size_t most) { return no_step_chosen(parse_step_slice(steps), most); },
        nb::arg("steps"), nb::arg("most"),
        "The line for a range STEPS that picks no step where each process has at most MOST steps (0: none).");
  m.def("time_range", &py_time_range, nb::arg("files"), nb::arg("threads") = 1, nb::arg("max_line_mib") = line_mib,
        nb::arg("max_document_mib") = document_mib,
        "(any, first_ns, last_end_ns, from_index): FILES' first ts and last ts+dur (metadata aside).");
  m.def("resolve_window", &py_resolve_window, nb::arg("from_text"), nb::arg("to_text"), nb::arg("any"),
        nb::arg("first_ns"), nb::arg("last_end_ns"),
        "(from_ns, to_ns) of window bounds (absolute us or +1.5s / -2s) against a trace's time range.");
  m.def("window_is_relative", &py_window_is_relative, nb::arg("text"),
        "True for '+1.5s' / '-2s' forms; ValueError for text that is no window bound.");
  m.def("combine_partials", &py_combine, nb::arg("parts"), nb::arg("by") = "name", nb::arg("top") = 0,
        nb::arg("sort") = "self", "Merge partial summaries into summary()'s dict.");
  m.def("diff_partials", &py_diff_partials, nb::arg("parts_a"), nb::arg("parts_b"), nb::arg("by") = "name",
        nb::arg("top") = 0, nb::arg("steps_a_us") = std::vector<double>(), nb::arg("outliers_a") = std::vector<bool>(),
        nb::arg("steps_b_us") = std::vector<double>(), nb::arg("outliers_b") = std::vector<bool>(),
        nb::arg("sort") = "self", "diff()'s dict from the partial summaries of run A and run B, marked by their step spreads "
        "(each run's step durations and outlier flags).");
  m.def("module_tree_partials", &py_module_tree_partials, nb::arg("parts"), nb::arg("sort") = "total",
        nb::arg("top") = 0,
        "module_tree()'s dict from partial summaries made with by='module'.");
  m.def("combine_partials_text", &py_combine_text, nb::arg("parts"), nb::arg("by") = "name", nb::arg("top") = 0,
        nb::arg("sort") = "self", nb::arg("format") = "table",
        "Merge partial summaries into the text `summary --format FORMAT` prints.");
  m.def("category_wall_partials", &py_category_wall_partials, nb::arg("parts"), nb::arg("sources"),
        nb::arg("spans_us"), nb::arg("walls_us"), nb::arg("untraced_us"), nb::arg("format") = "json",
        "`summary --by category --format FORMAT`'s text from partial summaries by category and the processes' runs.");
  m.def("range_events", &py_range_events, nb::arg("path"), nb::arg("begin"), nb::arg("end"),
        nb::arg("batch_size") = 65536, nb::arg("raw_args") = true, nb::arg("ph") = "",
        nb::arg("max_line_mib") = line_mib, nb::arg("max_document_mib") = document_mib,
        nb::arg("from_ns") = open_from, nb::arg("to_ns") = open_to,
        "([batch dict], stats) of the events of one member range (or a whole file as (0, size)) with "
        "from_ns <= ts < to_ns (metadata always).");
}

}  // namespace dftracer::analyze::py
