#include "cupti_source.h"

#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core_event_sink.h"
#include "device_activity.h"

namespace dftracer::cuda {
namespace {

// The common prefixes of the record versions CUPTI writes: every later
// version (Kernel5..13, Memcpy2..7, Memset2..5) only appends fields, so the
// oldest struct that has what we read reads them all.
using KernelRecord = CUpti_ActivityKernel4;
using MemcpyRecord = CUpti_ActivityMemcpy;
using MemsetRecord = CUpti_ActivityMemset;
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130500
static_assert(offsetof(KernelRecord, start) == offsetof(CUpti_ActivityKernel13, start));
static_assert(offsetof(KernelRecord, correlationId) == offsetof(CUpti_ActivityKernel13, correlationId));
static_assert(offsetof(KernelRecord, name) == offsetof(CUpti_ActivityKernel13, name));
static_assert(offsetof(MemcpyRecord, correlationId) == offsetof(CUpti_ActivityMemcpy7, correlationId));
static_assert(offsetof(MemsetRecord, correlationId) == offsetof(CUpti_ActivityMemset5, correlationId));
#endif

constexpr size_t kBufferBytes = 4u << 20;
constexpr size_t kBuffers = 16;  // 64 MiB, allocated at start
constexpr size_t kAlign = 8;

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t CUPTIAPI trace_clock() { return monotonic_ns(); }

#if defined(DFTRACER_CORE_SONAME)
constexpr const char* kCoreSoname = DFTRACER_CORE_SONAME;
#else
constexpr const char* kCoreSoname = nullptr;
#endif

// The trace's epoch offset (trace ns - CLOCK_MONOTONIC ns): the core's own
// (dft_now_ns, whose clock is monotonic + an offset anchored at process
// start), read between two monotonic readings; when the core is not loaded
// in this process, realtime - monotonic now.
int64_t trace_offset_ns() {
  using NowFn = uint64_t (*)();
  auto now = reinterpret_cast<NowFn>(dlsym(RTLD_DEFAULT, "dft_now_ns"));
  if (!now && kCoreSoname) {  // loaded RTLD_LOCAL (a Python extension's dependency): by its soname
    if (void* core = dlopen(kCoreSoname, RTLD_NOW | RTLD_NOLOAD)) now = reinterpret_cast<NowFn>(dlsym(core, "dft_now_ns"));
  }
  const uint64_t before = monotonic_ns();
  uint64_t trace = 0;
  if (now) {
    trace = now();
  } else {
    timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    trace = uint64_t(rt.tv_sec) * 1000000000ull + uint64_t(rt.tv_nsec);
  }
  const uint64_t after = monotonic_ns();
  return int64_t(trace - (before + (after - before) / 2));
}

struct State {
  std::unique_ptr<uint8_t[]> pool;
  std::atomic<bool> in_use[kBuffers];
  std::mutex mu;  // the converter and the file: taken on CUPTI's completion thread only
  std::unique_ptr<ActivityConverter> converter;
  // Where events go: the core's writer (the process's trace), or a file of
  // their own (JSON lines in `text`, written to `out`).
  std::unique_ptr<DeviceEventSink> sink;
  CoreApi core;
  bool to_core = false;
  FILE* out = nullptr;
  std::string text;
  int64_t written = 0;
  uint64_t dropped = 0;
  int64_t events = -1;  // as of stop (stopped once it is >= 0)
  std::unordered_map<uint64_t, std::string> api_names;  // (domain, cbid) -> name (api_name)
};

State* g_state = nullptr;
std::string g_error;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  State* s = g_state;
  if (!s) return;
  for (size_t i = 0; i < kBuffers; ++i) {
    bool expected = false;
    if (s->in_use[i].compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      *buffer = s->pool.get() + i * kBufferBytes;
      *size = kBufferBytes;
      return;
    }
  }
  // None free: CUPTI drops the records (cuptiActivityGetNumDroppedRecords).
}

void release(State* s, uint8_t* buffer) {
  const size_t i = static_cast<size_t>(buffer - s->pool.get()) / kBufferBytes;
  if (i < kBuffers) s->in_use[i].store(false, std::memory_order_release);
}

// The API function's name as the program calls it: CUPTI's callback names
// carry the version their callback id was added in ("cudaLaunchKernel_v7000",
// "cuMemcpyHtoDAsync_v2"), cut here as Kineto does. Kept per callback id, on
// the completion thread (with State::mu held).
const char* api_name(State* s, CUpti_CallbackDomain domain, uint32_t cbid) {
  const uint64_t key = uint64_t(domain) << 32 | cbid;
  auto it = s->api_names.find(key);
  if (it != s->api_names.end()) return it->second.c_str();
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) name = "cuda_api";
  std::string cut(name);
  const size_t v = cut.rfind("_v");
  if (v != std::string::npos && v > 0 && v + 2 < cut.size() &&
      cut.find_first_not_of("0123456789", v + 2) == std::string::npos)
    cut.resize(v);
  return s->api_names.emplace(key, std::move(cut)).first->second.c_str();
}

// The fields every device record has, under the same names.
template <typename Record>
void device_fields(const CUpti_Activity* rec, ActivityKind kind, ActivityRecord* r) {
  const auto* d = reinterpret_cast<const Record*>(rec);
  r->kind = kind;
  r->start = d->start;
  r->end = d->end;
  r->device_id = d->deviceId;
  r->context_id = d->contextId;
  r->stream_id = d->streamId;
  r->correlation_id = d->correlationId;
}

void convert(State* s, const CUpti_Activity* rec) {
  ActivityRecord r;
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      device_fields<KernelRecord>(rec, ActivityKind::kernel, &r);
      r.name = reinterpret_cast<const KernelRecord*>(rec)->name;
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      device_fields<MemcpyRecord>(rec, ActivityKind::memcpy, &r);
      r.bytes = reinterpret_cast<const MemcpyRecord*>(rec)->bytes;
      r.copy_kind = reinterpret_cast<const MemcpyRecord*>(rec)->copyKind;
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      device_fields<MemsetRecord>(rec, ActivityKind::memset, &r);
      r.bytes = reinterpret_cast<const MemsetRecord*>(rec)->bytes;
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      const bool runtime = rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      r.kind = runtime ? ActivityKind::runtime : ActivityKind::driver;
      r.start = a->start;
      r.end = a->end;
      r.process_id = a->processId;
      r.thread_id = a->threadId;
      r.correlation_id = a->correlationId;
      r.cbid = a->cbid;
      r.name = api_name(s, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
      if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
        s->converter->add(ExternalCorrelation{e->correlationId, e->externalId});
      return;
    }
    default:
      return;
  }
  s->converter->add(r, s->sink.get());
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  State* s = g_state;
  if (!s) return;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    CUpti_Activity* rec = nullptr;
    if (s->sink)
      while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) convert(s, rec);
    if (s->out && !s->text.empty()) {
      std::fwrite(s->text.data(), 1, s->text.size(), s->out);
      s->text.clear();
    }
  }
  release(s, buffer);
}

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  g_error = std::string(what) + ": " + (msg ? msg : "CUPTI error");
  return false;
}

// The launch scope the capture sources push around traced launches
// (dft_launch_scope): ids from one process-wide counter, pushed on CUPTI's
// per-thread stack of CUSTOM0 ids.
std::atomic<uint64_t> g_next_external{1};

uint64_t push_launch_scope() {
  const uint64_t id = g_next_external.fetch_add(1, std::memory_order_relaxed);
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  return id;
}

void pop_launch_scope() {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

// The core calls it once before the trace is finalized by the program's own
// thread (dft_finalize, exit), so CUPTI's last buffers go into the trace; not
// at SIGTERM/SIGINT, _exit or exec (dft_launch_scope says why).
void stop_before_finalize() { dftracer_cuda_stop(); }

const dft_launch_scope kLaunchScope = {sizeof(dft_launch_scope), &push_launch_scope, &pop_launch_scope,
                                       &stop_before_finalize};

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                                     CUPTI_ACTIVITY_KIND_DRIVER,  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace
}  // namespace dftracer::cuda

using namespace dftracer::cuda;

extern "C" int dftracer_cuda_start(const char* path) {
  g_error.clear();
  if (g_state) {
    g_error = "dftracer_cuda_start: already started";
    return -1;
  }
  auto s = std::make_unique<State>();
  s->to_core = path == nullptr || *path == 0;
  if (s->to_core) {
    if (!find_core_api(kCoreSoname, &s->core, &g_error)) return -1;
    if (!s->core.enabled()) {
      g_error = "dftracer_cuda_start: tracing is off in this process (start it first: initialize_log, DFTRACER_ENABLE=1)";
      return -1;
    }
  }
  s->pool.reset(new (std::align_val_t(kAlign)) uint8_t[kBuffers * kBufferBytes]);
  for (auto& b : s->in_use) b.store(false);
  if (!s->to_core) {
    s->out = std::fopen(path, "w");
    if (!s->out) {
      g_error = std::string("cannot write ") + path;
      return -1;
    }
    std::fputs("[\n", s->out);
  }
  // GPU timestamps on CLOCK_MONOTONIC, then the core's epoch offset, so
  // device events line up with the CPU events of the same process.
  ClockMap clock;
  // API records name their thread by its system id (gettid), the trace's
  // tid, not by CUPTI's default (pthread_self), which no event of the trace
  // has. Linux supports it; were it refused, the launch calls would sit on
  // tracks of their own, still linked by correlation and External id.
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  const int64_t offset = trace_offset_ns();
  const uint64_t mono = monotonic_ns();
  if (cuptiActivityRegisterTimestampCallback(trace_clock) == CUPTI_SUCCESS) {
    clock.add_sample(mono, mono + uint64_t(offset));
  } else {  // older CUPTI: its own clock, tied to ours by one reading of each
    uint64_t gpu = 0;
    cuptiGetTimestamp(&gpu);
    const uint64_t at = monotonic_ns();
    clock.add_sample(gpu, at + uint64_t(offset));
  }
  s->converter = std::make_unique<ActivityConverter>(std::move(clock), static_cast<uint32_t>(getpid()));
  if (s->to_core) s->sink = std::make_unique<CoreEventSink>(s->core);
  else s->sink = std::make_unique<JsonLinesSink>(&s->text);
  g_state = s.get();
  bool ok = check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  bool enabled = false;  // some kind on: CUPTI may have taken a buffer from the pool
  for (CUpti_ActivityKind k : kKinds) {
    if (ok) ok = check(cuptiActivityEnable(k), "cuptiActivityEnable");
    enabled = enabled || ok;
  }
  // The capture sources push their events' ids around launches from now on.
  const bool refused = ok && s->to_core && s->core.set_launch_scope(&kLaunchScope) != 0;
  if (refused) {
    g_error = "dftracer_cuda_start: the tracing core refused the launch scope (a core of another version)";
    ok = false;
  }
  if (ok) {
    s.release();  // g_state owns it
    return 0;
  }
  // Undone, so a later start can try again.
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  if (enabled) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // buffers back, through buffer_completed
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->out) {
      std::fclose(s->out);
      s->out = nullptr;
      std::remove(path);
    }
    s->sink.reset();  // a buffer CUPTI hands back later is only released
  }
  g_state = nullptr;
  // With a kind enabled, CUPTI may still hold a buffer of the pool (or hand
  // one back later, then finding no state): the state stays, as after stop.
  if (enabled) s.release();
  if (!refused) g_error += " (is there a CUDA driver and a GPU?)";
  return -1;
}

extern "C" void dftracer_cuda_push(uint64_t external_id) {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, external_id);
}

extern "C" void dftracer_cuda_pop(void) { pop_launch_scope(); }

extern "C" void dftracer_cuda_flush(void) { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

extern "C" int64_t dftracer_cuda_stop(void) {
  State* s = g_state;
  if (!s) {
    g_error = "dftracer_cuda_stop: not started";
    return -1;
  }
  if (s->events >= 0) return s->events;  // stopped already (the core's before_finalize, or a caller)
  // No new scopes: ops starting from here push nothing (those open pop
  // through the scope they hold, which stays valid).
  if (s->to_core) s->core.set_launch_scope(nullptr);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  int64_t events = 0;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    events = static_cast<int64_t>(s->converter->events());
    if (s->out) {
      std::fclose(s->out);  // left without "]": the analyzer reads unfinished arrays
      s->out = nullptr;
    }
    s->sink.reset();  // nothing more into the trace: CUPTI's late buffers are only released
  }
  s->dropped = dropped;
  s->events = events;
  // Lost device work is said where the user sees it, once, as the core says
  // its own drops: the trace alone cannot tell a missing kernel.
  if (dropped > 0 && s->to_core && s->core.warn) {
    const std::string msg = "device capture: CUPTI dropped " + std::to_string(dropped) +
                            " activity records (no free buffer in the pool of " + std::to_string(kBuffers) + " x " +
                            std::to_string(kBufferBytes >> 20) + " MiB): their device events are not in the trace";
    s->core.warn(msg.c_str());
  }
  // The state stays (one capture per process): CUPTI may still call
  // buffer_completed for a buffer it held; it then finds no file and only
  // releases the buffer.
  return events;
}

extern "C" const char* dftracer_cuda_error(void) { return g_error.c_str(); }

extern "C" int dftracer_cuda_running(void) { return g_state && g_state->sink && g_state->events < 0 ? 1 : 0; }

extern "C" uint64_t dftracer_cuda_dropped(void) { return g_state ? g_state->dropped : 0; }
