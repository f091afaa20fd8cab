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

// What an open learned about a path (direct_syscall.h) is kept per path and
// session: answered to every later caller, forgotten by a new session,
// never overwritten within one.
TEST(FileHashes, KindIsKeptPerPathAndSession) {
  auto h = std::make_unique<FileHashes>();
  EXPECT_EQ(h->see(42, 1), FileHashes::kFirst);  // first sight, kind not known
  EXPECT_EQ(h->see(42, 1), 0u);
  h->set_kind(42, 1, 1);
  EXPECT_EQ(h->see(42, 1), 1u);
  h->set_kind(42, 1, 2);  // a second answer in the same session does not replace the first
  EXPECT_EQ(h->see(42, 1), 1u);
  h->set_kind(7, 1, 2);  // a path the set does not hold: nothing
  EXPECT_EQ(h->see(7, 1), FileHashes::kFirst);
  EXPECT_EQ(h->see(7, 1), 0u);
  h->set_kind(42, 2, 2);  // a session the slot is not in yet: nothing
  EXPECT_EQ(h->see(42, 2), FileHashes::kFirst);  // the new session names it again, kind unknown
  EXPECT_EQ(h->see(42, 2), 0u);
  h->set_kind(42, 2, 2);
  EXPECT_EQ(h->see(42, 2), 2u);
  // A colliding path (same home slot) keeps its own kind.
  const uint64_t other = 42 + (uint64_t{1} << 40);
  EXPECT_EQ(h->see(other, 2), FileHashes::kFirst);
  h->set_kind(other, 2, 1);
  EXPECT_EQ(h->see(other, 2), 1u);
  EXPECT_EQ(h->see(42, 2), 2u);
  EXPECT_FALSE(h->first_in_session(other, 2));
}

// A full set cannot keep an answer: every call is "first" and says so.
TEST(FileHashes, FullSetAnswersFirstAndNoRoom) {
  auto h = std::make_unique<FileHashes>();
  uint64_t p = 1;
  while ((h->see(p * 0x9E3779B97F4A7C15ull, 3) & FileHashes::kKindMask) != FileHashes::kNoRoom) {
    ++p;
    ASSERT_LT(p, uint64_t{1} << 20) << "the set never filled";
  }
  const uint64_t late = (p + 1) * 0x9E3779B97F4A7C15ull;
  h->set_kind(late, 3, 1);
  EXPECT_EQ(h->see(late, 3), FileHashes::kFirst | FileHashes::kNoRoom);
  EXPECT_EQ(h->see(late, 3), FileHashes::kFirst | FileHashes::kNoRoom);
  EXPECT_EQ(h->see(1 * 0x9E3779B97F4A7C15ull, 3), 0u);  // the paths it holds keep answering
}
