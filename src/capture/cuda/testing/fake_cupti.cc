// A fake CUPTI for running the CUDA capture source end to end without a GPU
// (tests/python/test_cuda_fake_cupti.py). Built against the real cupti.h of
// the CUDA 13 wheels, as libcupti.so.13 with CUPTI's symbol version, so
// libdftracer_cuda.so loads it instead of NVIDIA's (a directory first in
// LD_LIBRARY_PATH: libdftracer_cuda's search path is a RUNPATH).
//
// It implements the entry points libdftracer_cuda calls, as CUPTI documents
// them, and one test-only entry point per thing a real program does on a GPU:
//   fake_cupti_launch(name, kind, gpu_ns, stream, bytes)
//       what a kernel launch (kind 0: cudaLaunchKernel; 1: cuLaunchKernel, as
//       Triton launches), a copy (2: cudaMemcpyAsync, host to device) or a set
//       (3: cudaMemsetAsync) records: an EXTERNAL_CORRELATION record per
//       external kind whose per-thread stack holds an id (its top), the API
//       record on the calling thread, and the device record, whose GPU start
//       is max(launch + 3 us, the stream's last end) (a stream runs its work
//       in order) and whose end is start + gpu_ns; returns the correlation id;
//   fake_cupti_synchronize()
//       cudaDeviceSynchronize: sleeps until every stream has run its work.
// Records are those CUPTI 13 writes (CUpti_ActivityKernel10, Memcpy6,
// Memset4, API, ExternalCorrelation), each at the next 8-byte boundary of a
// buffer the client gave (requested on the recording thread, as CUPTI does),
// walked by cuptiActivityGetNextRecord by the size of its kind. A buffer is
// completed, on a thread of the fake's own, when it is full, when it holds
// the client's maxNumRecords or FAKE_CUPTI_RECORDS_PER_BUFFER records (unset:
// no such limit), and at a flush (which waits for it, as
// cuptiActivityFlushAll blocks). With no buffer given, records are dropped
// and counted (cuptiActivityGetNumDroppedRecords). FAKE_CUPTI_HOLD_BUFFERS=1
// holds the buffers until a flush (a completion thread that falls behind).
//
// Timestamps: the client's timestamp callback when it registered one, else
// CUPTI's own clock (cuptiGetTimestamp): CLOCK_MONOTONIC + 1000 s, so a
// client that mixed the two clocks is off by 1000 s. With
// FAKE_CUPTI_NO_TIMESTAMP_CALLBACK=1, cuptiActivityRegisterTimestampCallback
// answers CUPTI_ERROR_NOT_SUPPORTED (an older CUPTI).
//
// FAKE_CUPTI_TRUTH=path: one JSON line per launch (what the fake chose: name,
// kind, stream, correlation, external id, thread, API and GPU start and end on
// its clock), for the test to compare the trace with.
#include <cupti.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint64_t kOwnClockOffsetNs = 1000ull * 1000000000ull;
constexpr uint64_t kLaunchLatencyNs = 3000;
constexpr size_t kAlign = 8;  // ACTIVITY_RECORD_ALIGNMENT

using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
using MemsetRecord = CUpti_ActivityMemset4;

size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(KernelRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(MemcpyRecord);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(MemsetRecord);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
  }
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0, used = 0, records = 0;
  size_t max_records = 0;  // the client's limit (0: none) or FAKE_CUPTI_RECORDS_PER_BUFFER, the lower
};

struct Fake {
  std::mutex mu;
  std::condition_variable cv;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc clock = nullptr;
  bool enabled[CUPTI_ACTIVITY_KIND_COUNT] = {};
  CUpti_ActivityThreadIdType thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  Buffer current;
  std::deque<Buffer> to_complete;
  bool completing = false;  // the completion thread is handing a buffer back
  bool hold = false;        // FAKE_CUPTI_HOLD_BUFFERS=1: complete buffers only at a flush
  bool flushing = false;
  bool completer_started = false;
  size_t dropped = 0;
  uint32_t next_correlation = 1;
  std::map<uint32_t, uint64_t> stream_end;
  std::set<std::string> names;  // kernel names: CUPTI keeps them for the process's life
  size_t records_per_buffer = 0;
  FILE* truth = nullptr;
};

Fake& fake() {
  static Fake* f = [] {
    auto* s = new Fake;  // never destroyed: CUPTI's state outlives the client's exit handlers
    if (const char* n = std::getenv("FAKE_CUPTI_RECORDS_PER_BUFFER")) s->records_per_buffer = std::strtoul(n, nullptr, 10);
    if (const char* p = std::getenv("FAKE_CUPTI_TRUTH"); p && *p) s->truth = std::fopen(p, "a");
    if (const char* h = std::getenv("FAKE_CUPTI_HOLD_BUFFERS")) s->hold = std::strcmp(h, "1") == 0;
    return s;
  }();
  return *f;
}

// Per thread and external kind: the pushed ids (CUPTI's own stacks).
thread_local std::map<int, std::vector<uint64_t>> t_external;

uint64_t gpu_now(Fake& f) { return f.clock ? f.clock() : monotonic_ns() + kOwnClockOffsetNs; }

uint32_t thread_id(const Fake& f) {
  if (f.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) return uint32_t(syscall(SYS_gettid));
  const pthread_t self = pthread_self();
  uint32_t low;
  std::memcpy(&low, &self, sizeof(low));
  return low;
}

// The completion thread: hands buffers back in order, one at a time.
void completer_loop(Fake* f) {
  std::unique_lock<std::mutex> lock(f->mu);
  for (;;) {
    f->cv.wait(lock, [f] { return !f->to_complete.empty() && (!f->hold || f->flushing); });
    Buffer b = f->to_complete.front();
    f->to_complete.pop_front();
    f->completing = true;
    auto done = f->complete;
    lock.unlock();
    if (done) done(nullptr, 0, b.data, b.size, b.used);
    lock.lock();
    f->completing = false;
    f->cv.notify_all();
  }
}

// With f.mu held.
void hand_over(Fake& f) {
  if (!f.current.data) return;
  f.to_complete.push_back(f.current);
  f.current = Buffer{};
  if (!f.completer_started) {  // one thread, for the process's life (as CUPTI's worker)
    f.completer_started = true;
    std::thread(completer_loop, &f).detach();
  }
  f.cv.notify_all();
}

// A record of `kind` filled by `fill`, written into the current buffer
// (requested from the client when there is none); false when dropped.
template <typename Record, typename Fill>
bool emit(Fake& f, CUpti_ActivityKind kind, Fill fill) {
  if (!f.enabled[kind] || !f.request) return false;
  const size_t need = align_up(sizeof(Record));
  if (f.current.data && (f.current.size - f.current.used < need ||
                         (f.current.max_records && f.current.records >= f.current.max_records)))
    hand_over(f);
  if (!f.current.data) {
    uint8_t* data = nullptr;
    size_t size = 0, max_records = 0;
    f.request(&data, &size, &max_records);  // on the recording thread, as CUPTI asks
    if (!data || size < need) {
      ++f.dropped;
      return false;
    }
    if (f.records_per_buffer && (max_records == 0 || f.records_per_buffer < max_records))
      max_records = f.records_per_buffer;
    f.current = Buffer{data, size, 0, 0, max_records};
  }
  Record r;
  std::memset(&r, 0, sizeof(r));
  fill(&r);
  std::memcpy(f.current.data + f.current.used, &r, sizeof(r));
  f.current.used += need;
  ++f.current.records;
  return true;
}

void api_record(Fake& f, bool runtime, uint32_t cbid, uint32_t correlation, uint64_t start, uint64_t end) {
  const CUpti_ActivityKind kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  // One EXTERNAL_CORRELATION record per kind with an id pushed, at the API call.
  for (const auto& [ext_kind, stack] : t_external) {
    if (stack.empty()) continue;
    emit<CUpti_ActivityExternalCorrelation>(f, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                            [&](CUpti_ActivityExternalCorrelation* r) {
                                              r->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
                                              r->externalKind = CUpti_ExternalCorrelationKind(ext_kind);
                                              r->externalId = stack.back();
                                              r->correlationId = correlation;
                                            });
  }
  emit<CUpti_ActivityAPI>(f, kind, [&](CUpti_ActivityAPI* r) {
    r->kind = kind;
    r->cbid = cbid;
    r->start = start;
    r->end = end;
    r->processId = uint32_t(getpid());
    r->threadId = thread_id(f);
    r->correlationId = correlation;
    r->returnValue = 0;
  });
}

template <typename Record>
void device_fields(Record* r, uint64_t start, uint64_t end, uint32_t stream, uint32_t correlation) {
  r->start = start;
  r->end = end;
  r->deviceId = 0;
  r->contextId = 1;
  r->streamId = stream;
  r->correlationId = correlation;
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_QUEUE_EMPTY: *str = "CUPTI_ERROR_QUEUE_EMPTY"; break;
    default: *str = "CUPTI_ERROR_UNKNOWN"; break;
  }
  return CUPTI_SUCCESS;
}

// Names as CUPTI gives them: with the version suffix of the callback id.
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (!name) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: *name = "cudaLaunchKernel_v7000"; break;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: *name = "cudaMemcpyAsync_v3020"; break;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: *name = "cudaMemsetAsync_v3020"; break;
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020: *name = "cudaDeviceSynchronize_v3020"; break;
      default: break;
    }
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
    *name = "cuLaunchKernel";
  }
  return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
    return CUPTI_ERROR_NOT_SUPPORTED;
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  f.thread_id_type = type;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType* type) {
  if (!type) return CUPTI_ERROR_INVALID_PARAMETER;
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  *type = f.thread_id_type;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = monotonic_ns() + kOwnClockOffsetNs;  // CUPTI's own clock, whatever callback is set
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc func) {
  const char* off = std::getenv("FAKE_CUPTI_NO_TIMESTAMP_CALLBACK");
  if (off && std::strcmp(off, "1") == 0) return CUPTI_ERROR_NOT_SUPPORTED;
  if (!func) return CUPTI_ERROR_INVALID_PARAMETER;
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  f.clock = func;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  f.request = request;
  f.complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (record_size(kind) == 0) return CUPTI_ERROR_NOT_SUPPORTED;
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  f.enabled[kind] = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (record_size(kind) == 0) return CUPTI_ERROR_NOT_SUPPORTED;
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  f.enabled[kind] = false;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  Fake& f = fake();
  std::unique_lock<std::mutex> lock(f.mu);
  if (!f.request) return CUPTI_ERROR_INVALID_OPERATION;
  hand_over(f);
  f.flushing = true;
  f.cv.notify_all();
  f.cv.wait(lock, [&f] { return f.to_complete.empty() && !f.completing; });  // blocking, as CUPTI's
  f.flushing = false;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t at = 0;
  if (*record) {
    const auto* prev = reinterpret_cast<uint8_t*>(*record);
    const size_t size = record_size((*record)->kind);
    if (prev < buffer || size == 0) return CUPTI_ERROR_INVALID_KIND;
    at = size_t(prev - buffer) + align_up(size);
  }
  if (at + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + at);
  const size_t size = record_size(next->kind);
  if (size == 0 || at + size > valid) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  *dropped = f.dropped;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  t_external[kind].push_back(id);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t* last) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto& stack = t_external[kind];
  if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last) *last = stack.back();
  stack.pop_back();
  return CUPTI_SUCCESS;
}

// ------------------------------------------------------------ test-only

__attribute__((visibility("default"))) uint32_t fake_cupti_launch(const char* name, int kind, uint64_t gpu_ns,
                                                                  uint32_t stream, uint64_t bytes) {
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.mu);
  const uint32_t correlation = f.next_correlation++;
  const uint64_t api_start = gpu_now(f);
  uint64_t& last = f.stream_end[stream];
  const uint64_t start = std::max(api_start + kLaunchLatencyNs, last);
  const uint64_t end = start + gpu_ns;
  last = end;
  const uint64_t api_end = gpu_now(f) + 1;  // the call returns before the GPU runs it
  const bool runtime = kind != 1;
  uint32_t cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  if (kind == 1) cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  if (kind == 2) cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
  if (kind == 3) cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020;
  api_record(f, runtime, cbid, correlation, api_start, api_end);
  if (kind == 0 || kind == 1) {
    const char* interned = f.names.insert(name).first->c_str();
    const CUpti_ActivityKind k =
        f.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
    emit<KernelRecord>(f, k, [&](KernelRecord* r) {
      r->kind = k;
      device_fields(r, start, end, stream, correlation);
      r->completed = end;
      r->gridX = r->gridY = r->gridZ = 1;
      r->blockX = 128;
      r->blockY = r->blockZ = 1;
      r->name = interned;
    });
  } else if (kind == 2) {
    emit<MemcpyRecord>(f, CUPTI_ACTIVITY_KIND_MEMCPY, [&](MemcpyRecord* r) {
      r->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      r->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
      r->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
      r->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      r->bytes = bytes;
      device_fields(r, start, end, stream, correlation);
    });
  } else if (kind == 3) {
    emit<MemsetRecord>(f, CUPTI_ACTIVITY_KIND_MEMSET, [&](MemsetRecord* r) {
      r->kind = CUPTI_ACTIVITY_KIND_MEMSET;
      r->bytes = bytes;
      device_fields(r, start, end, stream, correlation);
    });
  }
  if (f.truth) {
    const auto it = t_external.find(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
    const uint64_t ext = it != t_external.end() && !it->second.empty() ? it->second.back() : 0;
    std::fprintf(f.truth,
                 "{\"name\":\"%s\",\"kind\":%d,\"stream\":%u,\"correlation\":%u,\"external\":%llu,\"tid\":%ld,"
                 "\"api_start\":%llu,\"api_end\":%llu,\"start\":%llu,\"end\":%llu,\"bytes\":%llu}\n",
                 name, kind, stream, correlation, (unsigned long long)ext, long(syscall(SYS_gettid)),
                 (unsigned long long)api_start, (unsigned long long)api_end, (unsigned long long)start,
                 (unsigned long long)end, (unsigned long long)bytes);
    std::fflush(f.truth);
  }
  return correlation;
}

__attribute__((visibility("default"))) void fake_cupti_synchronize(void) {
  Fake& f = fake();
  uint64_t until = 0, start = 0;
  uint32_t correlation = 0;
  {
    std::lock_guard<std::mutex> lock(f.mu);
    for (const auto& [stream, end] : f.stream_end) until = std::max(until, end);
    correlation = f.next_correlation++;
    start = gpu_now(f);
  }
  while (gpu_now(f) < until) {
    const uint64_t left = until - gpu_now(f);
    timespec ts{time_t(left / 1000000000ull), long(left % 1000000000ull)};
    nanosleep(&ts, nullptr);
  }
  std::lock_guard<std::mutex> lock(f.mu);
  api_record(f, true, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, correlation, start, gpu_now(f));
}

}  // extern "C"
