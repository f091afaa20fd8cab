// Lexical path normalisation: what the I/O hooks hash and filter.
#include "path_normalize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace dftracer::io {
namespace {

std::string norm(const std::string& p, size_t cap = 4096) {
  char out[4096];
  size_t n = normalize_path(p.data(), p.size(), out, cap);
  return n == 0 ? "<does not fit>" : std::string(out, n);
}

TEST(PathNormalize, ResolvesDotsRepeatedSlashesAndTrailingSlash) {
  EXPECT_EQ(norm("/data/x/../y//f"), "/data/y/f");
  EXPECT_EQ(norm("/data/./y/f"), "/data/y/f");
  EXPECT_EQ(norm("//data///y/"), "/data/y");
  EXPECT_EQ(norm("/data/y/."), "/data/y");
  EXPECT_EQ(norm("/data/y/.."), "/data");
  EXPECT_EQ(norm("/.."), "/");
  EXPECT_EQ(norm("/../../etc"), "/etc");
  EXPECT_EQ(norm("/"), "/");
  EXPECT_EQ(norm("/a/b/../../.."), "/");
  EXPECT_EQ(norm("/a/..b/.c/...d"), "/a/..b/.c/...d");  // names that start with dots are names
}

TEST(PathNormalize, RelativePathsKeepTheDotDotsTheyCannotResolve) {
  EXPECT_EQ(norm("a/../.."), "..");
  EXPECT_EQ(norm("../a/.."), "..");
  EXPECT_EQ(norm("../../x"), "../../x");
  EXPECT_EQ(norm("./a/./b"), "a/b");
  EXPECT_EQ(norm("a/.."), ".");
  EXPECT_EQ(norm("."), ".");
}

TEST(PathNormalize, OnlyPathsThatChangeNeedIt) {
  for (const char* p : {"/data/x/../y", "/a//b", "/a/./b", "/a/b/", "./a", "a/..", "/a/b/.", "/a/b/.."})
    EXPECT_TRUE(path_needs_normalizing(p, std::strlen(p))) << p;
  for (const char* p : {"/data/y/f", "/", "a/b", "/a/..b/.c", "/a/b.", "x", ""})
    EXPECT_FALSE(path_needs_normalizing(p, std::strlen(p))) << p;
}

// The component-by-component definition the fast check must agree with.
bool needs_reference(const char* path, size_t len) {
  if (len == 0) return false;
  if (len > 1 && path[len - 1] == '/') return true;
  for (size_t i = 0; i < len;) {
    size_t end = i;
    while (end < len && path[end] != '/') ++end;
    const size_t n = end - i;
    if ((n == 0 && i > 0) || (n == 1 && path[i] == '.') || (n == 2 && path[i] == '.' && path[i + 1] == '.'))
      return true;
    i = end + 1;
  }
  return false;
}

TEST(PathNormalize, TheWordAtATimeCheckAgreesWithTheComponentDefinition) {
  // Every offset of each pattern in long paths (the 8-byte loop and its tail).
  for (const char* pat : {"//", "/./", "/../", "/.", "/..", "/.x", "/..x", "/x.", "x/"}) {
    for (size_t at = 0; at < 40; ++at) {
      std::string p = "/" + std::string(at, 'a') + pat + std::string(40 - at, 'b');
      EXPECT_EQ(path_needs_normalizing(p.data(), p.size()), needs_reference(p.data(), p.size())) << p;
      std::string q = "/" + std::string(at, 'a') + pat;  // the pattern at the very end
      EXPECT_EQ(path_needs_normalizing(q.data(), q.size()), needs_reference(q.data(), q.size())) << q;
    }
  }
  // Random paths over the bytes that matter.
  uint64_t x = 0x9e3779b97f4a7c15ull;
  const char alphabet[] = {'/', '.', 'a', '/', '.'};
  for (int round = 0; round < 200000; ++round) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const size_t len = x % 37;
    std::string p;
    uint64_t y = x;
    for (size_t k = 0; k < len; ++k, y = y * 6364136223846793005ull + 1442695040888963407ull)
      p += alphabet[(y >> 33) % sizeof alphabet];
    std::unique_ptr<char[]> exact(new char[len == 0 ? 1 : len]);  // len bytes in a block of their own (ASan sees past it)
    std::memcpy(exact.get(), p.data(), len);
    ASSERT_EQ(path_needs_normalizing(exact.get(), len), needs_reference(p.data(), p.size())) << p;
  }
}

TEST(PathNormalize, APathThatDoesNotFitIsLeftAlone) {
  // The output is built a component at a time: it needs room for the
  // longest prefix on the way (at most the input's length, plus the NUL).
  EXPECT_EQ(norm("/abc/def/../g", 8), "<does not fit>");
  EXPECT_EQ(norm("/abc/def/../g", 9), "/abc/g");
}

}  // namespace
}  // namespace dftracer::io
