// JSON string escaping for everything that reaches the trace file. Names,
// categories and arg values may hold quotes, backslashes, newlines, control
// characters or bytes that are not UTF-8; none of them may break a line of
// the trace. Invalid UTF-8 becomes U+FFFD so the file stays valid JSON.
#ifndef DFTRACER_SRC_FILE_JSON_ESCAPE_H_
#define DFTRACER_SRC_FILE_JSON_ESCAPE_H_

#include <cstddef>
#include <string>

namespace dftracer {

// Appends the escaped form of s[0..n) (without surrounding quotes) to out.
void json_escape_append(const char* s, size_t n, std::string* out);

// Writes the escaped form to dst, which must hold at least 6*n bytes;
// returns the number of bytes written. For the writer's hot formatting loop.
size_t json_escape_to(const char* s, size_t n, char* dst);

// Length of the longest prefix of s[0..n) that ends on a UTF-8 boundary and
// is at most max bytes: used to cut long strings without splitting a char.
size_t utf8_cut(const char* s, size_t n, size_t max);

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_JSON_ESCAPE_H_
