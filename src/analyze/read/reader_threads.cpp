#include "reader_threads.hpp"

#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "trace_reader.hpp"

namespace dftracer::analyze {

unsigned checked_threads(long long requested) {
  if (requested < 1 || requested > kMaxThreads)
    throw std::invalid_argument("threads must be between 1 and " + std::to_string(kMaxThreads) + ", not " +
                                std::to_string(requested));
  return static_cast<unsigned>(requested);
}

unsigned default_threads() {
  long long n = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = std::thread::hardware_concurrency();
  return static_cast<unsigned>(std::clamp<long long>(n, 1, kMaxThreads));
}

unsigned useful_threads(const std::vector<std::string>& files, unsigned requested, const ReadOptions& options) {
  unsigned cap = std::min(std::max(requested, 1u), default_threads());
  // The reader cuts a file into at most size / min_piece_bytes pieces (at
  // least one): count pieces until there are enough for `cap` threads.
  const uint64_t piece = std::max<uint64_t>(options.min_piece_bytes, 1);
  uint64_t pieces = 0;
  for (const std::string& f : files) {
    struct stat st {};
    uint64_t size = ::stat(f.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    pieces += std::max<uint64_t>(1, size / piece);
    if (pieces >= cap) return cap;
  }
  return static_cast<unsigned>(std::max<uint64_t>(1, pieces));
}

}  // namespace dftracer::analyze
