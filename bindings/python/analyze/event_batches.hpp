// Columnar batches of decoded trace events for dftracer.analyze.events().
//
// The analyzer's reader (read_traces) pushes lines to consumers on its own
// threads until the input is exhausted; Python wants to pull one batch at a
// time. EventStream bridges the two: a producer thread runs read_traces with
// BatchBuilder consumers that fill fixed-size columnar batches and hand them
// to a small bounded queue, blocking while it is full. So memory is bounded by
// (queue capacity + reader threads + 1) batches, never by the trace size.
//
// Nothing here touches Python: module.cc converts a finished EventBatch to
// NumPy arrays with the GIL held, while this thread keeps reading.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "event_decoder.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze::py {

// A string column as dictionary codes: the op names of a trace repeat
// millions of times, so each distinct value is stored (and later turned into
// a Python str) once per batch. Code -1 means absent or empty.
class StringColumn {
 public:
  void add(std::string_view s);
  const std::vector<int32_t>& codes() const { return codes_; }
  const std::deque<std::string>& values() const { return values_; }  // by code
  std::vector<int32_t> take_codes() { return std::move(codes_); }
  void reserve(size_t n) { codes_.reserve(n); }

 private:
  std::vector<int32_t> codes_;
  std::deque<std::string> values_;  // a deque: the index's views stay valid as it grows
  std::unordered_map<std::string_view, int32_t> index_;
};

// Columns per field kind (event_schema.hpp): Text/Json -> StringColumn;
// Number -> double (NaN when absent); Id -> int64; Time -> `m` as double
// microseconds (NaN when absent) and `m_ns` as exact int64 nanoseconds (0 when absent).
#define DFT_BATCH_Text(m) StringColumn m;
#define DFT_BATCH_Json(m) StringColumn m;
#define DFT_BATCH_Number(m) std::vector<double> m;
#define DFT_BATCH_Id(m) std::vector<int64_t> m;
#define DFT_BATCH_Time(m)  \
  std::vector<double> m; \
  std::vector<int64_t> m##_ns;
#define DFT_BATCH_Col(kind, m) DFT_BATCH_##kind(m)
#define DFT_BATCH_NoCol(kind, m)

// The events() column of each kind, named as in Python, in table order.
#define DFT_COLUMNS_Text(m) f(#m, m, "text");
#define DFT_COLUMNS_Json(m) f(#m, m, "text");
#define DFT_COLUMNS_Number(m) f(#m, m, "number");
#define DFT_COLUMNS_Id(m) f(#m, m, "id");
#define DFT_COLUMNS_Time(m) \
  f(#m, m, "time_us");      \
  f(#m "_ns", m##_ns, "time_ns");
#define DFT_COLUMNS_Col(kind, m) DFT_COLUMNS_##kind(m)
#define DFT_COLUMNS_NoCol(kind, m)

struct EventBatch {
  size_t size = 0;
#define DFT_X(member, key, kind, column) DFT_BATCH_##column(kind, member)
  DFT_EVENT_FIELDS(DFT_X)
  DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  bool has_args = false;
  std::string args;                // the raw JSON of every event's args, back to back
  std::vector<uint64_t> args_end;  // end offset of event i's args in `args`

  void reserve(size_t n, bool with_args);

  // Calls f(name, column, kind) for every schema column, in table order
  // (kind: "text", "number", "id", "time_us", "time_ns"). The raw `args` is apart.
  template <typename F>
  void for_each_column(F&& f) {
#define DFT_X(member, key, kind, column) DFT_COLUMNS_##column(kind, member)
    DFT_EVENT_FIELDS(DFT_X)
    DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  }
};

struct StreamOptions {
  size_t batch_size = 65536;
  unsigned threads = 1;
  bool raw_args = true;
  std::string ph;  // keep only events with this "ph" ("" = all)
  size_t queue_capacity = 2;
  ReadOptions read;  // the size limits
};

class BatchQueue;

// One reader thread's consumer: decodes each line and appends it to its batch.
class BatchBuilder : public LineConsumer {
 public:
  BatchBuilder(const StreamOptions& opt, BatchQueue& queue) : opt_(opt), queue_(queue) {}
  DecodeStatus consume(std::string_view line, size_t padded_capacity) override;
  // Hands the partly filled batch, if any, to the queue.
  void flush();

 private:
  std::string_view raw_args(std::string_view line, size_t padded_capacity);
  void start_batch();

  const StreamOptions& opt_;
  BatchQueue& queue_;
  EventDecoder decoder_;
  Event ev_;
  simdjson::ondemand::parser args_parser_;
  std::unique_ptr<EventBatch> batch_;
};

// The bounded hand-over between the producer and Python.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}
  // Blocks while full; drops the batch once cancelled.
  void push(std::unique_ptr<EventBatch> b);
  // The next batch, or null at the end. Rethrows the producer's error.
  std::unique_ptr<EventBatch> pop();
  void finish(const ReadStats& stats, std::exception_ptr error);
  void cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  bool finished();
  ReadStats stats();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<EventBatch>> q_;
  size_t capacity_;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
  std::exception_ptr error_;
  ReadStats stats_;
};

// Reads `files` on a background thread from construction on.
class EventStream {
 public:
  EventStream(std::vector<std::string> files, StreamOptions opt);
  ~EventStream();
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  // Blocks until a batch is ready; null when the input is exhausted.
  std::unique_ptr<EventBatch> next() { return queue_.pop(); }
  // Stops decoding and waits for the producer: the reader still skims the
  // rest of the input (it cannot be interrupted), but decodes nothing more.
  void close();
  bool finished() { return queue_.finished(); }
  // What was read and skipped: all zero until finished().
  ReadStats stats() { return queue_.stats(); }

 private:
  void run();

  std::vector<std::string> files_;
  StreamOptions opt_;
  BatchQueue queue_;
  std::vector<std::unique_ptr<BatchBuilder>> builders_;
  std::thread thread_;
};

}  // namespace dftracer::analyze::py
