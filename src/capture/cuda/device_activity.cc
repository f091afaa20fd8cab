#include "device_activity.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "device_track.hpp"
#include "json_escape.h"

namespace dftracer::cuda {

int64_t ClockMap::to_trace_ns(uint64_t gpu_ns) const {
  if (samples_.empty()) return static_cast<int64_t>(gpu_ns);
  // Relative to the first sample: epoch nanoseconds do not fit a double's
  // 53 bits of mantissa with room for the products.
  const auto [g0, t0] = samples_.front();
  long double mx = 0, my = 0;
  for (const auto& [g, t] : samples_) {
    mx += static_cast<long double>(static_cast<int64_t>(g - g0));
    my += static_cast<long double>(static_cast<int64_t>(t - t0));
  }
  mx /= samples_.size();
  my /= samples_.size();
  long double sxy = 0, sxx = 0;
  for (const auto& [g, t] : samples_) {
    const long double dx = static_cast<int64_t>(g - g0) - mx, dy = static_cast<int64_t>(t - t0) - my;
    sxy += dx * dy;
    sxx += dx * dx;
  }
  const long double slope = sxx > 0 ? sxy / sxx : 1.0L;
  const long double x = static_cast<long double>(static_cast<int64_t>(gpu_ns - g0));
  return static_cast<int64_t>(t0) + static_cast<int64_t>(std::llround(my + slope * (x - mx)));
}

const char* memcpy_kind_name(uint8_t copy_kind) {
  switch (copy_kind) {  // CUpti_ActivityMemcpyKind
    case 1: return "Memcpy HtoD";
    case 2: return "Memcpy DtoH";
    case 3: return "Memcpy HtoA";
    case 4: return "Memcpy AtoH";
    case 5: return "Memcpy AtoA";
    case 6: return "Memcpy AtoD";
    case 7: return "Memcpy DtoA";
    case 8: return "Memcpy DtoD";
    case 9: return "Memcpy HtoH";
    case 10: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}

bool is_launch_api(const char* name) {
  if (!name) return false;
  for (const char* part : {"Launch", "Memcpy", "Memset", "Synchronize"})
    if (std::strstr(name, part)) return true;
  return false;
}

void ActivityConverter::add(const ExternalCorrelation& c) {
  auto [it, fresh] = external_.insert_or_assign(c.correlation_id, c.external_id);
  (void)it;
  if (!fresh) return;
  order_.push_back(c.correlation_id);
  while (order_.size() > max_pending_) {
    external_.erase(order_.front());
    order_.pop_front();
    ++dropped_;
  }
}

bool ActivityConverter::external_id(uint32_t correlation, uint64_t* id) const {
  auto it = external_.find(correlation);
  if (it == external_.end()) return false;
  *id = it->second;
  return true;
}

namespace {

// Trace time as microseconds with three decimals, exact.
void append_us(int64_t ns, std::string* out) {
  char buf[32];
  const bool neg = ns < 0;
  const uint64_t a = neg ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof buf, "%s%llu.%03llu", neg ? "-" : "", static_cast<unsigned long long>(a / 1000),
                static_cast<unsigned long long>(a % 1000));
  *out += buf;
}

void append_str(const char* s, std::string* out) {
  *out += '"';
  if (s) dftracer::json_escape_append(s, std::strlen(s), out);
  *out += '"';
}

void append_u(uint64_t v, std::string* out) { *out += std::to_string(v); }

const char* category(ActivityKind k) {
  switch (k) {
    case ActivityKind::kernel: return "kernel";
    case ActivityKind::memcpy: return "gpu_memcpy";
    case ActivityKind::memset: return "gpu_memset";
    case ActivityKind::runtime: return "cuda_runtime";
    case ActivityKind::driver: return "cuda_driver";
  }
  return "";
}

bool on_device(ActivityKind k) {
  return k == ActivityKind::kernel || k == ActivityKind::memcpy || k == ActivityKind::memset;
}

}  // namespace

void JsonLinesSink::track_name(uint64_t pid, int64_t tid, const std::string& name) {
  std::string* out = out_;
  *out += "{\"name\":\"";
  *out += tid < 0 ? "process_name" : "thread_name";
  *out += "\",\"ph\":\"M\",\"pid\":";
  append_u(pid, out);
  *out += ",\"tid\":";
  append_u(tid < 0 ? 0 : uint64_t(tid), out);
  *out += ",\"args\":{\"name\":";
  append_str(name.c_str(), out);
  *out += "}}\n";
}

void JsonLinesSink::complete(uint64_t pid, uint64_t tid, const char* name, const char* cat, int64_t ts_ns,
                             int64_t dur_ns, const DeviceArg* args, size_t nargs) {
  std::string* out = out_;
  *out += "{\"name\":";
  append_str(name, out);
  *out += ",\"cat\":\"";
  *out += cat;
  *out += "\",\"ph\":\"X\",\"pid\":";
  append_u(pid, out);
  *out += ",\"tid\":";
  append_u(tid, out);
  *out += ",\"ts\":";
  append_us(ts_ns, out);
  *out += ",\"dur\":";
  append_us(dur_ns, out);
  *out += ",\"args\":{";
  for (size_t i = 0; i < nargs; ++i) {
    if (i) *out += ',';
    append_str(args[i].key, out);
    *out += ':';
    append_u(args[i].value, out);
  }
  *out += "}}\n";
}

void JsonLinesSink::flow(bool start, uint64_t id, uint64_t pid, uint64_t tid, int64_t ts_ns) {
  std::string* out = out_;
  *out += "{\"ph\":\"";
  *out += start ? "s" : "f";
  *out += "\",\"id\":";
  append_u(id, out);
  *out += ",\"pid\":";
  append_u(pid, out);
  *out += ",\"tid\":";
  append_u(tid, out);
  *out += ",\"ts\":";
  append_us(ts_ns, out);
  *out += start ? ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}\n" : ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}\n";
}

void ActivityConverter::track_names(const ActivityRecord& r, DeviceEventSink* sink) {
  const uint64_t pid = format::device_track_pid(host_pid_, r.device_id);
  if (devices_.insert(r.device_id).second)
    sink->track_name(pid, -1, "GPU " + std::to_string(r.device_id) + " (pid " + std::to_string(host_pid_) + ")");
  if (streams_.insert({r.device_id, r.stream_id}).second)
    sink->track_name(pid, r.stream_id, "stream " + std::to_string(r.stream_id));
}

void ActivityConverter::add(const ActivityRecord& r, std::string* out) {
  JsonLinesSink sink(out);
  add(r, &sink);
}

void ActivityConverter::add(const ActivityRecord& r, DeviceEventSink* sink) {
  const bool device = on_device(r.kind);
  if (!device && !is_launch_api(r.name)) {
    ++skipped_api_;
    return;
  }
  if (r.start == 0 || r.end < r.start) {  // CUPTI could not time it: no event, rather than one at time 0
    ++bad_times_;
    return;
  }
  if (device) track_names(r, sink);
  const int64_t ts = clock_.to_trace_ns(r.start);
  const int64_t end = clock_.to_trace_ns(r.end);
  const uint64_t pid = device ? uint64_t(format::device_track_pid(host_pid_, r.device_id)) : r.process_id;
  const uint64_t tid = device ? r.stream_id : r.thread_id;
  const char* name = r.name;
  if (r.kind == ActivityKind::memcpy) name = memcpy_kind_name(r.copy_kind);
  else if (r.kind == ActivityKind::memset) name = "Memset";

  DeviceArg args[6];
  size_t n = 0;
  if (device) {
    args[n++] = {"device", r.device_id};
    args[n++] = {"context", r.context_id};
    args[n++] = {"stream", r.stream_id};
  } else {
    args[n++] = {"cbid", r.cbid};
  }
  args[n++] = {"correlation", r.correlation_id};
  uint64_t ext = 0;
  if (external_id(r.correlation_id, &ext)) args[n++] = {"External id", ext};
  else if (device) ++without_external_;
  if (r.kind == ActivityKind::memcpy || r.kind == ActivityKind::memset) args[n++] = {"bytes", r.bytes};
  sink->complete(pid, tid, name, category(r.kind), ts, end > ts ? end - ts : 0, args, n);
  ++events_;
  // The flow arrow: starts at the launch call, ends at the device work, both
  // keyed by the correlation id (the two records may come in any order).
  sink->flow(!device, r.correlation_id, pid, tid, ts);
}

}  // namespace dftracer::cuda
