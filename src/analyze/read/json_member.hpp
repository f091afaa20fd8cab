// Finding a member's value in raw JSON text without parsing it: what the
// prefilters (a file's time unit, a line's ts, a merge output's base) use.
// JSON allows any whitespace around a member's colon (Python's json writes
// `"ts": 1`, a pretty-printer `"ts" : 1`): these accept it, so a trace gives
// the same answers whichever writer spaced it.
#pragma once

#include <cstddef>
#include <string_view>

namespace dftracer::analyze {

inline bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the value of the first member `quoted_key` (its text with the quotes:
// "\"ts\"") at or after `from` starts: after the key, whitespace, ':' and
// whitespace. npos when there is none. The key's text found as a string value
// (no colon after it) is passed over; a key of a nested object counts, as for
// the compact searches these replace.
inline size_t member_value_at(std::string_view text, std::string_view quoted_key, size_t from = 0) {
  for (size_t at = text.find(quoted_key, from); at != std::string_view::npos;
       at = text.find(quoted_key, at + 1)) {
    size_t i = at + quoted_key.size();
    while (i < text.size() && json_space(text[i])) ++i;
    if (i >= text.size() || text[i] != ':') continue;
    ++i;
    while (i < text.size() && json_space(text[i])) ++i;
    return i;
  }
  return std::string_view::npos;
}

// Where the value of `quoted_key` as a member of the line's top-level object
// starts: a key of a nested object (args.ts, written before the event's own by
// a writer that sorts keys), text inside a string and a later duplicate are
// passed over; npos when the object has no such member. The common line (no
// brace and no backslash before the first match) takes no walk.
inline size_t top_member_value_at(std::string_view text, std::string_view quoted_key) {
  const size_t first = member_value_at(text, quoted_key);
  if (first == std::string_view::npos) return first;
  const size_t open = text.find('{');
  if (open != std::string_view::npos && open < first && text.find_first_of("{[\\", open + 1) > first) return first;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      if (depth == 1 && text.compare(i, quoted_key.size(), quoted_key) == 0) {
        size_t j = i + quoted_key.size();
        while (j < text.size() && json_space(text[j])) ++j;
        if (j < text.size() && text[j] == ':') {
          ++j;
          while (j < text.size() && json_space(text[j])) ++j;
          return j;
        }
      }
      for (++i; i < text.size() && text[i] != '"'; ++i)  // past the string
        if (text[i] == '\\') ++i;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) break;
    }
  }
  return std::string_view::npos;
}

// Whether the string `quoted_value` at `at` in `text` is the value of a member
// `quoted_key` (the key, whitespace, ':', whitespace before it).
inline bool is_value_of(std::string_view text, size_t at, std::string_view quoted_key) {
  size_t i = at;
  while (i > 0 && json_space(text[i - 1])) --i;
  if (i == 0 || text[i - 1] != ':') return false;
  --i;
  while (i > 0 && json_space(text[i - 1])) --i;
  return i >= quoted_key.size() && text.substr(i - quoted_key.size(), quoted_key.size()) == quoted_key;
}

}  // namespace dftracer::analyze
