// FH metadata once per path and session: a fixed open-addressing set of
// (path hash, session key) slots, claimed with compare-and-swap, so the
// first thread to see a path in a session writes its FH record and no
// thread ever takes a lock. The session key is the core's session counter
// (dft_hot.session, one per trace file started: a re-init, a forked child),
// so a path is named again in each file that uses it, and a relocated file
// (dft_relocate renames it) is still the same file. Beside the session, a
// slot keeps two bits about the path that the I/O hooks learn once per
// session (what kind of file it is: src/capture/io/direct_syscall.h).
#ifndef DFTRACER_IO_FILE_HASHES_H_
#define DFTRACER_IO_FILE_HASHES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dftracer::io {

class FileHashes {
 public:
  // What see() answers: bit kFirst for the first caller with (hash,
  // session) since the session began, and in kKindMask the kind set_kind
  // recorded for the path in this session (0 until then; kNoRoom when the
  // set is full). When the set is full every call is "first" (an FH record
  // twice is harmless; one missing is not).
  static constexpr unsigned kKindMask = 3;
  static constexpr unsigned kNoRoom = 3;
  static constexpr unsigned kFirst = 4;

  unsigned see(uint64_t hash, uint64_t session) {
    // Inline, the answer of nearly every open: the path's home slot already
    // holds it for this session.
    const uint64_t key = hash == 0 ? 1 : hash;  // 0 marks a free slot
    const Slot& s = slots_[key & (kSlots - 1)];
    if (s.hash.load(std::memory_order_acquire) == key) {
      const uint64_t state = s.state.load(std::memory_order_acquire);
      if ((state >> kKindBits) == session) return static_cast<unsigned>(state) & kKindMask;
    }
    return see_probe(hash, session);
  }

  bool first_in_session(uint64_t hash, uint64_t session) { return (see(hash, session) & kFirst) != 0; }

  // Records `kind` (1 or 2) for the path in `session` when it has none yet
  // there; nothing when the set does not hold the path. Not a hot path.
  void set_kind(uint64_t hash, uint64_t session, unsigned kind);

 private:
  static constexpr unsigned kKindBits = 2;
  unsigned see_probe(uint64_t hash, uint64_t session);
  static constexpr size_t kSlots = size_t{1} << 15;
  struct Slot {
    std::atomic<uint64_t> hash{0};
    std::atomic<uint64_t> state{0};  // session << kKindBits | kind
  };
  Slot slots_[kSlots];
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_FILE_HASHES_H_
