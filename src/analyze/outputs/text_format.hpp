// Number and text formatting shared by the analyzer's writers (summary, diff,
// module tree), so every output spells a time or a CSV field the same way.
#pragma once

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

namespace dftracer::analyze {

// Fixed decimals; "" for NaN (a column with no value).
inline std::string fmt_num(double v, int prec = 3) {
  if (std::isnan(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

// JSON numbers: integral values without a fraction, others with enough digits
// to read back the same double; NaN and infinities as null.
inline std::string json_num(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// "1.234 ms": microseconds in the unit a reader takes in at a glance.
inline std::string human_time(double us) {
  char buf[64];
  if (std::isnan(us)) return "";
  double a = std::fabs(us);
  if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3f s", us / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%.3f ms", us / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3f us", us);
  return buf;
}

// RFC 4180 quoting, only where the field needs it.
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

// The widest key (a name, a path) a text table shows: a longer one is cut to
// this many bytes, ending in "...", so one 100,000-character name neither
// floods its row nor pads every other row to its width. JSON and CSV keep
// every key whole.
inline constexpr size_t kMaxKeyColumnBytes = 96;

// `s` cut to kMaxKeyColumnBytes (never inside a UTF-8 character), or as it is.
inline std::string clip_key(const std::string& s) {
  if (s.size() <= kMaxKeyColumnBytes) return s;
  size_t n = kMaxKeyColumnBytes - 3;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // s[n] continues a character
  return s.substr(0, n) + "...";
}

// A text table: columns two spaces apart, the first `left` columns (the group
// keys, clipped by clip_key) left-aligned, the numbers right-aligned, no
// trailing blanks.
inline void write_aligned(std::ostream& os, const std::vector<std::vector<std::string>>& rows, size_t left) {
  auto shown = [left](const std::vector<std::string>& row, size_t i) { return i < left ? clip_key(row[i]) : row[i]; };
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], shown(row, i).size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) line += "  ";
      const std::string cell = shown(row, i);
      const std::string pad(width[i] - cell.size(), ' ');
      line += i < left ? cell + pad : pad + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << '\n';
  }
}

}  // namespace dftracer::analyze
