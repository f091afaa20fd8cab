// FH metadata once per path and session: a fixed open-addressing set of
// (path hash, session key) slots, claimed with compare-and-swap, so the
// first thread to see a path in a session writes its FH record and no
// thread ever takes a lock. The session key is the core's session counter
// (dft_hot.session, one per trace file started: a re-init, a forked child),
// so a path is named again in each file that uses it, and a relocated file
// (dft_relocate renames it) is still the same file.
#ifndef DFTRACER_IO_FILE_HASHES_H_
#define DFTRACER_IO_FILE_HASHES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dftracer::io {

class FileHashes {
 public:
  // True for the first caller with (hash, session) since the session began.
  // When the set is full every call is "first" (an FH record twice is
  // harmless; one missing is not).
  bool first_in_session(uint64_t hash, uint64_t session) {
    // Inline, the answer of nearly every open: the path's home slot already
    // holds it for this session.
    const uint64_t key = hash == 0 ? 1 : hash;  // 0 marks a free slot
    const Slot& s = slots_[key & (kSlots - 1)];
    if (s.hash.load(std::memory_order_acquire) == key &&
        s.session.load(std::memory_order_acquire) == session)
      return false;
    return first_in_session_probe(hash, session);
  }

 private:
  bool first_in_session_probe(uint64_t hash, uint64_t session);
  static constexpr size_t kSlots = size_t{1} << 15;
  struct Slot {
    std::atomic<uint64_t> hash{0};
    std::atomic<uint64_t> session{0};
  };
  Slot slots_[kSlots];
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_FILE_HASHES_H_
