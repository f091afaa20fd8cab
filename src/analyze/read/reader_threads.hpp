// How many reader threads a run gets: one rule for the command, the library
// and the Python API.
//
// A requested count is checked (1..kMaxThreads; anything else is a mistake,
// not a wish: each reader thread costs about 1 MiB of buffers up front), then
// clamped to what can be used: the CPUs this process may run on, and the
// pieces the inputs split into (a small file is one piece, so a thousand
// threads on it would only allocate).
#pragma once

#include <string>
#include <vector>

namespace dftracer::analyze {

struct ReadOptions;

// The largest --threads / threads= accepted.
constexpr long long kMaxThreads = 1024;

// `requested` when 1 <= requested <= kMaxThreads; otherwise throws
// std::invalid_argument "threads must be between 1 and 1024, not N".
unsigned checked_threads(long long requested);

// Threads to use by default: the CPUs this process may run on (its affinity
// mask, which containers and taskset narrow), at least 1, at most kMaxThreads.
unsigned default_threads();

// At most `requested`, default_threads() and the work pieces of `files`
// (each file is at least one piece, a large one options.min_piece_bytes
// each); at least 1.
unsigned useful_threads(const std::vector<std::string>& files, unsigned requested, const ReadOptions& options);

}  // namespace dftracer::analyze
