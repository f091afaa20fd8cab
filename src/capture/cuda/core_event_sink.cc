#include "core_event_sink.h"

#include <dlfcn.h>

#include <cstring>

namespace dftracer::cuda {

bool find_core_api(const char* soname, CoreApi* api, std::string* error) {
  void* core = nullptr;
  if (soname != nullptr && *soname) core = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  auto find = [&](const char* name) -> void* {
    void* f = dlsym(RTLD_DEFAULT, name);
    if (f == nullptr && core != nullptr) f = dlsym(core, name);
    return f;
  };
  CoreApi a;
  a.complete = reinterpret_cast<decltype(a.complete)>(find("dft_complete_ns_on_track"));
  a.flow = reinterpret_cast<decltype(a.flow)>(find("dft_flow_ns_on_track"));
  a.name_track = reinterpret_cast<decltype(a.name_track)>(find("dft_name_track"));
  a.intern = reinterpret_cast<decltype(a.intern)>(find("dft_intern_cstr"));
  a.set_launch_scope = reinterpret_cast<decltype(a.set_launch_scope)>(find("dft_set_launch_scope"));
  a.now_ns = reinterpret_cast<decltype(a.now_ns)>(find("dft_now_ns"));
  a.enabled = reinterpret_cast<decltype(a.enabled)>(find("dft_enabled"));
  a.warn = reinterpret_cast<decltype(a.warn)>(find("dft_warn"));
  if (core != nullptr) dlclose(core);  // NOLOAD took a reference; the library stays loaded by its owner
  if (!a.complete_set()) {
    *error = std::string("the tracing core (") + (soname ? soname : "libdftracer_core") +
             ") is not loaded in this process, or is older than this library: import dftracer first";
    return false;
  }
  *api = a;
  return true;
}

dft_id CoreEventSink::id_of(const char* literal) {
  auto it = ids_.find(literal);
  if (it != ids_.end()) return it->second;
  const dft_id id = api_.intern(literal);
  ids_.emplace(literal, id);
  return id;
}

void CoreEventSink::track_name(uint64_t pid, int64_t tid, const std::string& name) {
  api_.name_track(static_cast<int64_t>(pid), tid, name.c_str());
}

void CoreEventSink::complete(uint64_t pid, uint64_t tid, const char* name, const char* cat, int64_t ts_ns,
                             int64_t dur_ns, const DeviceArg* args, size_t nargs) {
  dft_arg a[8];
  if (nargs > 8) nargs = 8;
  for (size_t i = 0; i < nargs; ++i) {
    a[i].key = id_of(args[i].key);
    a[i].type = DFT_ARG_UINT;
    a[i].v.u = args[i].value;
  }
  api_.complete(static_cast<int64_t>(pid), static_cast<int64_t>(tid), name ? name : "", name ? std::strlen(name) : 0,
                id_of(cat), static_cast<uint64_t>(ts_ns), static_cast<uint64_t>(dur_ns), a,
                static_cast<uint32_t>(nargs));
}

void CoreEventSink::flow(bool start, uint64_t id, uint64_t pid, uint64_t tid, int64_t ts_ns) {
  static const char* const kFlow = "ac2g";
  const dft_id name = id_of(kFlow);
  api_.flow(static_cast<int64_t>(pid), static_cast<int64_t>(tid), name, name, kDeviceFlowIdBase + id, start ? 1 : 0,
            static_cast<uint64_t>(ts_ns));
}

}  // namespace dftracer::cuda
