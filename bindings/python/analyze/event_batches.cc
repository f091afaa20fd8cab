#include "event_batches.hpp"

#include <algorithm>

#include "trace_time.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace dftracer::analyze::py {
namespace ondemand = simdjson::ondemand;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

// ---------------------------------------------------------------------------
// Columns

void StringColumn::add(std::string_view s) {
  if (s.empty()) {
    codes_.push_back(-1);
    return;
  }
  auto it = index_.find(s);
  if (it == index_.end()) {
    values_.emplace_back(s);
    it = index_.emplace(values_.back(), static_cast<int32_t>(values_.size() - 1)).first;
  }
  codes_.push_back(it->second);
}

void EventBatch::reserve(size_t n, bool with_args) {
  for_each_column([n](const char*, auto& column, const char*) { column.reserve(n); });
  has_args = with_args;
  if (with_args) {
    args_end.reserve(n);
    args.reserve(n * 64);
  }
}

// ---------------------------------------------------------------------------
// BatchBuilder

void BatchBuilder::start_batch() {
  batch_ = std::make_unique<EventBatch>();
  // Room for the usual batch up front; a huge batch_size (10**8: ~20 GB of
  // columns) grows as events arrive instead of being reserved, which failed
  // before the first event was read.
  constexpr size_t kMaxReservedRows = size_t{1} << 16;
  batch_->reserve(std::min(opt_.batch_size, kMaxReservedRows), opt_.raw_args);
}

// The args object exactly as written. A second, cheap On-Demand pass: the
// shared decoder keeps no view of it, and it is only wanted on request.
std::string_view BatchBuilder::raw_args(std::string_view line, size_t cap) {
  ondemand::document doc;
  if (args_parser_.iterate(line.data(), line.size(), cap).get(doc)) return {};
  ondemand::object obj;
  if (doc.get_object().get(obj)) return {};
  for (auto fr : obj) {
    ondemand::field f;
    if (std::move(fr).get(f)) return {};
    // Raw key bytes (the buffer is padded, so reading 5 past its quote is safe);
    // an escaped spelling of "args" is not matched, as in the shared decoder.
    const char* k = f.key().raw();
    if (std::memcmp(k, "args\"", 5) != 0) continue;
    ondemand::object args;
    std::string_view raw;
    if (f.value().get_object().get(args) || args.raw_json().get(raw)) return {};
    return raw;
  }
  return {};
}

DecodeStatus BatchBuilder::consume(std::string_view line, size_t cap) {
  // Once Python has closed the stream, the reader only skims to the end.
  if (queue_.cancelled()) return DecodeStatus::Ok;
  DecodeStatus st = decoder_.decode(line, cap, ev_);
  if (st != DecodeStatus::Ok) return st;
  if (!opt_.ph.empty() && ev_.ph != opt_.ph) return st;
  if (!batch_) start_batch();
  EventBatch& b = *batch_;
#define DFT_APPEND_Text(m) b.m.add(ev_.m);
#define DFT_APPEND_Json(m) b.m.add(ev_.m);
#define DFT_APPEND_Number(m) b.m.push_back(ev_.has_##m ? ev_.m : kNaN);
#define DFT_APPEND_Id(m) b.m.push_back(ev_.m);
#define DFT_APPEND_Time(m)                                       \
  b.m.push_back(ev_.has_##m ? ns_to_us(ev_.m##_ns) : kNaN); \
  b.m##_ns.push_back(ev_.m##_ns);
#define DFT_APPEND_Col(kind, m) DFT_APPEND_##kind(m)
#define DFT_APPEND_NoCol(kind, m)
#define DFT_X(member, key, kind, column) DFT_APPEND_##column(kind, member)
  DFT_EVENT_FIELDS(DFT_X)
  DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  if (opt_.raw_args) {
    std::string_view a = raw_args(line, cap);
    b.args.append(a.data(), a.size());
    b.args_end.push_back(b.args.size());
  }
  if (++b.size >= opt_.batch_size) queue_.push(std::move(batch_));
  return st;
}

void BatchBuilder::flush() {
  if (batch_ && batch_->size) queue_.push(std::move(batch_));
  batch_.reset();
}

// ---------------------------------------------------------------------------
// BatchQueue

void BatchQueue::push(std::unique_ptr<EventBatch> b) {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [this] { return q_.size() < capacity_ || cancelled(); });
  if (cancelled()) return;
  q_.push_back(std::move(b));
  cv_.notify_all();
}

std::unique_ptr<EventBatch> BatchQueue::pop() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [this] { return !q_.empty() || done_; });
  if (!q_.empty()) {
    auto b = std::move(q_.front());
    q_.pop_front();
    cv_.notify_all();
    return b;
  }
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;  // raised once; later calls just see the end
    std::rethrow_exception(e);
  }
  return nullptr;
}

void BatchQueue::finish(const ReadStats& stats, std::exception_ptr error) {
  std::lock_guard<std::mutex> lk(mu_);
  stats_ = stats;
  error_ = error;
  done_ = true;
  cv_.notify_all();
}

void BatchQueue::cancel() {
  std::lock_guard<std::mutex> lk(mu_);
  cancelled_.store(true, std::memory_order_relaxed);
  q_.clear();
  cv_.notify_all();
}

bool BatchQueue::finished() {
  std::lock_guard<std::mutex> lk(mu_);
  return done_;
}

ReadStats BatchQueue::stats() {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

// ---------------------------------------------------------------------------
// EventStream

EventStream::EventStream(std::vector<std::string> files, StreamOptions opt)
    : files_(std::move(files)), opt_(std::move(opt)), queue_(opt_.queue_capacity) {
  if (opt_.batch_size == 0) opt_.batch_size = 1;
  opt_.threads = useful_threads(files_, opt_.threads, opt_.read);  // one BatchBuilder per thread it will run
  for (unsigned t = 0; t < opt_.threads; ++t) builders_.push_back(std::make_unique<BatchBuilder>(opt_, queue_));
  thread_ = std::thread([this] { run(); });
}

EventStream::~EventStream() { close(); }

void EventStream::run() {
  std::vector<LineConsumer*> consumers;
  for (auto& b : builders_) consumers.push_back(b.get());
  ReadStats stats;
  std::exception_ptr error;
  try {
    stats = read_traces(files_, consumers, opt_.read);
    for (auto& b : builders_) b->flush();
  } catch (...) {
    error = std::current_exception();
  }
  queue_.finish(stats, error);
}

void EventStream::close() {
  if (!thread_.joinable()) return;
  queue_.cancel();
  thread_.join();
}

}  // namespace dftracer::analyze::py
