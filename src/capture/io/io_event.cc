// Turns one intercepted call into one complete event through the core's
// public record API (dft_complete_ticks_plain: every arg is a number): interned name and category ids,
// up to five fixed-size args, no string touched on the hot path.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <cerrno>
#include <cstring>
#include <string>

#include "io_runtime.h"

namespace {

struct EventIds {
  dft_id name[DFTIO_CALL_COUNT];
  dft_id posix, stdio;
  dft_id fhash, fd, size, ret, offset;
};
EventIds g_ids;

dft_arg int_arg(dft_id key, int64_t v) {
  dft_arg a;
  a.key = key;
  a.type = DFT_ARG_INT;
  a.v.i = v;
  return a;
}

}  // namespace

// The event name of a call: its symbol, except glibc's fortified entry
// points, which are named as the call they check (`__read_chk` -> `read`,
// `__open64_2` -> `open64`), so analyses group them together. Other `__`
// symbols (`__xstat`, `__fxstat64`) keep their names, as DFTracer's do.
static std::string event_name(const char* symbol) {
  std::string s = symbol;
  if (s.rfind("__", 0) != 0) return s;
  for (const char* suffix : {"_chk", "_2"})
    if (s.size() > 2 + std::strlen(suffix) && s.compare(s.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      return s.substr(2, s.size() - 2 - std::strlen(suffix));
  return s;
}

extern "C" void dftio_intern_ids(void) {
  for (int c = 0; c < DFTIO_CALL_COUNT; ++c)
    g_ids.name[c] = dft_intern_cstr(event_name(dftio_call_name(static_cast<dftio_call>(c))).c_str());
  g_ids.posix = dft_intern_cstr("POSIX");
  g_ids.stdio = dft_intern_cstr("STDIO");
  g_ids.fhash = dft_intern_cstr("fhash");
  g_ids.fd = dft_intern_cstr("fd");
  g_ids.size = dft_intern_cstr("size");
  g_ids.ret = dft_intern_cstr("ret");
  g_ids.offset = dft_intern_cstr("offset");
}

// errno stays the real call's: the core's record path leaves it as it found
// it (session.cc), so it is not saved here on every event.
extern "C" void dftio_record(dftio_call call, uint64_t t0, uint64_t t1, const dftio_args* a) {
  dftio_busy = 1;
  dft_arg args[5];
  uint32_t n = 0;
  args[n].key = g_ids.fhash;
  args[n].type = DFT_ARG_HASH;
  args[n++].v.u = a->fhash;
  if (a->has & DFTIO_HAS_FD) args[n++] = int_arg(g_ids.fd, a->fd);
  if (a->has & DFTIO_HAS_SIZE) args[n++] = int_arg(g_ids.size, a->size);
  if (a->has & DFTIO_HAS_RET) args[n++] = int_arg(g_ids.ret, a->ret);
  if (a->has & DFTIO_HAS_OFFSET) args[n++] = int_arg(g_ids.offset, a->offset);
  dft_complete_ticks_plain(g_ids.name[call], call < DFTIO_FIRST_STDIO_CALL ? g_ids.posix : g_ids.stdio, t0, t1, args,
                           n);
  dftio_busy = 0;
}
