#include "json_escape.h"

#include <cstdint>
#include <cstring>

namespace dftracer {
namespace {

// Length of a valid UTF-8 sequence starting at s (at most n bytes), or 0.
size_t utf8_seq_len(const unsigned char* s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

const char kHex[] = "0123456789abcdef";

}  // namespace

size_t json_escape_to(const char* src, size_t n, char* dst) {
  const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
  char* o = dst;
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *o++ = static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      *o++ = '\\';
      switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
          *o++ = 'u'; *o++ = '0'; *o++ = '0';
          *o++ = kHex[c >> 4]; *o++ = kHex[c & 15];
      }
      ++i;
      continue;
    }
    size_t len = utf8_seq_len(s + i, n - i);
    if (len == 0) {  // not UTF-8: write U+FFFD and skip one byte
      *o++ = '\xEF'; *o++ = '\xBF'; *o++ = '\xBD';
      ++i;
      continue;
    }
    std::memcpy(o, s + i, len);
    o += len;
    i += len;
  }
  return static_cast<size_t>(o - dst);
}

void json_escape_append(const char* s, size_t n, std::string* out) {
  size_t old = out->size();
  out->resize(old + 6 * n);
  size_t w = json_escape_to(s, n, &(*out)[old]);
  out->resize(old + w);
}

size_t utf8_cut(const char* s, size_t n, size_t max) {
  if (n <= max) return n;
  size_t cut = max;
  // Step back over continuation bytes so the cut falls before a lead byte.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

}  // namespace dftracer
