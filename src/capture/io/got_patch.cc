#include "got_patch.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace dftracer::io {

namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "got_patch.cc: JUMP_SLOT/GLOB_DAT relocation types for this architecture"
#endif

// The dynamic linker rewrites most DT_* pointers to run-time addresses in
// place; some objects (the vDSO) keep them relative to the load base.
template <typename T>
T* dyn_ptr(uintptr_t base, ElfW(Addr) v) {
  return reinterpret_cast<T*>(v < base ? base + v : v);
}

struct PatchContext {
  GotPatcher* patcher;
  const char* const* skip;
  uintptr_t self_base;
  size_t patched;
  std::unordered_set<const void*>* seen;
  unsigned long long* subs_seen;
};

}  // namespace

size_t GotPatcher::patch_object(uintptr_t base, const void* phdrs_v, size_t phnum) {
  const auto* phdrs = static_cast<const ElfW(Phdr)*>(phdrs_v);
  const ElfW(Dyn)* dyn = nullptr;
  uintptr_t relro_lo = 0, relro_hi = 0;
  for (size_t i = 0; i < phnum; ++i) {
    if (phdrs[i].p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(base + phdrs[i].p_vaddr);
    if (phdrs[i].p_type == PT_GNU_RELRO) {
      relro_lo = base + phdrs[i].p_vaddr;
      relro_hi = relro_lo + phdrs[i].p_memsz;
    }
  }
  if (dyn == nullptr) return 0;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* tables[2] = {nullptr, nullptr};
  size_t sizes[2] = {0, 0};
  bool plt_is_rela = true;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = dyn_ptr<const ElfW(Sym)>(base, d->d_un.d_ptr); break;
      case DT_STRTAB: strtab = dyn_ptr<const char>(base, d->d_un.d_ptr); break;
      case DT_JMPREL: tables[0] = dyn_ptr<const ElfW(Rela)>(base, d->d_un.d_ptr); break;
      case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
      case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
      case DT_RELA: tables[1] = dyn_ptr<const ElfW(Rela)>(base, d->d_un.d_ptr); break;
      case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
      default: break;
    }
  }
  if (symtab == nullptr || strtab == nullptr || !plt_is_rela) return 0;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  size_t patched = 0;
  for (int t = 0; t < 2; ++t) {
    if (tables[t] == nullptr) continue;
    size_t n = sizes[t] / sizeof(ElfW(Rela));
    for (size_t i = 0; i < n; ++i) {
      const ElfW(Rela)& r = tables[t][i];
      uint32_t type = ELF64_R_TYPE(r.r_info);
      if (type != kJumpSlot && type != kGlobDat) continue;
      const ElfW(Sym)& sym = symtab[ELF64_R_SYM(r.r_info)];
      if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0) continue;  // defined here: not an import
      auto it = hooks_.find(std::string_view(strtab + sym.st_name));
      if (it == hooks_.end()) continue;
      auto* slot = reinterpret_cast<void**>(base + r.r_offset);
      if (__atomic_load_n(slot, __ATOMIC_RELAXED) == it->second) continue;
      bool in_relro = reinterpret_cast<uintptr_t>(slot) >= relro_lo && reinterpret_cast<uintptr_t>(slot) < relro_hi;
      void* pg = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(slot) & ~(page - 1));
      if (in_relro && mprotect(pg, page, PROT_READ | PROT_WRITE) != 0) continue;
      __atomic_store_n(slot, it->second, __ATOMIC_RELEASE);
      if (in_relro) mprotect(pg, page, PROT_READ);
      ++patched;
    }
  }
  return patched;
}

size_t GotPatcher::patch_all(const char* const* skip_names, const void* self) {
  Dl_info info{};
  PatchContext ctx{this, skip_names, 0, 0, &seen_, &subs_seen_};
  if (self != nullptr && dladdr(self, &info) != 0) ctx.self_base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  dl_iterate_phdr(
      [](struct dl_phdr_info* o, size_t size, void* data) -> int {
        auto* c = static_cast<PatchContext*>(data);
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(o->dlpi_subs)) {
          if (o->dlpi_subs != *c->subs_seen) {
            c->seen->clear();
            *c->subs_seen = o->dlpi_subs;
          }
          if (!c->seen->insert(o->dlpi_phdr).second) return 0;
        }
        const char* name = o->dlpi_name != nullptr ? o->dlpi_name : "";
        // The object's load base as dladdr reports it: its first PT_LOAD.
        for (int i = 0; i < o->dlpi_phnum; ++i) {
          if (o->dlpi_phdr[i].p_type == PT_LOAD) {
            if (o->dlpi_addr + o->dlpi_phdr[i].p_vaddr - o->dlpi_phdr[i].p_offset == c->self_base) return 0;
            break;
          }
        }
        for (const char* const* s = c->skip; s != nullptr && *s != nullptr; ++s)
          if (std::strstr(name, *s) != nullptr) return 0;
        c->patched += c->patcher->patch_object(o->dlpi_addr, o->dlpi_phdr, o->dlpi_phnum);
        return 0;
      },
      &ctx);
  return ctx.patched;
}

}  // namespace dftracer::io
