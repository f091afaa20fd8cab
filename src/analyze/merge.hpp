// `merge`: many trace files into one strict-JSON Chrome trace
// ({"traceEvents":[...]}), plain or gzip-compressed, that Perfetto and
// chrome://tracing load as-is.
//
// Every line is fully validated (simdjson DOM) before it is copied, so the
// output is strict JSON whatever the input held; quoted numbers of DFTracer v1
// (pid, tid, ts, dur, id) are written as numbers, which the viewers need.
// Processes and threads that had no process_name / thread_name metadata get
// one, so the viewers label every track.
#pragma once

#include <string>
#include <vector>

#include "trace_reader.hpp"

namespace dftracer::analyze {

struct MergeResult {
  ReadStats stats;
  uint64_t events_written = 0;
  uint64_t names_added = 0;  // synthesized process_name / thread_name events
};

// Writes `out_path` (".gz" suffix: gzip). Throws InputError on an unwritable output.
MergeResult merge_traces(const std::vector<std::string>& files, const std::string& out_path, unsigned threads,
                         const ReadOptions& options = {});

}  // namespace dftracer::analyze
