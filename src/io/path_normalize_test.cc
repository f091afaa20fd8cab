// Lexical path normalisation: what the I/O hooks hash and filter.
#include "path_normalize.h"

#include <gtest/gtest.h>

#include <cstring>
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

TEST(PathNormalize, APathThatDoesNotFitIsLeftAlone) {
  // The output is built a component at a time: it needs room for the
  // longest prefix on the way (at most the input's length, plus the NUL).
  EXPECT_EQ(norm("/abc/def/../g", 8), "<does not fit>");
  EXPECT_EQ(norm("/abc/def/../g", 9), "/abc/g");
}

}  // namespace
}  // namespace dftracer::io
