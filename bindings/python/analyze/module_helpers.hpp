// What the files of the dftracer._analyze module share (defined in module.cc).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "diff.hpp"
#include "event_batches.hpp"
#include "module_tree.hpp"
#include "summary.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze::py {

namespace nb = nanobind;

// Raises RuntimeError when this CPU lacks the analyzer's instruction set.
void check_cpu();
// The reader's size limits from MiB (1 .. 1 TiB, else ValueError).
ReadOptions read_options(long long max_line_mib, long long max_document_mib);

// A step filter chosen on a Dask client (dftracer.analyze.distributed): per
// process of the read (its file's index in the read's list, its pid), the
// chosen steps' [ts, end) in ns. nullopt: no filter.
using ChosenSpans = std::optional<std::vector<std::tuple<size_t, std::string, std::vector<std::pair<int64_t, int64_t>>>>>;
// Sets ro's step filter to `spans` (nothing for nullopt), as apply_step_spans.
void apply_chosen_spans(const ChosenSpans& spans, ReadOptions* ro);
// The runtime's files (fhashes; their I/O is other work, runtime_files.hpp)
// joined on a Dask client over the whole input. nullopt: the read finds them.
using RuntimeList = std::optional<std::vector<std::string>>;
void apply_runtime_files(const RuntimeList& fhashes, ReadOptions* ro);
// Expanded inputs; FileNotFoundError when there is no trace file under them.
std::vector<std::string> expand_or_throw(const std::vector<std::string>& paths);
nb::dict stats_dict(const ReadStats& s);
nb::dict summary_dict(const Summary& s);
nb::dict batch_dict(EventBatch& b);
nb::dict diff_dict(const Diff& d);
nb::dict module_tree_dict(const ModuleTree& t);

// The partial-summary entry points for the Dask path (partial_bindings.cc).
void register_partial_summary(nb::module_& m);

}  // namespace dftracer::analyze::py
