// Names of traced directories by fhash: kept once, found lock-free, and a
// full neighbourhood falls back to "unknown" rather than a wrong name.
#include "dir_names.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using dftracer::io::DirNames;

TEST(DirNames, FirstNameKeptAndFoundByHash) {
  auto d = std::make_unique<DirNames>();
  EXPECT_EQ(d->find(42), nullptr);
  d->remember(42, "/data/link");
  ASSERT_NE(d->find(42), nullptr);
  EXPECT_STREQ(d->find(42), "/data/link");
  d->remember(42, "/data/other");  // a name is never replaced (a reader may hold it)
  EXPECT_STREQ(d->find(42), "/data/link");
  d->remember(43, "relative");  // only absolute names
  EXPECT_EQ(d->find(43), nullptr);
  d->remember(0, "/x");  // 0 is "not traced"
  EXPECT_EQ(d->find(0), nullptr);
  // Same home slot, different hashes: each finds its own.
  const uint64_t other = 42 + DirNames::kSlots;
  d->remember(other, "/data/b");
  EXPECT_STREQ(d->find(other), "/data/b");
  EXPECT_STREQ(d->find(42), "/data/link");
}

TEST(DirNames, AFullNeighbourhoodForgetsRatherThanMisnames) {
  auto d = std::make_unique<DirNames>();
  // 64 hashes with one home slot fill its probe window; the 65th is not kept.
  for (uint64_t k = 0; k < 65; ++k) d->remember(7 + k * DirNames::kSlots, ("/d/" + std::to_string(k)).c_str());
  for (uint64_t k = 0; k < 64; ++k) EXPECT_EQ(std::string(d->find(7 + k * DirNames::kSlots)), "/d/" + std::to_string(k));
  EXPECT_EQ(d->find(7 + 64 * DirNames::kSlots), nullptr);
}

TEST(DirNames, EightThreadsRememberingTheSameDirectoriesAgreeOnOneName) {
  auto d = std::make_unique<DirNames>();
  std::vector<std::thread> ts;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (uint64_t p = 1; p <= 500; ++p) {
        const std::string name = "/dir/" + std::to_string(p) + "/by" + std::to_string(t);
        d->remember(p * 0x9E3779B97F4A7C15ull, name.c_str());
        const char* got = d->find(p * 0x9E3779B97F4A7C15ull);
        if (got == nullptr || std::string(got).rfind("/dir/" + std::to_string(p) + "/by", 0) != 0) ++mismatches;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  for (uint64_t p = 1; p <= 500; ++p) {
    const char* first = d->find(p * 0x9E3779B97F4A7C15ull);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(d->find(p * 0x9E3779B97F4A7C15ull), first) << "one name per directory, stable";
  }
}
