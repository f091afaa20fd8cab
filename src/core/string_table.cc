#include "string_table.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "dftracer/dftracer.h"  // dft_warn: the one diagnostics channel
#include "hash.h"
#include "json_escape.h"

namespace dftracer {
namespace {

char* dup_bytes(const char* s, size_t n) {
  char* p = static_cast<char*>(::operator new(n + 1));
  std::memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

}  // namespace

StringTable& StringTable::instance() {
  // Never destroyed (see header). Zeroed memory from calloc, not new: the
  // 128 KiB of segment pointers start out null without the constructor
  // writing them (a block this size comes fresh from mmap), so a
  // short-lived process touches only the page it uses, not 32.
  static StringTable* table = [] {
    void* mem = std::calloc(1, sizeof(StringTable));
    if (mem == nullptr) throw std::bad_alloc();
    return new (mem) StringTable();
  }();
  return *table;
}

// segments_ is left as calloc gave it: all null (instance()). That needs
// its elements' default constructor to write nothing.
static_assert(std::is_trivially_default_constructible<std::atomic<InternedString**>>::value,
              "StringTable::segments_ relies on calloc's zeros");
StringTable::StringTable() {
  Index* idx = new Index;
  // One page to start with (it doubles at half full): a short-lived
  // process interns a few dozen names and should not clear 32 KiB for them.
  idx->mask = 511;
  idx->slots = new std::atomic<InternedString*>[512];
  for (size_t i = 0; i <= idx->mask; ++i) idx->slots[i].store(nullptr, std::memory_order_relaxed);
  index_.store(idx, std::memory_order_release);
}

const InternedString* StringTable::find(const Index* idx, uint64_t h, const char* s, size_t n) const {
  for (size_t i = h & idx->mask;; i = (i + 1) & idx->mask) {
    const InternedString* e = idx->slots[i].load(std::memory_order_acquire);
    if (e == nullptr) return nullptr;
    if (e->hash == h && e->len == n && std::memcmp(e->str, s, n) == 0) return e;
  }
}

void StringTable::insert_into(Index* idx, InternedString* e) {
  size_t i = e->hash & idx->mask;
  while (idx->slots[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & idx->mask;
  idx->slots[i].store(e, std::memory_order_release);
}

uint32_t StringTable::intern(const char* s, size_t n) { return lookup_or_insert(s, n, /*bounded=*/false); }

uint32_t StringTable::intern_bounded(const char* s, size_t n) { return lookup_or_insert(s, n, /*bounded=*/true); }

uint32_t StringTable::lookup_or_insert(const char* s, size_t n, bool bounded) {
  if (s == nullptr) { s = ""; n = 0; }
  uint64_t h = hash64(s, n);
  if (const InternedString* e = find(index_.load(std::memory_order_acquire), h, s, n)) return e->id;
  if (bounded && size() >= cap()) return refuse();  // no lock taken for a refused name

  std::lock_guard<std::mutex> lock(mu_);
  if (const InternedString* e = find(index_.load(std::memory_order_relaxed), h, s, n)) return e->id;
  if (bounded && size() >= cap()) return refuse();
  return insert_locked(h, s, n);
}

uint32_t StringTable::refuse() {
  if (!warned_cap_.exchange(true, std::memory_order_relaxed))
    dft_warn(("more than DFTRACER_INTERN_CAP=" + std::to_string(cap()) +
              " distinct event names: further new names are copied into each event (larger records, "
              "same trace); counted in stats as names_inline")
                 .c_str());
  return 0;
}

uint32_t StringTable::insert_locked(uint64_t h, const char* s, size_t n) {
  Index* idx = index_.load(std::memory_order_relaxed);
  uint32_t id = next_id_.load(std::memory_order_relaxed);
  uint32_t seg = id >> kSegmentBits;
  if (seg >= kMaxSegments) return 0;  // table full: callers treat 0 as "no string"
  InternedString** block = segments_[seg].load(std::memory_order_relaxed);
  if (block == nullptr) {
    block = new InternedString*[kSegmentSize]();
    segments_[seg].store(block, std::memory_order_release);
  }

  std::string esc;
  json_escape_append(s, n, &esc);
  auto* e = new InternedString;
  e->hash = h;
  e->id = id;
  e->len = static_cast<uint32_t>(n);
  e->str = dup_bytes(s, n);
  e->escaped_len = static_cast<uint32_t>(esc.size());
  e->escaped = dup_bytes(esc.data(), esc.size());
  block[id & (kSegmentSize - 1)] = e;
  // Publish the id -> entry mapping before the id can be returned to anyone.
  segments_[seg].store(block, std::memory_order_release);
  next_id_.store(id + 1, std::memory_order_release);

  // Keep the index at most half full; readers keep using the old index
  // (which stays valid, it is never freed) until the new one is published.
  if (2 * (count_ + 1) > idx->mask + 1) {
    Index* bigger = new Index;
    bigger->mask = 2 * (idx->mask + 1) - 1;
    bigger->slots = new std::atomic<InternedString*>[bigger->mask + 1];
    for (size_t i = 0; i <= bigger->mask; ++i) bigger->slots[i].store(nullptr, std::memory_order_relaxed);
    for (size_t i = 0; i <= idx->mask; ++i)
      if (InternedString* old = idx->slots[i].load(std::memory_order_relaxed)) insert_into(bigger, old);
    insert_into(bigger, e);
    index_.store(bigger, std::memory_order_release);
  } else {
    insert_into(idx, e);
  }
  ++count_;
  return id;
}

}  // namespace dftracer
