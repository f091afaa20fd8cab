#include "path_normalize.h"

#include "path_scan.h"

#include <cstdint>
#include <cstring>

namespace dftracer::io {

namespace {

// A component of `n` bytes at `c` that is "." or "..".
bool is_dot(const char* c, size_t n) { return n == 1 && c[0] == '.'; }
bool is_dotdot(const char* c, size_t n) { return n == 2 && c[0] == '.' && c[1] == '.'; }

using scan::load8;

// `here` has a '/' whose next byte (the same byte of `next`, loaded one byte
// later) is '/' or '.'.
inline bool pair_at(uint64_t here, uint64_t next) {
  return (scan::bytes_equal(here, '/') & scan::bytes_equal(next | scan::kOnes, '/')) != 0;
}

// Whether some '/' is followed by '/' or '.': every path that needs
// normalising and does not start with '.' or end with '/' has one. Eight
// bytes at a time (the last word overlapping the one before); never reads
// past path[len - 1].
bool has_slash_then_slash_or_dot(const char* path, size_t len) {
  if (len < 9) {
    for (size_t i = 0; i + 1 < len; ++i)
      if (path[i] == '/' && (path[i + 1] | 1) == '/') return true;
    return false;
  }
  // Words at 0, 8, 16, ... while a whole one (and its next byte) fits, then
  // the word ending at the last byte.
  for (size_t i = 0; i + 9 <= len; i += 8)
    if (pair_at(load8(path + i), load8(path + i + 1))) return true;
  return pair_at(load8(path + len - 9), load8(path + len - 8));
}

}  // namespace

bool path_needs_normalizing(const char* path, size_t len) {
  if (len == 0) return false;
  if (len > 1 && path[len - 1] == '/') return true;
  // Fast answer for the common path: the byte loop below was 204 of the ~490
  // instructions of an untraced open of a 29-byte path.
  if (path[0] != '.' && !has_slash_then_slash_or_dot(path, len)) return false;
  // Each component's first bytes: "" (a repeated '/'), "." or "..".
  for (size_t i = 0; i < len;) {
    size_t end = i;
    while (end < len && path[end] != '/') ++end;
    const size_t n = end - i;
    if ((n == 0 && i > 0) || is_dot(path + i, n) || is_dotdot(path + i, n)) return true;
    i = end + 1;
  }
  return false;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
size_t scan::path_length_and_oddness(const char* path, bool* odd) {
  const size_t len = std::strlen(path);
  *odd = has_slash_then_slash_or_dot(path, len);
  return len;
}
#endif

size_t normalize_path(const char* path, size_t len, char* out, size_t cap) {
  if (cap == 0) return 0;
  const bool absolute = len > 0 && path[0] == '/';
  size_t o = 0;        // bytes written
  size_t floor = 0;    // a ".." never removes what lies before this
  if (absolute) {
    out[o++] = '/';
    floor = 1;
  }
  for (size_t i = absolute ? 1 : 0; i <= len;) {
    size_t end = i;
    while (end < len && path[end] != '/') ++end;
    const char* c = path + i;
    const size_t n = end - i;
    i = end + 1;
    if (n == 0 || is_dot(c, n)) continue;
    if (is_dotdot(c, n)) {
      if (o > floor) {  // drop the last component (and its '/')
        while (o > floor && out[o - 1] != '/') --o;
        if (o > floor) --o;
        continue;
      }
      if (absolute) continue;  // "/.." is "/"
      // A relative ".." with nothing to remove stays, and can no longer be removed.
    }
    const size_t sep = (o > 0 && out[o - 1] != '/') ? 1 : 0;
    if (o + sep + n + 1 > cap) return 0;
    if (sep) out[o++] = '/';
    for (size_t k = 0; k < n; ++k) out[o++] = c[k];
    if (is_dotdot(c, n)) floor = o;
  }
  if (o == 0) out[o++] = '.';
  if (o + 1 > cap) return 0;
  out[o] = '\0';
  return o;
}

}  // namespace dftracer::io
