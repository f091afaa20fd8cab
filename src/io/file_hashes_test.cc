// FH once per path and session, from many threads at once.
#include "file_hashes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using dftracer::io::FileHashes;

TEST(FileHashes, FirstSightPerSessionOnly) {
  auto h = std::make_unique<FileHashes>();
  EXPECT_TRUE(h->first_in_session(42, 1));
  EXPECT_FALSE(h->first_in_session(42, 1));
  EXPECT_TRUE(h->first_in_session(43, 1));
  EXPECT_TRUE(h->first_in_session(42, 2));  // a new session (new file) names it again
  EXPECT_FALSE(h->first_in_session(42, 2));
  // Colliding slots (same low bits) are distinct paths.
  EXPECT_TRUE(h->first_in_session(42 + (uint64_t{1} << 40), 2));
}

TEST(FileHashes, EightThreadsOneWinnerPerPath) {
  auto h = std::make_unique<FileHashes>();
  std::atomic<int> wins{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      for (uint64_t p = 1; p <= 1000; ++p)
        if (h->first_in_session(p * 0x9E3779B97F4A7C15ull, 7)) wins.fetch_add(1);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(wins.load(), 1000);
}
