#include "call_context.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "memory_args.hpp"

namespace dftracer::dynamo {

EventIds g_event_ids;

void init_event_ids() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_event_ids.cat = dft_intern_cstr("dynamo");
    g_event_ids.flow = dft_intern_cstr("autograd");
    g_event_ids.external = dft_intern_cstr("External id");
    g_event_ids.alloc_bytes = dft_intern_cstr(format::kArgAllocBytes);
    g_event_ids.free_bytes = dft_intern_cstr(format::kArgFreeBytes);
    g_event_ids.dev_alloc_bytes = dft_intern_cstr(format::kArgDevAllocBytes);
    g_event_ids.dev_free_bytes = dft_intern_cstr(format::kArgDevFreeBytes);
  });
}

namespace {
std::mutex g_ctx_mu;
std::unordered_map<uint64_t, dft_id> g_ctx_ids;
}  // namespace

dft_id context_id(int grad, dft_id tags) {
  const uint64_t key = (static_cast<uint64_t>(tags) << 1) | (grad ? 1u : 0u);
  std::lock_guard<std::mutex> lock(g_ctx_mu);
  auto it = g_ctx_ids.find(key);
  if (it != g_ctx_ids.end()) return it->second;
  std::string frag = grad ? "\"grad_enabled\":1" : "\"grad_enabled\":0";
  size_t len = 0;
  const char* t = tags ? dft_string(tags, &len) : nullptr;
  if (t != nullptr && len > 0) {
    frag += ',';
    frag.append(t, len);
  }
  const dft_id id = dft_intern_json_fragment(frag.data(), frag.size());
  g_ctx_ids.emplace(key, id);
  return id;
}

}  // namespace dftracer::dynamo
