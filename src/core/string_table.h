// StringTable: interns names, categories, arg keys and JSON fragments once,
// so the hot path records 32-bit ids and the writer copies pre-escaped bytes.
//
// Lookups of known strings take no lock: an open-addressing index of atomic
// slot pointers, replaced wholesale (never edited in place) when it grows.
// Inserts take a mutex. Entries and retired indexes are never freed: ids are
// valid for the life of the process, across tracing sessions and forks.
//
// Memory stays bounded because one-off names do not come here: recorders of
// names that may be unique per event (dft_complete_*_named, Python's
// log_event) call intern_bounded(), which past the cap (DFTRACER_INTERN_CAP)
// refuses new strings; the caller then copies the name into the record.
#ifndef DFTRACER_SRC_CORE_STRING_TABLE_H_
#define DFTRACER_SRC_CORE_STRING_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace dftracer {

struct InternedString {
  uint64_t hash;
  uint32_t id;
  uint32_t len;
  uint32_t escaped_len;
  const char* str;      // NUL-terminated copy
  const char* escaped;  // JSON-escaped, without quotes
};

class StringTable {
 public:
  static StringTable& instance();

  // Returns the id of s[0..n), interning it on first sight. Never 0.
  uint32_t intern(const char* s, size_t n);

  // The id of s[0..n) when known; else interns it while the table holds
  // fewer than cap() strings; else 0 (the caller copies the name inline).
  // The first refusal of the process warns once.
  uint32_t intern_bounded(const char* s, size_t n);

  // The cap intern_bounded() applies (DFTRACER_INTERN_CAP, set at each
  // session start; kDefaultCap before any).
  static constexpr uint32_t kDefaultCap = 65536;
  void set_cap(uint32_t cap) { cap_.store(cap, std::memory_order_relaxed); }
  uint32_t cap() const { return cap_.load(std::memory_order_relaxed); }

  // Events recorded with their name copied inline since the last session
  // start (dft_stats.names_inline).
  void count_inline_name() { names_inline_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t names_inline() const { return names_inline_.load(std::memory_order_relaxed); }
  void reset_inline_count() { names_inline_.store(0, std::memory_order_relaxed); }

  // The entry for an id, or nullptr for an unknown id.
  const InternedString* get(uint32_t id) const {
    uint32_t seg = id >> kSegmentBits;
    if (id == 0 || seg >= kMaxSegments) return nullptr;
    InternedString* const* block = segments_[seg].load(std::memory_order_acquire);
    if (block == nullptr) return nullptr;
    return block[id & (kSegmentSize - 1)];
  }

  uint32_t size() const { return next_id_.load(std::memory_order_acquire) - 1; }

  // fork(): the child may inherit the mutex locked by a vanished thread.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

 private:
  StringTable();
  static constexpr uint32_t kSegmentBits = 12;
  static constexpr uint32_t kSegmentSize = 1u << kSegmentBits;
  static constexpr uint32_t kMaxSegments = 1u << 14;  // 64M strings

  struct Index {
    size_t mask;
    std::atomic<InternedString*>* slots;
  };

  const InternedString* find(const Index* idx, uint64_t h, const char* s, size_t n) const;
  uint32_t lookup_or_insert(const char* s, size_t n, bool bounded);
  uint32_t refuse();  // 0, warning the first time
  uint32_t insert_locked(uint64_t h, const char* s, size_t n);  // mu_ held, s not in the table
  void insert_into(Index* idx, InternedString* e);

  std::mutex mu_;
  std::atomic<Index*> index_{nullptr};
  size_t count_ = 0;  // guarded by mu_
  std::atomic<uint32_t> next_id_{1};
  std::atomic<uint32_t> cap_{kDefaultCap};
  std::atomic<bool> warned_cap_{false};
  std::atomic<uint64_t> names_inline_{0};
  std::atomic<InternedString**> segments_[kMaxSegments];
};

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_STRING_TABLE_H_
