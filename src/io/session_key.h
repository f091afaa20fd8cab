// The "session" half of FH-once bookkeeping (file_hashes.h): a hash of the
// trace file's name. Hashing that name byte by byte on every traced open
// cost about as much as hashing the opened path itself, so the last name
// and its hash are kept, and a call whose name matches (compared a word at
// a time) returns the kept hash. The name changes only when a session
// starts (init, relocation, a forked child), so the cache misses once per
// session.
//
// Lock-free and race-free for ThreadSanitizer: the name is held in atomic
// words, published under a sequence counter (odd while being replaced); a
// reader that sees the counter move, or a name longer than the cache,
// hashes the name itself. No allocation.
#ifndef DFTRACER_IO_SESSION_KEY_H_
#define DFTRACER_IO_SESSION_KEY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dftracer::io {

class SessionKey {
 public:
  // dft_hash64(name, strlen(name)), 0 for nullptr.
  uint64_t of(const char* name);

 private:
  static constexpr size_t kWords = 64;  // names up to 512 bytes are cached
  bool lookup(const char* name, size_t len, uint64_t* hash) const;
  void publish(const char* name, size_t len, uint64_t hash);

  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> len_{~uint64_t{0}};  // nothing cached yet
  std::atomic<uint64_t> hash_{0};
  std::atomic<uint64_t> words_[kWords] = {};
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_SESSION_KEY_H_
