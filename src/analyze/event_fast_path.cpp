#include "event_fast_path.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace dftracer::analyze {
namespace {

static_assert(kLinePadding >= 32, "string scanning loads 32 bytes past any position up to the line end");

constexpr int kMaxDepth = 64;  // deeper values go to simdjson (its limit is far higher)

inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }


// Clinger's fast path: a decimal without exponent whose digits (trailing
// fraction zeros dropped) fit in 53 bits and with at most 22 fraction digits is
// m / 10^k with both operands exact doubles, so one IEEE division rounds it
// correctly -- the same double simdjson and from_chars produce. Covers the
// timestamps ("1727387307981693.000"), durations and counts of a trace;
// anything else returns false for from_chars.
inline bool exact_decimal(std::string_view tok, double& out) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* p = tok.data();
  const char* e = p + tok.size();
  bool neg = *p == '-';
  p += neg;
  uint64_t m = 0;
  size_t digits = 0, frac = 0;
  bool in_frac = false;
  for (; p < e; ++p) {
    char c = *p;
    if (is_digit(c)) {
      m = m * 10 + static_cast<uint64_t>(c - '0');
      ++digits;
      frac += in_frac;
    } else if (c == '.') {
      in_frac = true;
    } else {
      return false;  // an exponent: from_chars' job
    }
  }
  if (digits > 19) return false;  // m may have wrapped
  while (frac && m % 10 == 0) {  // "1693.000" is 1693
    m /= 10;
    --frac;
  }
  if (m > (uint64_t{1} << 53) || frac > 22) return false;
  double v = static_cast<double>(m) / kPow10[frac];
  out = neg ? -v : v;
  return true;
}

// A cursor over one line. Every method returns false for "not handled here":
// invalid JSON, or valid JSON this path leaves to simdjson.
class Scanner {
 public:
  Scanner(const char* p, const char* e) : p_(p), e_(e) {}

  bool at_end() const { return p_ == e_; }
  bool peek(char c) const { return p_ < e_ && *p_ == c; }
  void skip(size_t n = 1) { p_ += n; }
  void ws() {
    while (p_ < e_ && is_ws(*p_)) ++p_;
  }
  bool expect(char c) {
    if (!peek(c)) return false;
    ++p_;
    return true;
  }

  // After an opening quote: the next quote, backslash, control or non-ASCII
  // byte (nullptr when none before the line end).
  const char* next_special() const {
    const char* p = p_;
#if defined(__AVX2__)
    // Loads may run up to 31 bytes past the line end: the padding covers them.
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\'), space = _mm256_set1_epi8(0x20);
    while (p < e_) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      // Signed compare: bytes >= 0x80 are negative, so this catches them with the controls.
      __m256i special = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, bslash)),
                                        _mm256_cmpgt_epi8(space, v));
      uint32_t m = static_cast<uint32_t>(_mm256_movemask_epi8(special));
      if (m) {
        const char* hit = p + __builtin_ctz(m);
        return hit < e_ ? hit : nullptr;
      }
      p += 32;
    }
    return nullptr;
#else
    for (; p < e_; ++p) {
      unsigned char c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
    }
    return nullptr;
#endif
  }

  // After an opening quote: a string with nothing to unescape, as a view.
  bool plain_string(std::string_view& out) {
    const char* hit = next_special();
    if (!hit || *hit != '"') return false;
    out = std::string_view(p_, static_cast<size_t>(hit - p_));
    p_ = hit + 1;
    return true;
  }

  // After an opening quote: any valid ASCII string (escapes checked, not decoded).
  bool any_string() {
    for (;;) {
      const char* hit = next_special();
      if (!hit) return false;
      if (*hit == '"') {
        p_ = hit + 1;
        return true;
      }
      if (*hit != '\\' || hit + 1 >= e_) return false;
      char x = hit[1];
      if (x == 'u') {
        if (e_ - hit < 6) return false;
        for (int i = 2; i < 6; ++i) {
          char h = hit[i];
          if (!(is_digit(h) || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return false;
        }
        p_ = hit + 6;
      } else if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't') {
        p_ = hit + 2;
      } else {
        return false;
      }
    }
  }

  // A number by the JSON grammar, ending at a delimiter.
  bool number(std::string_view& tok, bool& integral) {
    const char* s = p_;
    if (p_ < e_ && *p_ == '-') ++p_;
    if (p_ >= e_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < e_ && is_digit(*p_)) ++p_;
    } else {
      return false;
    }
    integral = true;
    if (p_ < e_ && *p_ == '.') {
      ++p_;
      integral = false;
      if (p_ >= e_ || !is_digit(*p_)) return false;
      while (p_ < e_ && is_digit(*p_)) ++p_;
    }
    if (p_ < e_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integral = false;
      if (p_ < e_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= e_ || !is_digit(*p_)) return false;
      while (p_ < e_ && is_digit(*p_)) ++p_;
    }
    if (p_ < e_ && !(is_ws(*p_) || *p_ == ',' || *p_ == '}' || *p_ == ']')) return false;
    tok = std::string_view(s, static_cast<size_t>(p_ - s));
    return true;
  }

  // A bare number as a double, correctly rounded like simdjson's.
  bool double_value(double& out) {
    std::string_view tok;
    bool integral;
    if (!number(tok, integral)) return false;
    if (exact_decimal(tok, out)) return true;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), out);
    return r.ec == std::errc() && r.ptr == tok.data() + tok.size();
  }

  bool literal(const char* word, size_t n, std::string_view* tok = nullptr) {
    if (static_cast<size_t>(e_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    const char* after = p_ + n;
    if (after < e_ && !(is_ws(*after) || *after == ',' || *after == '}' || *after == ']')) return false;
    if (tok) *tok = std::string_view(p_, n);
    p_ = after;
    return true;
  }

  bool skip_value(int depth) {
    if (p_ >= e_) return false;
    switch (*p_) {
      case '"':
        ++p_;
        return any_string();
      case '{':
        return depth < kMaxDepth && skip_container(depth + 1, '}');
      case '[':
        return depth < kMaxDepth && skip_container(depth + 1, ']');
      case 't':
        return literal("true", 4);
      case 'f':
        return literal("false", 5);
      case 'n':
        return literal("null", 4);
      default: {
        std::string_view tok;
        bool integral;
        return number(tok, integral);
      }
    }
  }

  // What EventDecoder's read_text accepts: a string, or a number's or a
  // boolean's literal text. Strings with escapes and other types go to simdjson.
  bool text_value(std::string_view& out) {
    if (p_ >= e_) return false;
    switch (*p_) {
      case '"':
        ++p_;
        return plain_string(out);
      case 't':
        return literal("true", 4, &out);
      case 'f':
        return literal("false", 5, &out);
      default: {
        bool integral;
        return number(out, integral);
      }
    }
  }

  // pid/tid: a plain integer (kept as written) or a string, as read_id does.
  bool id_value(int64_t& num, std::string_view& text) {
    if (peek('"')) {
      ++p_;
      if (!plain_string(text)) return false;
      int64_t n = 0;
      auto r = std::from_chars(text.data(), text.data() + text.size(), n);
      num = (r.ec == std::errc() && r.ptr == text.data() + text.size()) ? n : 0;
      return true;
    }
    std::string_view tok;
    bool integral;
    if (!number(tok, integral) || !integral) return false;
    // Up to 15 digits the double simdjson goes through holds the value exactly.
    size_t digits = tok.size() - (tok[0] == '-');
    if (digits > 15) return false;
    int64_t v = 0;
    for (char c : tok.substr(tok.size() - digits)) v = v * 10 + (c - '0');
    num = tok[0] == '-' ? -v : v;
    text = tok;
    return true;
  }

  // An object's members: `member(key)` reads each value.
  template <typename Member>
  bool object(Member&& member) {
    if (!expect('{')) return false;
    ws();
    if (expect('}')) return true;
    for (;;) {
      std::string_view key;
      if (!expect('"') || !plain_string(key)) return false;
      ws();
      if (!expect(':')) return false;
      ws();
      if (!member(key)) return false;
      ws();
      if (expect(',')) {
        ws();
        continue;
      }
      return expect('}');
    }
  }

 private:
  // After '{' or '[' at p_: the whole container, validated.
  bool skip_container(int depth, char close) {
    ++p_;
    ws();
    if (expect(close)) return true;
    for (;;) {
      if (close == '}') {
        if (!expect('"') || !any_string()) return false;
        ws();
        if (!expect(':')) return false;
        ws();
      }
      if (!skip_value(depth)) return false;
      ws();
      if (expect(',')) {
        ws();
        continue;
      }
      return expect(close);
    }
  }

  const char* p_;
  const char* e_;
};

// Compares a key with a literal of the length already switched on, as one
// 8-byte load: the key lies inside the line, which padding follows, so reading
// up to 8 bytes from its start is safe; the bytes past the key are masked off.
template <size_t N>
inline bool is(std::string_view k, const char (&lit)[N]) {
  static_assert(N - 1 <= 8, "keys up to 8 bytes");
  uint64_t want = 0;
  for (size_t i = 0; i < N - 1; ++i) want |= static_cast<uint64_t>(static_cast<unsigned char>(lit[i])) << (8 * i);
  uint64_t got;
  std::memcpy(&got, k.data(), 8);
  constexpr uint64_t mask = N - 1 == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * (N - 1))) - 1;
  return (got & mask) == want;
}

bool decode_args(Scanner& s, Event& ev) {
  return s.object([&](std::string_view k) {
    switch (k.size()) {
      case 4:
        if (is(k, "name")) return s.text_value(ev.meta_name);
        break;
      case 5:
        if (is(k, "phase")) return s.text_value(ev.phase);
        if (is(k, "graph")) return s.text_value(ev.graph);
        if (is(k, "flops")) return ev.has_flops = s.double_value(ev.flops);
        if (is(k, "bytes")) return ev.has_bytes = s.double_value(ev.bytes);
        break;
      case 6:
        if (is(k, "module")) return s.text_value(ev.module);
        break;
      default:
        break;
    }
    return s.skip_value(2);
  });
}

}  // namespace

bool fast_decode_line(std::string_view line, Event& ev, DecodeStatus& status) {
  ev = Event{};
  Scanner s(line.data(), line.data() + line.size());
  bool have_name = false, have_ph = false;
  bool ok = s.object([&](std::string_view k) {
    switch (k.size()) {
      case 2:
        if (is(k, "ph")) return have_ph = s.expect('"') && s.plain_string(ev.ph);
        if (is(k, "ts")) return ev.has_ts = s.double_value(ev.ts);
        break;
      case 3:
        if (is(k, "cat")) return s.expect('"') && s.plain_string(ev.cat);
        if (is(k, "dur")) return ev.has_dur = s.double_value(ev.dur);
        if (is(k, "pid")) return s.id_value(ev.pid, ev.pid_text);
        if (is(k, "tid")) return s.id_value(ev.tid, ev.tid_text);
        break;
      case 4:
        if (is(k, "name")) return have_name = s.expect('"') && s.plain_string(ev.name);
        if (is(k, "args")) return s.peek('{') && decode_args(s, ev);
        break;
      default:
        break;
    }
    return s.skip_value(1);
  });
  if (!ok) return false;
  s.ws();
  if (!s.at_end()) return false;
  if (!have_name || !have_ph || (ev.has_dur && !(ev.dur >= 0))) status = DecodeStatus::BadField;
  else status = DecodeStatus::Ok;
  return true;
}

}  // namespace dftracer::analyze
