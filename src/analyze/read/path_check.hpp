// Paths handed in from Python (or any caller holding a std::string) may
// carry a NUL byte that no system call sees past: "a.pfw\0junk" would be
// read, or written, as "a.pfw". Refused as Python's open() refuses it.
#pragma once

#include <stdexcept>
#include <string>

namespace dftracer::analyze {

// Throws std::invalid_argument (Python: ValueError) when `path` holds a NUL
// byte, naming it with the NUL shown as \0.
inline void refuse_nul_in_path(const std::string& path) {
  if (path.find('\0') == std::string::npos) return;
  std::string shown;
  for (char c : path) {
    if (c == '\0') shown += "\\0";
    else shown += c;
  }
  throw std::invalid_argument("embedded null byte in path: " + shown);
}

}  // namespace dftracer::analyze
