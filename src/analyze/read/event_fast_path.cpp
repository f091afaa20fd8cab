#include "event_fast_path.hpp"

#include "trace_phase.hpp"
#include "trace_time.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#if defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <memory>

namespace dftracer::analyze {
namespace {

static_assert(kLinePadding >= 32, "string scanning loads 32 bytes past any position up to the line end");

constexpr int kMaxDepth = 64;  // deeper values go to simdjson (its limit is far higher)

// Every reader below takes the position `p` and the line end `e` by value and
// returns the position after what it read, or nullptr for "not handled here"
// (invalid JSON, or valid JSON this path leaves to simdjson). Passing the
// cursor by value keeps it in a register: a cursor object shared with the
// member callbacks measured ~20% more instructions, spent reloading it.
using P = const char*;

inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
// One table lookup: after every number and literal of a line.
struct DelimTable {
  bool v[256] = {};
  constexpr DelimTable() {
    for (unsigned char c : {' ', '\t', '\n', '\r', ',', '}', ']'}) v[c] = true;
  }
};
inline constexpr DelimTable kDelim{};
inline bool is_delim(char c) { return kDelim.v[static_cast<unsigned char>(c)]; }

inline P skip_ws(P p, P e) {
  while (p < e && is_ws(*p)) ++p;
  return p;
}
// Compact JSON has no whitespace: one compare settles the usual case.
inline P ws_maybe(P p, P e) { return p < e && static_cast<unsigned char>(*p) <= ' ' ? skip_ws(p, e) : p; }

// After an opening quote: the next quote, backslash, control or non-ASCII
// byte (nullptr when none before the line end).
inline P next_special(P p, P e) {
#if defined(__AVX2__)
  // Loads may run up to 31 bytes past the line end: the padding covers them.
  const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\'), space = _mm256_set1_epi8(0x20);
  while (p < e) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    // Signed compare: bytes >= 0x80 are negative, so this catches them with the controls.
    __m256i special = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, bslash)),
                                      _mm256_cmpgt_epi8(space, v));
    uint32_t m = static_cast<uint32_t>(_mm256_movemask_epi8(special));
    if (m) {
      P hit = p + __builtin_ctz(m);
      return hit < e ? hit : nullptr;
    }
    p += 32;
  }
  return nullptr;
#else
  for (; p < e; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
  }
  return nullptr;
#endif
}

// After an opening quote: a string with nothing to unescape, as a view.
inline P plain_string(P p, P e, std::string_view& out) {
  P hit = next_special(p, e);
  if (!hit || *hit != '"') return nullptr;
  out = std::string_view(p, static_cast<size_t>(hit - p));
  return hit + 1;
}

// A plain string value (not after its quote yet).
inline P string_value(P p, P e, std::string_view& out) {
  return p < e && *p == '"' ? plain_string(p + 1, e, out) : nullptr;
}

// After an opening quote: any valid ASCII string (escapes checked, not decoded).
P any_string(P p, P e) {
  for (;;) {
    P hit = next_special(p, e);
    if (!hit) return nullptr;
    if (*hit == '"') return hit + 1;
    if (*hit != '\\' || hit + 1 >= e) return nullptr;
    char x = hit[1];
    if (x == 'u') {
      if (e - hit < 6) return nullptr;
      for (int i = 2; i < 6; ++i) {
        char h = hit[i];
        if (!(is_digit(h) || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return nullptr;
      }
      p = hit + 6;
    } else if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't') {
      p = hit + 2;
    } else {
      return nullptr;
    }
  }
}

// Eight ASCII digits (the first the most significant) as a number (SWAR).
inline uint32_t eight_digits(uint64_t w) {
  w = (w & 0x0F0F0F0F0F0F0F0Full) * 2561 >> 8;
  w = (w & 0x00FF00FF00FF00FFull) * 6553601 >> 16;
  return static_cast<uint32_t>((w & 0x0000FFFF0000FFFFull) * 42949672960001ull >> 32);
}

// The value of the n ASCII digits at p (n <= 19). Reads 8 bytes from any
// digit position, which the line's padding makes safe.
inline uint64_t parse_digits(P p, size_t n) {
  uint64_t v = 0, w;
  for (; n >= 8; p += 8, n -= 8) {
    std::memcpy(&w, p, 8);
    v = v * 100000000 + eight_digits(w);
  }
  if (n) {
    static constexpr uint64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    std::memcpy(&w, p, 8);
    w <<= 8 * (8 - n);  // the n digits become the low end of eight; the zero bytes read as 0
    v = v * kPow10[n] + eight_digits(w);
  }
  return v;
}

// The first non-digit at or after p, or e. Eight bytes a time (SWAR): a byte
// is a digit when its high nibble is 3 and adding 6 keeps it so. A carry out
// of a non-digit byte only disturbs the bytes after it, past the answer.
inline P digits_end(P p, P e) {
#if defined(__AVX2__)
  // 32 bytes a time: one compare finds the end of any number a trace holds.
  // Loads reach at most 31 bytes past the line end (the padding).
  const __m256i zero = _mm256_set1_epi8('0'), nine = _mm256_set1_epi8(9);
  for (; p < e; p += 32) {
    __m256i d = _mm256_sub_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), zero);
    uint32_t nd = ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(d, nine), d)));
    if (nd) {
      P r = p + __builtin_ctz(nd);
      return r < e ? r : e;
    }
  }
  return e;
#else
  for (; p < e; p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    uint64_t nd = ((w & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                  (((w + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull);
    if (nd) {
      P r = p + (__builtin_ctzll(nd) >> 3);
      return r < e ? r : e;
    }
  }
  return e;
#endif
}

// Where a number's parts lie.
struct NumberParts {
  P int_begin, int_end, frac_begin, frac_end;
  bool neg, exp;
  bool integral() const { return frac_begin == frac_end && !exp; }
};

#if defined(__AVX2__)
// Bit i: p[i] is an ASCII digit. Reads 32 bytes from p (< the line end): the
// padding covers them.
inline uint32_t digit_bits(P p) {
  const __m256i zero = _mm256_set1_epi8('0'), nine = _mm256_set1_epi8(9);
  __m256i d = _mm256_sub_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), zero);
  return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(d, nine), d)));
}

// The usual number of a trace -- digits, maybe a fraction, no exponent, all in
// 32 bytes -- from one load's digit bits (p at its first digit). Returns
// nullptr with `settled` false for any other shape (read by the full scan),
// or with `settled` true for a number the grammar rejects.
inline P short_number(P p, P e, NumberParts& n, bool& settled) {
  settled = false;
  const uint64_t m = digit_bits(p);
  const size_t il = *p == '0' ? 1 : static_cast<size_t>(__builtin_ctzll(~m));
  if (il >= 31 || p + il > e) return nullptr;
  P q = p + il;
  n.int_end = n.frac_begin = n.frac_end = q;
  if (q < e && *q == '.') {
    const size_t fl = static_cast<size_t>(__builtin_ctzll(~(m >> (il + 1))));
    if (il + 1 + fl >= 32 || q + 1 + fl > e) return nullptr;
    settled = true;
    if (fl == 0) return nullptr;
    n.frac_begin = q + 1;
    q = n.frac_end = q + 1 + fl;
  }
  if (q < e && (*q | 0x20) == 'e') {
    settled = false;
    return nullptr;
  }
  settled = true;
  n.exp = false;
  return q == e || is_delim(*q) ? q : nullptr;
}
#endif

// A number by the JSON grammar, ending at a delimiter or the line end.
inline P number(P p, P e, NumberParts& n) {
  n.neg = p < e && *p == '-';
  p += n.neg;
  if (!(p < e && is_digit(*p))) return nullptr;
  n.int_begin = p;
#if defined(__AVX2__)
  bool settled;
  P q = short_number(p, e, n, settled);
  if (settled) return q;
#endif
  // "0" stands alone: a digit after it fails the delimiter test.
  p = *p == '0' ? p + 1 : digits_end(p + 1, e);
  n.int_end = n.frac_begin = n.frac_end = p;
  if (p < e && *p == '.') {
    n.frac_begin = ++p;
    p = digits_end(p, e);
    n.frac_end = p;
    if (p == n.frac_begin) return nullptr;
  }
  n.exp = p < e && (*p | 0x20) == 'e';
  if (n.exp) {
    ++p;
    if (p < e && (*p == '+' || *p == '-')) ++p;
    if (!(p < e && is_digit(*p))) return nullptr;
    while (p < e && is_digit(*p)) ++p;
  }
  return p == e || is_delim(*p) ? p : nullptr;
}

// A bare number as a double, correctly rounded like simdjson's.
//
// Clinger's fast path first: a decimal without exponent whose digits
// (trailing fraction zeros dropped) fit in 53 bits is m / 10^k with both
// operands exact doubles, so one IEEE division rounds it correctly -- the
// same double simdjson and from_chars produce. That covers the timestamps
// ("1727387307981693.000"), durations and counts of a trace; from_chars
// (correctly rounded as well) takes the rest.
inline P double_value(P p, P e, double& out) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
                                      1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19};
  static constexpr uint64_t kPow10u[] = {1ull,
                                         10ull,
                                         100ull,
                                         1000ull,
                                         10000ull,
                                         100000ull,
                                         1000000ull,
                                         10000000ull,
                                         100000000ull,
                                         1000000000ull,
                                         10000000000ull,
                                         100000000000ull,
                                         1000000000000ull,
                                         10000000000000ull,
                                         100000000000000ull,
                                         1000000000000000ull,
                                         10000000000000000ull,
                                         100000000000000000ull,
                                         1000000000000000000ull,
                                         10000000000000000000ull};
  NumberParts n;
  P q = number(p, e, n);
  if (!q) return nullptr;
  if (!n.exp) {
    P fe = n.frac_end;
    while (fe > n.frac_begin && fe[-1] == '0') --fe;
    size_t il = static_cast<size_t>(n.int_end - n.int_begin), fl = static_cast<size_t>(fe - n.frac_begin);
    if (il + fl <= 19) {
      uint64_t m = parse_digits(n.int_begin, il) * kPow10u[fl] + parse_digits(n.frac_begin, fl);
      if (m <= (uint64_t{1} << 53)) {
        double v = static_cast<double>(m) / kPow10[fl];
        out = n.neg ? -v : v;
        return q;
      }
    }
  }
  auto r = std::from_chars(p, q, out);
  return r.ec == std::errc() && r.ptr == q ? q : nullptr;
}

// A bare number of microseconds as exact nanoseconds (trace_time.hpp). The
// writer's layout -- up to 16 integer digits, up to 3 decimals, no exponent --
// is two SWAR digit runs; any other number goes through us_text_to_ns, which
// the simdjson path uses for every number, so the two agree by construction.
inline P time_value(P p, P e, int64_t& ns) {
  static constexpr uint64_t kFracScale[] = {1000, 100, 10, 1};
  NumberParts n;
  P q = number(p, e, n);
  if (!q) return nullptr;
  size_t il = static_cast<size_t>(n.int_end - n.int_begin), fl = static_cast<size_t>(n.frac_end - n.frac_begin);
  if (!n.exp && il <= 16 && fl <= 3) {
    // At most 16 + 3 digits: exact in uint64; int64 holds it unless the
    // integer part is at least 9223372036854776 us.
    uint64_t v = parse_digits(n.int_begin, il) * 1000 + parse_digits(n.frac_begin, fl) * kFracScale[fl];
    if (v <= static_cast<uint64_t>(INT64_MAX)) {
      ns = n.neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
      return q;
    }
  }
  return us_text_to_ns(std::string_view(p, static_cast<size_t>(q - p)), ns) ? q : nullptr;
}

inline P literal(P p, P e, const char* word, size_t n) {
  if (static_cast<size_t>(e - p) < n || std::memcmp(p, word, n) != 0) return nullptr;
  P after = p + n;
  return after == e || is_delim(*after) ? after : nullptr;
}

// ':' after a key, and the whitespace around it.
inline P colon(P p, P e) {
  if (!(p < e && *p == ':')) {
    p = skip_ws(p, e);
    if (!(p < e && *p == ':')) return nullptr;
  }
  return ws_maybe(p + 1, e);
}

// After a member's value: the next member's start (more = true), or past the
// closing `close` (more = false); nullptr when neither follows.
inline P next_member(P p, P e, char close, bool& more) {
  if (!(p < e && *p == ',')) {
    p = skip_ws(p, e);
    if (!(p < e && *p == ',')) {
      more = false;
      return p < e && *p == close ? p + 1 : nullptr;
    }
  }
  more = true;
  return ws_maybe(p + 1, e);
}

P skip_value(P p, P e, int depth);

// At '{' or '[': the whole container, validated.
P skip_container(P p, P e, int depth, char close) {
  p = ws_maybe(p + 1, e);
  if (p < e && *p == close) return p + 1;
  for (bool more = true; more;) {
    if (close == '}') {
      if (!(p < e && *p == '"')) return nullptr;
      if (!(p = any_string(p + 1, e)) || !(p = colon(p, e))) return nullptr;
    }
    if (!(p = skip_value(p, e, depth)) || !(p = next_member(p, e, close, more))) return nullptr;
  }
  return p;
}

P skip_value(P p, P e, int depth) {
  if (p >= e) return nullptr;
  switch (*p) {
    case '"':
      return any_string(p + 1, e);
    case '{':
      return depth < kMaxDepth ? skip_container(p, e, depth + 1, '}') : nullptr;
    case '[':
      return depth < kMaxDepth ? skip_container(p, e, depth + 1, ']') : nullptr;
    case 't':
      return literal(p, e, "true", 4);
    case 'f':
      return literal(p, e, "false", 5);
    case 'n':
      return literal(p, e, "null", 4);
    default: {
      // A skipped number with a 3-digit exponent or more than 18 integer
      // digits may be out of simdjson's range (64e768, a 20-digit integer),
      // which its DOM parser -- the one validity rule, as merge applies it --
      // rejects: leave such lines to simdjson.
      NumberParts n;
      P q = number(p, e, n);
      if (q == nullptr || n.int_end - n.int_begin > 18) return nullptr;
      if (n.exp) {
        P x = n.frac_end + 1;  // after the 'e'
        if (*x == '+' || *x == '-') ++x;
        if (q - x > 2) return nullptr;
      }
      return q;
    }
  }
}

// What EventDecoder's read_text accepts: a string, or a number's or a
// boolean's literal text. Strings with escapes and other types go to simdjson.
inline P text_value(P p, P e, std::string_view& out) {
  if (p >= e) return nullptr;
  P q;
  switch (*p) {
    case '"':
      return plain_string(p + 1, e, out);
    case 't':
      q = literal(p, e, "true", 4);
      break;
    case 'f':
      q = literal(p, e, "false", 5);
      break;
    default: {
      NumberParts n;
      q = number(p, e, n);
    }
  }
  if (q) out = std::string_view(p, static_cast<size_t>(q - p));
  return q;
}

// A Text arg; args.module "" is the compiled model's own path (kRootModulePath).
template <Field F>
inline P text_arg(P p, P e, std::string_view& out) {
  P q = text_value(p, e, out);
  if constexpr (F == Field::module) {
    if (q && out.empty()) out = format::kRootModulePath;
  }
  return q;
}

// pid/tid: a plain integer (kept as written) or a string, as read_id does.
inline P id_value(P p, P e, int64_t& num, std::string_view& text) {
  if (p < e && *p == '"') {
    P q = plain_string(p + 1, e, text);
    if (!q) return nullptr;
    int64_t n = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), n);
    num = (r.ec == std::errc() && r.ptr == text.data() + text.size()) ? n : 0;
    return q;
  }
  NumberParts n;
  P q = number(p, e, n);
  if (!q || !n.integral()) return nullptr;
  // Up to 15 digits the double simdjson goes through holds the value exactly.
  size_t digits = static_cast<size_t>(n.int_end - n.int_begin);
  if (digits > 15) return nullptr;
  int64_t v = static_cast<int64_t>(parse_digits(n.int_begin, digits));
  num = n.neg ? -v : v;
  text = std::string_view(p, static_cast<size_t>(q - p));
  return q;
}

// DFTracer 2.x's numeric "ph" as its letter (trace_phase.hpp); an unknown
// value leaves the line to the simdjson decoder, which counts it.
inline P numeric_phase(P p, P e, std::string_view& ph) {
  NumberParts n;
  P q = number(p, e, n);
  if (!q || !n.integral() || n.neg || n.int_end - n.int_begin > 2) return nullptr;
  ph = phase_letter(parse_digits(n.int_begin, static_cast<size_t>(n.int_end - n.int_begin)));
  return ph.empty() ? nullptr : q;
}

// At '{': an object's members, each value read by `member(key, p)`.
template <typename Member>
inline P object(P p, P e, Member&& member) {
  p = ws_maybe(p + 1, e);
  if (p < e && *p == '}') return p + 1;
  for (bool more = true; more;) {
    std::string_view key;
    if (!(p < e && *p == '"')) return nullptr;
    if (!(p = plain_string(p + 1, e, key)) || !(p = colon(p, e))) return nullptr;
    if (!(p = member(key, p)) || !(p = next_member(p, e, '}', more))) return nullptr;
  }
  return p;
}

// Compares a key with a literal of the length already switched on, as one
// 8-byte load: the key lies inside the line, which padding follows, so reading
// up to 8 bytes from its start is safe; the bytes past the key are masked off.
template <size_t N>
inline bool is(std::string_view k, const char (&lit)[N]) {
  if constexpr (N - 1 > 8) {
    return std::memcmp(k.data(), lit, N - 1) == 0;  // a long key (the memory args): the length matched already
  } else {
  uint64_t want = 0;
  for (size_t i = 0; i < N - 1; ++i) want |= static_cast<uint64_t>(static_cast<unsigned char>(lit[i])) << (8 * i);
  uint64_t got;
  std::memcpy(&got, k.data(), 8);
  constexpr uint64_t mask = N - 1 == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * (N - 1))) - 1;
  return (got & mask) == want;
  }
}

// Sets `flag` to whether the read worked and passes its result on.
inline P noted(P q, bool& flag) {
  flag = q != nullptr;
  return q;
}

// Json kind: a plain string's content, or any other value's JSON text.
inline P json_value(P p, P e, std::string_view& out) {
  if (p < e && *p == '"') return plain_string(p + 1, e, out);
  P q = skip_value(p, e, 2);
  if (q) out = std::string_view(p, static_cast<size_t>(q - p));
  return q;
}

// What a member's value is read as: the reader its key selects. The general
// walk finds it from the key; a line shape (below) replays the sequence
// learned from an earlier line.
enum Act : uint8_t {
  kName,
  kCat,
  kPh,
  kPid,
  kTid,
  kTs,
  kDur,
  kSkipTop,  // any other top-level key
  kSkipArg,  // any other args key
#define DFT_X(member, key, kind, column) kArg_##member,
  DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  kCapture0,                              // + i: capture->keys[i]
  kArgsObject = kCapture0 + kMaxExtraArgs,  // "args": not a leaf, the walk goes into it
  kEnd,
};

// Where the walk is: the event and the presence flags of the status.
struct LineState {
  Event& ev;
  bool have_name = false, have_ph = false;
};

// Reads one member's value the way its key says. Inlined into each walk: a
// call per value measured ~25 instructions of register saves and restores.
[[gnu::always_inline]] inline P read_value(Act a, P p, P e, LineState& s) {
  Event& ev = s.ev;
  switch (a) {
    case kName:
      return noted(string_value(p, e, ev.name), s.have_name);
    case kCat:
      return string_value(p, e, ev.cat);
    case kPh:
      return noted(p < e && is_digit(*p) ? numeric_phase(p, e, ev.ph) : string_value(p, e, ev.ph), s.have_ph);
    case kPid:
      return id_value(p, e, ev.pid, ev.pid_text);
    case kTid:
      return id_value(p, e, ev.tid, ev.tid_text);
    case kTs:
      return noted(time_value(p, e, ev.ts_ns), ev.has_ts);
    case kDur:
      return noted(time_value(p, e, ev.dur_ns), ev.has_dur);
    case kSkipTop:
      return skip_value(p, e, 1);
    case kSkipArg:
      return skip_value(p, e, 2);
#define DFT_ARG_READ_Text(m) text_arg<Field::m>(p, e, ev.m)
#define DFT_ARG_READ_Json(m) json_value(p, e, ev.m)
#define DFT_ARG_READ_Number(m) noted(double_value(p, e, ev.m), ev.has_##m)
#define DFT_X(member, key, kind, column) \
  case kArg_##member:                    \
    return DFT_ARG_READ_##kind(member);
      DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
#undef DFT_ARG_READ_Text
#undef DFT_ARG_READ_Json
#undef DFT_ARG_READ_Number
    default:
      if (a >= kCapture0 && a < kCapture0 + kMaxExtraArgs) return json_value(p, e, ev.extra_args[a - kCapture0]);
      return nullptr;
  }
}

// The top-level key's reader (kArgsObject for "args").
inline Act top_action(std::string_view k) {
  switch (k.size()) {
    case 2:
      if (is(k, "ph")) return kPh;
      if (is(k, "ts")) return kTs;
      break;
    case 3:
      if (is(k, "cat")) return kCat;
      if (is(k, "dur")) return kDur;
      if (is(k, "pid")) return kPid;
      if (is(k, "tid")) return kTid;
      break;
    case 4:
      if (is(k, "name")) return kName;
      if (is(k, "args")) return kArgsObject;
      break;
    default:
      break;
  }
  return kSkipTop;
}

// The schema's args keys of length N (a compile-time filter of the table:
// each `case` of the switch below compares only the keys of its length);
// kSkipArg when none is k.
template <size_t N>
inline Act known_arg(std::string_view k) {
#define DFT_X(member, key, kind, column)  \
  if constexpr (sizeof(key) - 1 == N) {   \
    if (is(k, key)) return kArg_##member; \
  }
  DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
  return kSkipArg;
}

inline Act arg_action(std::string_view k, const ArgCapture* capture) {
  Act a = kSkipArg;
  switch (k.size()) {
    case 1: a = known_arg<1>(k); break;
    case 2: a = known_arg<2>(k); break;
    case 3: a = known_arg<3>(k); break;
    case 4: a = known_arg<4>(k); break;
    case 5: a = known_arg<5>(k); break;
    case 6: a = known_arg<6>(k); break;
    case 7: a = known_arg<7>(k); break;
    case 8: a = known_arg<8>(k); break;
    case 10: a = known_arg<10>(k); break;  // free_bytes
    case 11: a = known_arg<11>(k); break;  // alloc_bytes
    default: break;
  }
  if (a != kSkipArg) return a;
  // Keys asked for by a group key (`--by args.<key>`); none in the usual case.
  if (capture) {
    for (size_t i = 0; i < capture->size; ++i)
      if (k == capture->keys[i]) return static_cast<Act>(kCapture0 + i);
  }
  return kSkipArg;
}

// The general walk notes each value it reads (where it starts and ends, and
// its reader) when asked to: that is how a line shape is learned.
struct NoRecord {
  void value(P, Act, P) {}
};

constexpr size_t kMaxShapeValues = 64;  // values of a line a shape holds at most

struct Recorder {
  P begin[kMaxShapeValues], end[kMaxShapeValues];
  Act act[kMaxShapeValues];
  size_t n = 0;
  bool overflow = false;
  void value(P b, Act a, P q) {
    if (n == kMaxShapeValues) {
      overflow = true;
      return;
    }
    begin[n] = b;
    act[n] = a;
    end[n++] = q;
  }
};

template <typename Rec>
P decode_args(P p, P e, LineState& s, const ArgCapture* capture, Rec& rec) {
  return object(p, e, [&s, e, capture, &rec](std::string_view k, P p) -> P {
    Act a = arg_action(k, capture);
    P q = read_value(a, p, e, s);
    rec.value(p, a, q);
    return q;
  });
}

// The general walk: any member order, any whitespace.
template <typename Rec>
P decode_object(P p, P e, LineState& s, const ArgCapture* capture, Rec& rec) {
  return object(p, e, [&s, e, capture, &rec](std::string_view k, P p) -> P {
    Act a = top_action(k);
    if (a == kArgsObject) return p < e && *p == '{' ? decode_args(p, e, s, capture, rec) : nullptr;
    P q = read_value(a, p, e, s);
    rec.value(p, a, q);
    return q;
  });
}

inline void finish(LineState& s, DecodeStatus& status) {
  if (!s.have_name || !s.have_ph || (s.ev.has_dur && s.ev.dur_ns < 0)) status = DecodeStatus::BadField;
  else status = DecodeStatus::Ok;
}

// A line shape: the bytes between the values of a line the general walk took
// (`{"id":`, `,"name":`, ..., `,"args":{"hhash":`, ..., `}}`) and the reader
// of each value. A writer puts the same keys in the same order on most lines,
// so the next line is checked against that text and its values read directly:
// no key scan, key dispatch, ':' or ',' checks. A line whose bytes between
// the values are the same runs through the general walk exactly alike (the
// same readers at the same places), so the result is the same by construction;
// a line that differs anywhere goes to the general walk.
//
// Each step holds up to 16 bytes of text (a longer text takes several steps,
// the first ones with kMore) and the reader after it: one 16-byte compare.
constexpr uint8_t kMore = kEnd + 1;  // no value after this step's text: more text follows

struct alignas(16) ShapeStep {
  char text[16];  // the step's text, then zeros
  uint16_t len;   // its length (at most 16)
  uint16_t need;  // the compare bits that must be set: (1 << len) - 1
  uint8_t act;    // the value's reader; kMore; kEnd after the last text
};

constexpr size_t kMaxShapeSteps = 128;

struct Shape {
  size_t steps = 0;
  ShapeStep step[kMaxShapeSteps];
  uint32_t used = 0;  // when last matched (least recently used goes first)
};

// Walks a line by a shape: true when every text matched, every reader took
// its value and nothing but whitespace follows the object. Anything else
// goes to the general walk: a reader that refuses what follows a matching
// text may be looking at whitespace the general walk skips (`"id": 0`
// against the shape of `"id":0`).
inline bool run_shape(const Shape& sh, P p, P e, LineState& s) {
  for (const ShapeStep* st = sh.step;; ++st) {
    if (static_cast<size_t>(e - p) < st->len) return false;
#if defined(__SSE2__)
    // Reads up to 15 bytes past the line end: the padding covers them.
    const unsigned eq = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
                                         _mm_load_si128(reinterpret_cast<const __m128i*>(st->text)))));
    if ((eq & st->need) != st->need) return false;
#else
    if (std::memcmp(p, st->text, st->len) != 0) return false;
#endif
    p += st->len;
    if (st->act == kMore) continue;
    if (st->act == kEnd) return skip_ws(p, e) == e;
    if (!(p = read_value(static_cast<Act>(st->act), p, e, s))) return false;
  }
}

// The shape of a line the general walk took, from the values it noted
// (false when the line has too many values or too much text for one).
bool learn_shape(Shape& sh, P line, P object_end, const Recorder& rec) {
  if (rec.overflow) return false;
  P prev = line;
  sh.steps = 0;
  for (size_t i = 0; i <= rec.n; ++i) {
    P b = i < rec.n ? rec.begin[i] : object_end;
    do {
      if (sh.steps == kMaxShapeSteps) return false;
      ShapeStep& st = sh.step[sh.steps++];
      size_t len = std::min<size_t>(static_cast<size_t>(b - prev), 16);
      std::memset(st.text, 0, sizeof st.text);
      std::memcpy(st.text, prev, len);
      st.len = static_cast<uint16_t>(len);
      st.need = static_cast<uint16_t>((1u << len) - 1);
      prev += len;
      st.act = prev < b ? kMore : i < rec.n ? static_cast<uint8_t>(rec.act[i]) : static_cast<uint8_t>(kEnd);
    } while (prev < b);
    if (i < rec.n) prev = rec.end[i];
  }
  return true;
}

}  // namespace

struct LineShapes::Impl {
  static constexpr size_t kShapes = 4;
  // A trace whose lines seldom repeat a layout would pay for shape attempts
  // that fail (each up to a whole line) on top of the general walk: when more
  // than a quarter of a window's lines match no shape, the next kPause lines
  // take the general walk alone.
  static constexpr uint32_t kWindow = 64, kMaxMisses = kWindow / 4, kPause = 4096;
  const ArgCapture* capture = nullptr;
  Shape shape[kShapes];
  size_t count = 0, last = 0;
  uint32_t clock = 0;
  bool back_off = true;
  uint32_t seen = 0, misses = 0, paused = 0;  // lines and misses in this window; lines left in a pause
  uint64_t matched = 0, general = 0;
};

LineShapes::LineShapes(bool back_off) : impl_(std::make_unique<Impl>()) { impl_->back_off = back_off; }
LineShapes::~LineShapes() = default;
LineShapes::LineShapes(LineShapes&&) noexcept = default;
LineShapes& LineShapes::operator=(LineShapes&&) noexcept = default;
void LineShapes::clear() {
  impl_->count = 0;
  impl_->last = 0;
}
uint64_t LineShapes::matched() const { return impl_->matched; }
uint64_t LineShapes::paused_lines() const { return impl_->general; }

bool fast_decode_line(std::string_view line, Event& ev, DecodeStatus& status, const ArgCapture* capture) {
  ev = Event{};
  P p = line.data(), e = p + line.size();
  if (!(p < e && *p == '{')) return false;
  LineState s{ev};
  NoRecord none;
  p = decode_object(p, e, s, capture, none);
  if (!p || skip_ws(p, e) != e) return false;
  finish(s, status);
  return true;
}

bool fast_decode_line(std::string_view line, Event& ev, DecodeStatus& status, const ArgCapture* capture,
                      LineShapes& shapes) {
  LineShapes::Impl& m = *shapes.impl_;
  if (m.capture != capture) {
    m.capture = capture;
    m.count = m.last = 0;
  }
  P b = line.data(), e = b + line.size();
  if (!(b < e && *b == '{')) {
    ev = Event{};
    return false;
  }
  if (m.paused) {
    --m.paused;
    ++m.general;
    return fast_decode_line(line, ev, status, capture);
  }
  if (m.back_off && ++m.seen == LineShapes::Impl::kWindow) {
    if (m.misses > LineShapes::Impl::kMaxMisses) m.paused = LineShapes::Impl::kPause;
    m.seen = m.misses = 0;
  }
  // The shape that matched last first, then the others.
  for (size_t k = 0; k < m.count; ++k) {
    size_t i = k == 0 ? m.last : (k <= m.last ? k - 1 : k);
    ev = Event{};
    LineState s{ev};
    if (!run_shape(m.shape[i], b, e, s)) continue;
    m.last = i;
    m.shape[i].used = ++m.clock;
    ++m.matched;
    finish(s, status);
    return true;
  }
  ++m.misses;
  ev = Event{};
  LineState s{ev};
  Recorder rec;
  P p = decode_object(b, e, s, capture, rec);
  if (!p || skip_ws(p, e) != e) return false;
  finish(s, status);
  // Keep this line's shape in place of the least recently matched one.
  size_t slot = m.count;
  if (slot == LineShapes::Impl::kShapes) {
    slot = 0;
    for (size_t i = 1; i < m.count; ++i)
      if (m.shape[i].used < m.shape[slot].used) slot = i;
  }
  if (learn_shape(m.shape[slot], b, p, rec)) {
    m.shape[slot].used = ++m.clock;
    m.last = slot;
    if (slot == m.count) ++m.count;
  }
  return true;
}

}  // namespace dftracer::analyze
