// `merge`: many trace files into one strict-JSON Chrome trace
// ({"traceEvents":[...]}), plain or gzip-compressed, that Perfetto and
// chrome://tracing load as-is.
//
// Every line is fully validated (simdjson DOM) before it is copied, so the
// output is strict JSON whatever the input held; quoted numbers of DFTracer v1
// (pid, tid, ts, dur, id) are written as numbers, which the viewers need.
// Processes and threads that had no process_name / thread_name metadata get
// one, so the viewers label every track.
//
// Timestamps are re-based: viewers parse `ts` into a double, which holds an
// epoch-microsecond value (~1.8e15) only to 0.25 us, so a sub-microsecond op
// ending just before its parent could land outside it and be dropped as
// "overlapping". The output's `ts` count microseconds from one common base
// (an hour before the earliest first event, whole seconds), written as
// "otherData":{"ts_base_us":...}; the digits after the point are kept exactly.
// `epoch_ts` keeps the input's epoch timestamps instead.
//
// The output opens with {"displayTimeUnit":"ms","otherData":{"dftracer_merge":1,
// so the analyzer knows it as its own (own_output_kind, trace_reader.hpp): a
// directory or glob leaves it out; read by name, its ts_base_us is added back
// to every ts, so it reads on the clock of the traces it was merged from.
#pragma once

#include <string>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

struct MergeResult {
  ReadStats stats;
  uint64_t events_written = 0;
  uint64_t names_added = 0;  // synthesized process_name / thread_name events
  int64_t ts_base_us = 0;    // subtracted from every ts (0: epoch timestamps kept)
  std::string rank_note;     // ranks merged, clock alignment, missing/incomplete ranks ("" without ranks)
};

// Writes `out_path` (".gz" suffix: gzip). Throws InputError on an unwritable output.
MergeResult merge_traces(const std::vector<std::string>& files, const std::string& out_path, unsigned threads,
                         const ReadOptions& options = {}, bool epoch_ts = false);

// The smallest integer-microsecond `ts` among the first MiB of each file (-1
// when none is found): the merge's base. Exposed for tests.
int64_t earliest_leading_ts_us(const std::vector<std::string>& files);

}  // namespace dftracer::analyze
