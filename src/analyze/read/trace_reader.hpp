// The parallel trace reader: expands inputs, splits every file into work units
// (line-aligned byte ranges of a .pfw, runs of gzip members of a .pfw.gz) and
// hands each JSON line to a per-thread LineConsumer. Memory stays bounded by the
// consumers' aggregates: nothing keeps the events, except whole-document Chrome
// JSON (a pretty-printed torch.profiler export), which is parsed as one document.
#pragma once

#include <memory>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "step_spans.hpp"
#include "event_decoder.hpp"
#include "reader_threads.hpp"

namespace dftracer::analyze {

class RuntimeFiles;  // runtime_files.hpp

// A path that does not exist or cannot be read: the CLI prints it and exits non-zero.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReadStats {
  uint64_t files = 0;
  uint64_t input_bytes = 0;   // bytes of the files as stored
  uint64_t json_bytes = 0;    // bytes of JSON text after inflating
  uint64_t events = 0;        // lines decoded as events
  uint64_t malformed = 0;     // garbage or half lines
  uint64_t bad_fields = 0;    // JSON objects whose known fields have the wrong type
  uint64_t truncated_members = 0;
  uint64_t corrupt_members = 0;
  uint64_t empty_files = 0;
  uint64_t bad_indexes = 0;   // .idx sidecars that did not match their file
  uint64_t boundary_mismatches = 0;  // parallel gzip pieces that did not line up
  uint64_t oversized = 0;     // lines and documents over ReadOptions' size limits
  uint64_t indexed_files = 0; // answered from their write-time index: nothing inflated

  void add(const ReadStats& o);
  bool any_problem() const;
  // One line for stderr, e.g. "skipped 3 malformed lines, 1 truncated gzip member".
  std::string problems_line() const;
};

class LineConsumer {
 public:
  virtual ~LineConsumer() = default;
  // Called before the lines of a piece of file `file_index` (an index into the
  // expanded file list) on this consumer's thread.
  virtual void begin_piece(size_t file_index) { (void)file_index; }
  // One stripped JSON text; kLinePadding readable bytes follow it.
  virtual DecodeStatus consume(std::string_view line, size_t padded_capacity) = 0;
};

struct ReadOptions {
  // Show a progress bar on stderr: only honoured when stderr is a terminal.
  bool progress = false;
  // Smallest piece of a file worth giving its own thread.
  uint64_t min_piece_bytes = 8u << 20;
  static constexpr uint64_t kDefaultMaxLineBytes = 16u << 20;
  static constexpr uint64_t kDefaultMaxDocumentBytes = 1u << 30;
  // The longest line read (a gzip bomb can inflate to one endless line): a
  // longer one is skipped and counted as oversized, and no more than about
  // this much of it (the read block, 1 MiB doubled up to this limit) is held in memory.
  uint64_t max_line_bytes = kDefaultMaxLineBytes;
  // The largest whole-document Chrome JSON parsed (such a file is held in
  // memory whole): a larger one is skipped and counted as oversized.
  uint64_t max_document_bytes = kDefaultMaxDocumentBytes;
  // A time window, in the file's `ts` unit as exact ns (microseconds since
  // the epoch x 1000): only lines whose ts is in [from_ns, to_ns) are read;
  // lines without a ts (metadata) always are. Gzip members whose write-time
  // index puts all their times outside are not inflated.
  int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;
  // The step filter (step_spans.hpp): only lines inside their process's
  // chosen steps are read, on top of the window (which select_steps narrows
  // to the spans' hull, so the index skips the members outside).
  std::shared_ptr<const StepSpans> steps;
  bool windowed() const { return from_ns != INT64_MIN || to_ns != INT64_MAX || steps != nullptr; }
  // Which traced files are the runtime's (runtime_files.hpp), from an earlier
  // read: their I/O is "other" work. Null: a read that groups by category
  // finds them itself (step pass 1, or a scan of the FH records first).
  std::shared_ptr<const RuntimeFiles> runtime_files;
  // Answer from write-time indexes where they can (summary over finalized
  // .pfw.gz files); false (--no-index) always reads the events.
  bool use_index = true;
};

// The top-level "ts" of a stripped trace line as exact ns (our lines and
// DFTracer's write it before args, so the first "ts" key is the event's);
// false when it has none. The window test of every reader of lines.
bool line_ts(std::string_view line, int64_t& ns);

// The analyzer's own outputs that share a trace's suffix, known by their
// first bytes: `merge`'s file opens with {"displayTimeUnit":"ms","otherData":
// {"dftracer_merge":1,... (before that marker: {"displayTimeUnit":"ms",
// "otherData":{"ts_base_us":...), `calibrate`'s with {"dftracer_calibration":.
// nullptr for anything else. `head`: the file's first bytes (inflated).
const char* own_output_kind(std::string_view head);
// How many of a file's first (inflated) bytes own_output_kind needs at most.
inline constexpr size_t kOwnOutputHeadBytes = 4096;
// otherData.ts_base_us of a merge output, from its first bytes (0 when the
// head names none): merge subtracted it from every ts, the reader adds it back.
int64_t merged_ts_base_us(std::string_view head);
// `text` (a JSON number of microseconds) minus `base_ns`, exactly (see merge.hpp);
// false when `text` is not a JSON number.
bool rebase_ts(std::string_view text, int64_t base_ns, std::string* out);
// True when a DFTracer 2.x file's first bytes declare nanosecond times: its
// metadata line {"name":"CM",...,"args":{...,"name":"time_metric","value":"NS"}}
// (DFTRACER_TIME_METRIC=NS; DFTracer writes it into every file, metadata on or off).
bool declares_ns_times(std::string_view head);
// `line` (one event object's text) with its times turned from whole
// nanoseconds into microseconds with three decimals, exactly
// ("1795769288973953123" -> "1795769288973953.123"): the top-level "ts" and
// "dur", and an aggregated row's args "dur", "dur_sum", "dur_min", "dur_max".
// Values that are not whole non-negative numbers are kept as they are.
std::string ns_times_to_us(std::string_view line);
// True when `s` is a whole JSON number by JSON's grammar ("007", "1." are not).
bool numeric_string(std::string_view s);

// A file that directory or glob expansion left out: one of the analyzer's own outputs.
struct LeftOutInput {
  std::string path;
  const char* what;  // own_output_kind's answer
};
// "left out ... (a merge output); name a file to read it" ("" when none).
std::string left_out_line(const std::vector<LeftOutInput>& left_out);

// Files, directories (recursively: *.pfw, *.pfw.gz, *.json, *.json.gz) and glob
// patterns, sorted and de-duplicated. Throws InputError for a path that does not
// exist, a glob that matches nothing, or an unreadable file. A directory or a
// glob leaves out the analyzer's own outputs (own_output_kind: a merged trace
// would count every event twice, the calibration file is no trace) and names
// them in `left_out`; a file named itself is always read.
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<LeftOutInput>* left_out = nullptr);

// Reads `files` with up to one thread per consumer (no more threads than work
// pieces). Throws InputError when a file vanished or became unreadable after
// expansion. An exception thrown on a reader thread (a consumer's write error,
// a failed read) stops the other threads at their next piece and is rethrown
// here, on the calling thread, after they have all been joined.
ReadStats read_traces(const std::vector<std::string>& files, const std::vector<LineConsumer*>& consumers,
                      const ReadOptions& options = {});

// How many times read_traces has been called in this process (each call is
// one read of its inputs): tests check which commands read their input how
// often, with no timing involved.
uint64_t read_trace_passes();

// Non-null when this CPU lacks an instruction set the analyzer was compiled
// for (see DFTRACER_ANALYZE_ARCH): the reason, to print before anything runs.
const char* unsupported_cpu_reason();

}  // namespace dftracer::analyze
