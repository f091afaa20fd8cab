// The C API (include/dftracer/dftracer.h) over Session, Clock and StringTable.
// Recording functions build the binary record in place in the caller's
// buffer: header, one slot per arg, copied string bytes after their slot.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "clock.h"
#include "config.h"
#include "dftracer/dftracer.h"
#include "diagnostics.h"
#include "hash.h"
#include "host_hash_key.h"
#include "json_escape.h"
#include "session.h"
#include "string_table.h"
#include "trace_file_name.h"
#include "writer.h"

using dftracer::ArgSlot;
using dftracer::Clock;
using dftracer::Config;
using dftracer::EnableSetting;
using dftracer::kSlot;
using dftracer::Session;
using dftracer::RecordHeader;
using dftracer::RecordKind;
using dftracer::StringTable;

namespace {

inline uint32_t inline_len(const dft_arg& a) {
  uint32_t n = a.v.str.ptr != nullptr ? a.v.str.len : 0;
  if (n > DFT_MAX_INLINE_STR) n = static_cast<uint32_t>(dftracer::utf8_cut(a.v.str.ptr, n, DFT_MAX_INLINE_STR));
  return n;
}

// Copied into the record: a string value, or a key past the intern cap.
inline bool is_copied(const dft_arg& a) { return a.type == DFT_ARG_BYTES || a.type == DFT_ARG_KEY; }

inline uint32_t slots_for(const dft_arg* args, uint32_t nargs) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nargs; ++i) {
    n += 1;
    if (is_copied(args[i])) n += (inline_len(args[i]) + kSlot - 1) / kSlot;
  }
  return n;
}

// The arg slots after a header: one slot per arg, a copied string's bytes in
// the slots right after its own.
inline void write_arg_slots(ArgSlot* s, const dft_arg* args, uint32_t nargs) {
  for (uint32_t i = 0; i < nargs; ++i) {
    const dft_arg& a = args[i];
    s->key = a.key;
    s->type = static_cast<uint8_t>(a.type);
    s->pad = 0;
    s->len = 0;
    if (is_copied(a)) {
      // Off the ordinary path: an inline key means its table was full.
      if (a.type == DFT_ARG_KEY) StringTable::instance().count_inline_name();
      uint32_t n = inline_len(a);
      s->len = static_cast<uint16_t>(n);
      s->value = 0;
      if (n) std::memcpy(s + 1, a.v.str.ptr, n);
      s += 1 + (n + kSlot - 1) / kSlot;
    } else {
      s->value = a.v.u;
      ++s;
    }
  }
}

// The header; returns where its arg slots begin.
inline ArgSlot* write_header(unsigned char* p, RecordKind kind, uint8_t flags, uint32_t name, dft_id cat,
                             uint64_t start, uint64_t end, uint32_t nslots, uint32_t nargs) {
  RecordHeader* h = reinterpret_cast<RecordHeader*>(p);
  h->start = start;
  h->end = end;
  h->name = name;
  h->cat = cat;
  h->kind = kind;
  h->flags = flags;
  h->nslots = static_cast<uint16_t>(nslots);
  h->nargs = nargs;
  return reinterpret_cast<ArgSlot*>(h + 1);
}

inline void write_header_and_args(unsigned char* p, RecordKind kind, uint8_t flags, uint32_t name, dft_id cat,
                                  uint64_t start, uint64_t end, uint32_t nslots, const dft_arg* args,
                                  uint32_t nargs) {
  write_arg_slots(write_header(p, kind, flags, name, cat, start, end, nslots, nargs), args, nargs);
}

// A record with args: out of line, so that the header-only path below
// stays small enough to inline into every recording function.
__attribute__((noinline)) void record_with_args(RecordKind kind, uint8_t flags, dft_id name, dft_id cat,
                                                uint64_t start, uint64_t end, const dft_arg* args, uint32_t nargs) {
  if (nargs > DFT_MAX_ARGS) nargs = DFT_MAX_ARGS;
  const uint32_t nslots = 2 + slots_for(args, nargs);
  const Session::Reservation r = Session::reserve(nslots);
  if (r.p == nullptr) return;
  unsigned char* p = r.p;
  write_header_and_args(p, kind, flags, name, cat, start, end, nslots, args, nargs);
  Session::commit(r);
}

// A record of the header alone (most events: regions, op events without
// args, flows), inlined into each recording function: no call, and its
// constant fields are known where it is written.
// Its slow half: a new thread or session, a full chunk, tracing just off.
__attribute__((noinline)) void record_header_only_slow(RecordKind kind, uint8_t flags, dft_id name, dft_id cat,
                                                       uint64_t start, uint64_t end) {
  const Session::Reservation r = Session::reserve(2);
  if (r.p == nullptr) return;
  write_header(r.p, kind, flags, name, cat, start, end, 2, 0);
  Session::commit(r);
}

// Called with tracing seen on. The fast half makes no call (the slow one is
// a tail call), so it needs no stack frame.
__attribute__((always_inline)) inline void record_header_only(RecordKind kind, uint8_t flags, dft_id name,
                                                              dft_id cat, uint64_t start, uint64_t end) {
  const Session::Reservation r = Session::reserve_in_chunk(2);
  if (__builtin_expect(r.p == nullptr, 0)) return record_header_only_slow(kind, flags, name, cat, start, end);
  write_header(r.p, kind, flags, name, cat, start, end, 2, 0);
  Session::commit(r);
}

inline void record(RecordKind kind, uint8_t flags, dft_id name, dft_id cat, uint64_t start, uint64_t end,
                   const dft_arg* args, uint32_t nargs) {
  if (args != nullptr && nargs != 0) return record_with_args(kind, flags, name, cat, start, end, args, nargs);
  if (!Session::enabled()) return Session::note_call_while_off();
  record_header_only(kind, flags, name, cat, start, end);
}

// An event whose name is not interned (past DFTRACER_INTERN_CAP): as
// record(), plus the name's bytes in the last slots (record.h kNameInline).
// Off the ordinary path: only names the bounded table refused come here.
void record_inline_name(RecordKind kind, uint8_t flags, const char* name, size_t len, dft_id cat,
                        uint64_t start, uint64_t end, const dft_arg* args, uint32_t nargs) {
  if (nargs > DFT_MAX_ARGS) nargs = DFT_MAX_ARGS;
  if (args == nullptr) nargs = 0;
  if (name == nullptr) len = 0;
  if (len > DFT_MAX_INLINE_STR) len = dftracer::utf8_cut(name, len, DFT_MAX_INLINE_STR);
  const uint32_t name_slots = static_cast<uint32_t>((len + kSlot - 1) / kSlot);
  const uint32_t nslots = 2 + (nargs ? slots_for(args, nargs) : 0) + name_slots;
  const Session::Reservation r = Session::reserve(nslots);
  if (r.p == nullptr) return;
  unsigned char* p = r.p;
  write_header_and_args(p, kind, static_cast<uint8_t>(flags | dftracer::kNameInline),
                        static_cast<uint32_t>(len), cat, start, end, nslots, args, nargs);
  if (len) std::memcpy(p + size_t{nslots - name_slots} * kSlot, name, len);
  StringTable::instance().count_inline_name();
  Session::commit(r);
}

// dft_*_named: the interned path when the bounded table takes the name, the
// inline one when it refuses.
void record_named(RecordKind kind, uint8_t flags, const char* name, size_t len, dft_id cat, uint64_t start,
                  uint64_t end, const dft_arg* args, uint32_t nargs) {
  if (!Session::enabled()) {
    record(kind, flags, 0, cat, 0, 0, nullptr, 0);  // counts a post-finalize call
    return;
  }
  if (dft_id id = StringTable::instance().intern_bounded(name, len))
    record(kind, flags, id, cat, start, end, args, nargs);
  else
    record_inline_name(kind, flags, name, len, cat, start, end, args, nargs);
}

dft_id cat_dftracer() {
  static const dft_id id = StringTable::instance().intern("dftracer", 8);
  return id;
}

dft_arg bytes_arg(dft_id key, const char* s) {
  dft_arg a;
  std::memset(&a, 0, sizeof a);
  a.key = key;
  a.type = DFT_ARG_BYTES;
  a.v.str.ptr = s;
  a.v.str.len = static_cast<uint32_t>(s ? std::strlen(s) : 0);
  return a;
}

// A metadata string, all `len` bytes of it: copied into the record when it
// fits (DFT_MAX_INLINE_STR), else interned -- metadata is rare and off the
// hot path, and cutting a value short would be silent truncation.
dft_arg text_arg(dft_id key, const char* s, size_t len) {
  if (len <= DFT_MAX_INLINE_STR) {
    dft_arg a = bytes_arg(key, nullptr);
    a.v.str.ptr = s;
    a.v.str.len = static_cast<uint32_t>(len);
    return a;
  }
  dft_arg a;
  std::memset(&a, 0, sizeof a);
  a.key = key;
  a.type = DFT_ARG_STR;
  a.v.id = StringTable::instance().intern(s, len);
  return a;
}

// Checks that `s` is the inside of a JSON object: "k":v pairs separated by
// commas. A small validating scanner: fragments are interned once per graph
// node or context, never on the hot path.
class FragmentChecker {
 public:
  FragmentChecker(const char* s, size_t n) : s_(s), p_(s), e_(s + n) {}
  // Offsets of the top-level keys spelled "hhash", after ok().
  const std::vector<size_t>& host_hash_keys() const { return host_hash_keys_; }

  bool ok() {
    ws();
    // "" is the empty fragment (nothing written); blanks alone are not: the
    // writer would put them after a comma, "{...,  }", which is not JSON.
    if (p_ == e_) return p_ == s_;
    for (;;) {
      ws();
      const char* key = p_;
      if (!string()) return false;
      if (is_host_hash_key(key, p_)) host_hash_keys_.push_back(static_cast<size_t>(key - s_));
      ws();
      if (!eat(':')) return false;
      if (!value(0)) return false;
      ws();
      if (p_ == e_) return true;
      if (!eat(',')) return false;
    }
  }

 private:
  void ws() { while (p_ < e_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_; }
  bool eat(char c) { if (p_ < e_ && *p_ == c) { ++p_; return true; } return false; }
  bool string() {
    if (!eat('"')) return false;
    while (p_ < e_) {
      unsigned char c = static_cast<unsigned char>(*p_++);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (p_ >= e_) return false;
        char x = *p_++;
        if (x == 'u') {
          for (int i = 0; i < 4; ++i, ++p_)
            if (p_ >= e_ || !isxdigit(static_cast<unsigned char>(*p_))) return false;
        } else if (!strchr("\"\\/bfnrt", x)) {
          return false;
        }
      }
    }
    return false;
  }
  bool literal(const char* w) {
    size_t n = strlen(w);
    if (static_cast<size_t>(e_ - p_) < n || memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }
  bool number() {
    const char* s = p_;
    eat('-');
    if (p_ < e_ && *p_ == '0') ++p_;
    else if (!digits()) return false;
    if (eat('.') && !digits()) return false;
    if (p_ < e_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < e_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
    }
    return p_ > s;
  }
  bool digits() {
    const char* s = p_;
    while (p_ < e_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ > s;
  }
  bool value(int depth) {
    if (depth > 32) return false;
    ws();
    if (p_ >= e_) return false;
    char c = *p_;
    if (c == '"') return string();
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++p_;
      ws();
      if (eat(close)) return true;
      for (;;) {
        ws();
        if (c == '{') {
          if (!string()) return false;
          ws();
          if (!eat(':')) return false;
        }
        if (!value(depth + 1)) return false;
        ws();
        if (eat(close)) return true;
        if (!eat(',')) return false;
      }
    }
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }
  // [b, e) is a quoted key spelled exactly "hhash" (an escaped spelling of
  // it is not looked for).
  static bool is_host_hash_key(const char* b, const char* e) {
    const size_t n = sizeof dftracer::kHostHashKey - 1;
    return static_cast<size_t>(e - b) == n + 2 && std::memcmp(b + 1, dftracer::kHostHashKey, n) == 0;
  }
  const char* s_;
  const char* p_;
  const char* e_;
  std::vector<size_t> host_hash_keys_;
};

// `s` with each top-level "hhash" key (at the given offsets) renamed
// "user_hhash": the key is the format's (host_hash_key.h).
std::string with_user_host_hash_keys(const char* s, size_t len, const std::vector<size_t>& at) {
  const size_t quoted = sizeof dftracer::kHostHashKey + 1;  // "hhash" with its quotes
  std::string out;
  size_t from = 0;
  for (size_t k : at) {
    out.append(s + from, k - from);
    out.append("\"").append(dftracer::kUserHostHashKey).append("\"");
    from = k + quoted;
  }
  out.append(s + from, len - from);
  return out;
}

}  // namespace

extern "C" {

int dft_init(const char* log_file, const char* data_dir, int64_t process_id) {
  // As pydftracer: the program keeps its init call, the environment
  // switches tracing (DFTRACER_ENABLE=1), whoever asks to start.
  if (Config::enable_setting() != EnableSetting::kOn) return 1;
  return Session::instance().init(log_file, data_dir, process_id);
}
int dft_init_opt_in(const char* log_file, const char* data_dir, int64_t process_id) {
  // A program that wants tracing without the environment; a DFTRACER_ENABLE
  // set to anything but 1 still keeps it off (the user's kill switch).
  if (Config::enable_setting() == EnableSetting::kOff) return 1;
  return Session::instance().init(log_file, data_dir, process_id);
}
int dft_relocate(const char* log_file) {
  std::string error;
  if (Session::instance().relocate(log_file, &error) == 0) return 0;
  dftracer::log_debug("dft_relocate: " + error);
  return -1;
}
int dft_env_enable(void) {
  switch (Config::enable_setting()) {
    case EnableSetting::kOn: return 1;
    case EnableSetting::kOff: return 0;
    default: return -1;
  }
}
int dft_init_from_env(void) { return Session::instance().init_from_env(); }
void dft_finalize(void) { Session::instance().finalize(); }
// Written only by Session (enabled) and Clock (tsc); see dftracer.h.
dft_hot_state dft_hot = {0, 0, 0, 0};

int dft_enabled(void) { return Session::enabled() ? 1 : 0; }
const char* dft_trace_path(void) { return Session::instance().trace_path(); }
const char* dft_trace_prefix(void) { return Session::instance().trace_prefix(); }

int dft_trace_file_name(const char* prefix, const char* app, int64_t pid, int compress, char* out, size_t cap) {
  if (prefix == nullptr || app == nullptr) return -1;
  std::string name = dftracer::trace_file_name(prefix, app, pid, compress != 0);
  if (out != nullptr && cap > 0) {
    size_t n = std::min(name.size(), cap - 1);
    std::memcpy(out, name.data(), n);
    out[n] = '\0';
  }
  return static_cast<int>(name.size());
}
void dft_flush(void) { Session::instance().flush(); }

void dft_get_stats(dft_stats* out) {
  if (out == nullptr) return;
  std::memset(out, 0, sizeof *out);
  Session& lg = Session::instance();
  out->events_recorded = lg.registry().events_recorded();
  if (dftracer::Writer* w = lg.writer()) {
    out->events_written = w->events_written();
    out->events_dropped = w->events_dropped();
    out->bytes_written = w->bytes_written();
  }
  out->events_after_finalize = lg.after_finalize_count();
  out->pool_bytes_in_use = lg.pool().in_use_bytes();
  out->pool_bytes_peak = lg.pool().peak_bytes();
  out->pool_bytes_cap = lg.pool().cap_bytes();
  out->names_inline = StringTable::instance().names_inline();
}

uint64_t dft_ticks(void) { return Clock::ticks(); }
uint64_t dft_now_ns(void) { return Clock::instance().now_ns(); }
uint64_t dft_ticks_to_ns(uint64_t ticks) { return Clock::instance().to_ns(ticks); }

dft_id dft_intern(const char* s, size_t len) { return StringTable::instance().intern(s, len); }
dft_id dft_intern_bounded(const char* s, size_t len) { return StringTable::instance().intern_bounded(s, len); }
dft_id dft_intern_cstr(const char* s) { return StringTable::instance().intern(s, s ? std::strlen(s) : 0); }

const char* dft_string(dft_id id, size_t* len) {
  const dftracer::InternedString* e = StringTable::instance().get(id);
  if (e == nullptr) return nullptr;
  if (len) *len = e->len;
  return e->str;
}

dft_id dft_intern_json_fragment(const char* s, size_t len) {
  if (s == nullptr) return 0;
  FragmentChecker check(s, len);
  if (!check.ok()) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      std::string shown(s, len > 80 ? 80 : len);
      dftracer::log_warn("dft_intern_json_fragment: not a list of JSON object members: '" + shown + "'; ignored");
    }
    return 0;
  }
  if (!check.host_hash_keys().empty()) {
    std::string renamed = with_user_host_hash_keys(s, len, check.host_hash_keys());
    return StringTable::instance().intern(renamed.data(), renamed.size());
  }
  return StringTable::instance().intern(s, len);
}

namespace {
// dft_complete_ticks with args, out of line with the same arguments, so the
// header-only path reaches it by a tail call and needs no stack frame.
__attribute__((noinline)) void complete_ticks_with_args(dft_id name, dft_id cat, uint64_t start_ticks,
                                                        uint64_t end_ticks, const dft_arg* args, uint32_t nargs) {
  record_with_args(RecordKind::kComplete, 0, name, cat, start_ticks, end_ticks, args, nargs);
}
}  // namespace

void dft_complete_ticks(dft_id name, dft_id cat, uint64_t start_ticks, uint64_t end_ticks, const dft_arg* args,
                        uint32_t nargs) {
  if (args != nullptr && nargs != 0) return complete_ticks_with_args(name, cat, start_ticks, end_ticks, args, nargs);
  if (!Session::enabled()) return Session::note_call_while_off();
  record_header_only(RecordKind::kComplete, 0, name, cat, start_ticks, end_ticks);
}

void dft_complete_ticks_plain(dft_id name, dft_id cat, uint64_t start_ticks, uint64_t end_ticks,
                              const dft_arg* args, uint32_t nargs) {
  if (args == nullptr || nargs > DFT_MAX_ARGS) nargs = args == nullptr ? 0 : DFT_MAX_ARGS;
  const uint32_t nslots = 2 + nargs;
  const Session::Reservation r = Session::reserve(nslots);
  if (r.p == nullptr) return;
  unsigned char* p = r.p;
  ArgSlot* slot = write_header(p, RecordKind::kComplete, 0, name, cat, start_ticks, end_ticks, nslots, nargs);
  for (uint32_t i = 0; i < nargs; ++i) {
    slot[i].key = args[i].key;
    slot[i].type = static_cast<uint8_t>(args[i].type);
    slot[i].pad = 0;
    slot[i].len = 0;
    slot[i].value = args[i].v.u;
  }
  Session::commit(r);
}

void dft_complete_ns(dft_id name, dft_id cat, uint64_t start_ns, uint64_t dur_ns, const dft_arg* args,
                     uint32_t nargs) {
  record(RecordKind::kComplete, dftracer::kTimeIsNs, name, cat, start_ns, dur_ns, args, nargs);
}

uint64_t dft_region_begin(void) { return Clock::ticks(); }

void dft_complete_ticks_named(const char* name, size_t len, dft_id cat, uint64_t start_ticks, uint64_t end_ticks,
                              const dft_arg* args, uint32_t nargs) {
  record_named(RecordKind::kComplete, 0, name, len, cat, start_ticks, end_ticks, args, nargs);
}

void dft_complete_ns_named(const char* name, size_t len, dft_id cat, uint64_t start_ns, uint64_t dur_ns,
                           const dft_arg* args, uint32_t nargs) {
  record_named(RecordKind::kComplete, dftracer::kTimeIsNs, name, len, cat, start_ns, dur_ns, args, nargs);
}

namespace {
// dft_region_end with args, or with a clock other than the TSC: out of line
// with the same arguments (a tail call from the fast path below).
__attribute__((noinline)) void region_end_general(dft_id name, dft_id cat, uint64_t begin_ticks,
                                                  const dft_arg* args, uint32_t nargs) {
  if (!Session::enabled()) return Session::note_call_while_off();  // counts a post-finalize call
  record(RecordKind::kComplete, 0, name, cat, begin_ticks, Clock::ticks(), args, nargs);
}
}  // namespace

// The fast path (no args, the TSC) makes no call but the slow paths' tail
// calls: no stack frame, no register saved.
void dft_region_end(dft_id name, dft_id cat, uint64_t begin_ticks, const dft_arg* args, uint32_t nargs) {
  if (__builtin_expect((args != nullptr && nargs != 0) || !Clock::ticks_are_tsc(), 0))
    return region_end_general(name, cat, begin_ticks, args, nargs);
  if (!Session::enabled()) return Session::note_call_while_off();  // counts a post-finalize call
  record_header_only(RecordKind::kComplete, 0, name, cat, begin_ticks, Clock::tsc());
}

void dft_record_cut(dft_id name, dft_id cat, uint64_t start_ticks, const dft_arg* args, uint32_t nargs) {
  // Opened before this trace began: in a forked child, its copy of a region
  // the parent had open at the fork (the parent's trace has it).
  if (start_ticks < Session::instance().start_ticks()) return;
  if (!Session::instance().write_as_main_thread()) return;
  if (args == nullptr || nargs > DFT_MAX_ARGS - 1) nargs = args == nullptr ? 0 : DFT_MAX_ARGS - 1;
  std::vector<dft_arg> all(args, args + nargs);
  dft_arg cut;
  std::memset(&cut, 0, sizeof cut);
  cut.key = dft_intern("cut", 3);
  cut.type = DFT_ARG_BOOL;
  cut.v.i = 1;
  all.push_back(cut);
  record(RecordKind::kComplete, 0, name, cat, start_ticks, Clock::ticks(), all.data(),
         static_cast<uint32_t>(all.size()));
}

void dft_instant(dft_id name, dft_id cat, const dft_arg* args, uint32_t nargs) {
  uint64_t t = Clock::ticks();
  record(RecordKind::kInstant, 0, name, cat, t, t, args, nargs);
}

void dft_instant_ticks(dft_id name, dft_id cat, uint64_t at_ticks, const dft_arg* args, uint32_t nargs) {
  record(RecordKind::kInstant, 0, name, cat, at_ticks, at_ticks, args, nargs);
}

void dft_instant_named(const char* name, size_t len, dft_id cat, const dft_arg* args, uint32_t nargs) {
  uint64_t t = Clock::ticks();
  record_named(RecordKind::kInstant, 0, name, len, cat, t, t, args, nargs);
}

void dft_counter_ticks(dft_id name, dft_id cat, uint64_t at_ticks, const dft_arg* args, uint32_t nargs) {
  record(RecordKind::kCounter, 0, name, cat, at_ticks, at_ticks, args, nargs);
}

void dft_flow(dft_id name, dft_id cat, uint64_t flow_id, int start, uint64_t at_ticks) {
  record(start ? RecordKind::kFlowStart : RecordKind::kFlowEnd, 0, name, cat, at_ticks, flow_id, nullptr, 0);
}

void dft_metadata(const char* key, const char* value) {
  dft_metadata_len(key, key ? std::strlen(key) : 0, value, value ? std::strlen(value) : 0);
}

namespace {
// A metadata event {"name": event_name, "args": {"name": key, "value": value}};
// event_name "" means the key itself.
void key_value_metadata(const char* event_name, const char* key, size_t key_len, const char* value,
                        size_t value_len) {
  if (!Session::enabled() || key == nullptr) {
    record(RecordKind::kMetadata, 0, 0, 0, 0, 0, nullptr, 0);
    return;
  }
  if (value == nullptr) value_len = 0;
  StringTable& st = StringTable::instance();
  static const dft_id k_name = st.intern("name", 4);
  static const dft_id k_value = st.intern("value", 5);
  dft_arg args[2] = {text_arg(k_name, key, key_len), text_arg(k_value, value, value_len)};
  if (*event_name)
    record(RecordKind::kMetadata, 0, st.intern(event_name, std::strlen(event_name)), cat_dftracer(), 0, 0, args, 2);
  else  // named by its key, which may be new on every call: bounded
    record_named(RecordKind::kMetadata, 0, key, key_len, cat_dftracer(), 0, 0, args, 2);
}
}  // namespace

void dft_metadata_len(const char* key, size_t key_len, const char* value, size_t value_len) {
  key_value_metadata("", key, key_len, value, value_len);
}
void dft_custom_metadata_len(const char* key, size_t key_len, const char* value, size_t value_len) {
  key_value_metadata("CM", key, key_len, value, value_len);  // DFTracer's "custom metadata"
}

uint64_t dft_hash64(const char* s, size_t len) { return dftracer::hash64(s ? s : "", s ? len : 0); }

uint64_t dft_hash_metadata(const char* kind, const char* value) {
  if (value == nullptr) value = "";
  const uint64_t h = dftracer::hash64(value, std::strlen(value));
  dft_hash_metadata_as(kind, value, h);
  return h;
}

void dft_hash_metadata_as(const char* kind, const char* value, uint64_t h) {
  if (value == nullptr) value = "";
  if (!Session::enabled() || kind == nullptr) return;
  StringTable& st = StringTable::instance();
  static const dft_id k_name = st.intern("name", 4);
  static const dft_id k_value = st.intern("value", 5);
  dft_arg args[2];
  args[0] = bytes_arg(k_name, value);
  std::memset(&args[1], 0, sizeof args[1]);
  args[1].key = k_value;
  args[1].type = DFT_ARG_HASH;
  args[1].v.u = h;
  record(RecordKind::kMetadata, 0, st.intern(kind, std::strlen(kind)), cat_dftracer(), 0, 0, args, 2);
}

namespace {
// Chrome's thread_name / process_name metadata: args {"name": display}.
void display_name(RecordKind kind, const char* event, const char* name) {
  if (!Session::enabled()) return;
  static const dft_id k_name = StringTable::instance().intern("name", 4);
  dft_arg a = bytes_arg(k_name, name ? name : "");
  record(kind, 0, StringTable::instance().intern(event, std::strlen(event)), cat_dftracer(), 0, 0, &a, 1);
}
}  // namespace

void dft_set_thread_name(const char* name) { display_name(RecordKind::kThreadName, "thread_name", name); }

void dft_metadata_i64(const char* key, int64_t value) {
  if (!Session::enabled() || key == nullptr) return;
  StringTable& st = StringTable::instance();
  static const dft_id k_name = st.intern("name", 4);
  static const dft_id k_value = st.intern("value", 5);
  const size_t len = std::strlen(key);
  dft_arg args[2] = {text_arg(k_name, key, len), dft_arg{}};
  args[1].key = k_value;
  args[1].type = DFT_ARG_INT;
  args[1].v.i = value;
  record_named(RecordKind::kMetadata, 0, key, len, cat_dftracer(), 0, 0, args, 2);
}

void dft_set_process_name(const char* name) { display_name(RecordKind::kMetadata, "process_name", name); }

// ------------------------------------------------ device capture sources

const dft_launch_scope* dft_launch_scope_current = nullptr;

int dft_set_launch_scope(const dft_launch_scope* scope) {
  // Checked here, once, so the capture sources' per-event check stays one
  // load and one branch: a scope they see is whole.
  if (scope != nullptr &&
      (scope->struct_size < DFT_LAUNCH_SCOPE_MIN_SIZE || scope->push == nullptr || scope->pop == nullptr))
    return -1;
  __atomic_store_n(&dft_launch_scope_current, scope, __ATOMIC_RELEASE);
  return 0;
}

namespace {
// A record on another track (record.h kOnTrack): header, the track slot,
// the args, and the name's bytes in the last slots when it is not interned.
void record_on_track(RecordKind kind, int64_t pid, int64_t tid, dft_id name_id, const char* name, size_t len,
                     dft_id cat, uint64_t start, uint64_t end, const dft_arg* args, uint32_t nargs) {
  if (nargs > DFT_MAX_ARGS) nargs = DFT_MAX_ARGS;
  if (args == nullptr) nargs = 0;
  if (!Session::enabled()) {
    Session::note_call_while_off();  // counts a post-finalize call
    return;
  }
  uint8_t flags = dftracer::kTimeIsNs | dftracer::kOnTrack;
  if (name_id == 0 && name != nullptr) name_id = StringTable::instance().intern_bounded(name, len);
  uint32_t name_slots = 0;
  if (name_id == 0 && name != nullptr) {  // past the intern cap: the bytes travel in the record
    if (len > DFT_MAX_INLINE_STR) len = dftracer::utf8_cut(name, len, DFT_MAX_INLINE_STR);
    name_slots = static_cast<uint32_t>((len + kSlot - 1) / kSlot);
    flags |= dftracer::kNameInline;
    name_id = static_cast<uint32_t>(len);
  }
  const uint32_t nslots = 3 + (nargs ? slots_for(args, nargs) : 0) + name_slots;
  const Session::Reservation r = Session::reserve(nslots);
  if (r.p == nullptr) return;
  unsigned char* p = r.p;
  ArgSlot* track = write_header(p, kind, flags, name_id, cat, start, end, nslots, nargs);
  std::memset(track, 0, sizeof *track);
  track->key = static_cast<uint32_t>(pid);
  track->value = static_cast<uint64_t>(static_cast<uint32_t>(tid));
  write_arg_slots(track + 1, args, nargs);
  if (name_slots) {
    std::memcpy(p + size_t{nslots - name_slots} * kSlot, name, len);
    StringTable::instance().count_inline_name();
  }
  Session::commit(r);
}
}  // namespace

void dft_complete_ns_on_track(int64_t pid, int64_t tid, const char* name, size_t len, dft_id cat, uint64_t start_ns,
                              uint64_t dur_ns, const dft_arg* args, uint32_t nargs) {
  record_on_track(RecordKind::kComplete, pid, tid, 0, name ? name : "", name ? len : 0, cat, start_ns, dur_ns, args,
                  nargs);
}

void dft_flow_ns_on_track(int64_t pid, int64_t tid, dft_id name, dft_id cat, uint64_t flow_id, int start,
                          uint64_t at_ns) {
  record_on_track(start ? RecordKind::kFlowStart : RecordKind::kFlowEnd, pid, tid, name, nullptr, 0, cat, at_ns,
                  flow_id, nullptr, 0);
}

void dft_name_track(int64_t pid, int64_t tid, const char* name) {
  static const dft_id k_name = StringTable::instance().intern("name", 4);
  const bool process = tid < 0;
  dft_arg a = bytes_arg(k_name, name ? name : "");
  const char* event = process ? "process_name" : "thread_name";
  record_on_track(RecordKind::kMetadata, pid, process ? 0 : tid, StringTable::instance().intern(event, std::strlen(event)),
                  nullptr, 0, cat_dftracer(), 0, 0, &a, 1);
}

int64_t dft_pid(void) {
  int64_t p = Session::instance().pid();
  return p != 0 ? p : static_cast<int64_t>(getpid());
}
int64_t dft_tid(void) { return static_cast<int64_t>(syscall(SYS_gettid)); }

void dft_warn(const char* message) { dftracer::log_warn(message ? message : ""); }
void dft_stderr_replaced(void) { dftracer::note_program_stderr(); }
int dft_stderr_verified(void) { return dftracer::program_stderr_verified() ? 1 : 0; }

}  // extern "C"
