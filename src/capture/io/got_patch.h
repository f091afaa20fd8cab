// A small GOT patcher (FUNCTION mode): points the GOT entries that loaded
// ELF objects use to call libc's I/O functions at our hooks, as GOTCHA and
// plthook do (neither is packaged by Debian or PyPI). Only relocations the
// dynamic linker itself resolves through the GOT are touched (JUMP_SLOT,
// GLOB_DAT); a RELRO page is made writable for the one store and then
// read-only again. Not a hot path: runs at install and after each dlopen.
#ifndef DFTRACER_IO_GOT_PATCH_H_
#define DFTRACER_IO_GOT_PATCH_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace dftracer::io {

class GotPatcher {
 public:
  // Entries for `symbol` will point at `hook`.
  void add(std::string_view symbol, void* hook) { hooks_[symbol] = hook; }

  // Patches every loaded object whose path does not contain one of
  // `skip_names` (nullptr-terminated) and is not the object holding
  // `self` (an address in the caller's own library). Returns the number of
  // GOT entries changed. Entries already pointing at a hook are left alone,
  // so it is idempotent; call it again after a dlopen. An object seen by an
  // earlier call is not looked at again (a dlopen costs the new objects'
  // relocations only, not every loaded library's), until an object has been
  // unloaded (dlpi_subs moved): another may then be loaded at its place.
  size_t patch_all(const char* const* skip_names, const void* self);

  // Patches one object given its load base and program headers (tests).
  size_t patch_object(uintptr_t base, const void* phdrs, size_t phnum);

 private:
  std::unordered_map<std::string_view, void*> hooks_;
  std::unordered_set<const void*> seen_;  // each seen object's program headers
  unsigned long long subs_seen_ = 0;
};

}  // namespace dftracer::io

#endif  // DFTRACER_IO_GOT_PATCH_H_
