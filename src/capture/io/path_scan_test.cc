// The open hooks' word-at-a-time path reading (path_scan.h) against the
// byte-by-byte definitions, at every alignment, and at the end of a page.
#include "path_scan.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

using namespace dftracer::io::scan;

namespace {

bool odd_reference(const std::string& p) {
  for (size_t i = 0; i + 1 < p.size(); ++i)
    if (p[i] == '/' && (p[i + 1] == '/' || p[i + 1] == '.')) return true;
  return false;
}

// xorshift: the same strings on every run.
struct Rng {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  uint64_t next() { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; }
};

std::string random_path(Rng& r, const char* alphabet, size_t max_len) {
  std::string p(r.next() % (max_len + 1), 'a');
  const size_t k = std::strlen(alphabet);
  for (char& c : p) c = alphabet[r.next() % k];
  return p;
}

}  // namespace

TEST(PathScan, LengthAndOddnessAgreeWithStrlenAndTheByteDefinitionAtEveryAlignment) {
  Rng r;
  alignas(64) char buf[128];
  for (int round = 0; round < 100000; ++round) {
    const std::string p = random_path(r, "/.a/.b\x01\x7f\x80\xff", 60);
    for (size_t at = 0; at < 8; ++at) {
      std::memset(buf, round & 1 ? '/' : 'x', sizeof buf);  // what lies after the NUL must not count
      std::memcpy(buf + at, p.c_str(), p.size() + 1);
      bool odd = !odd_reference(p);
      ASSERT_EQ(path_length_and_oddness(buf + at, &odd), p.size()) << p << " at " << at;
      ASSERT_EQ(odd, odd_reference(p)) << p << " at " << at;
    }
  }
  // A '/' at the end of one word and '/' or '.' at the start of the next.
  for (size_t at = 0; at < 8; ++at)
    for (size_t pos = 0; pos < 30; ++pos)
      for (char second : {'/', '.', 'y'}) {
        std::string p(32, 'z');
        p[pos] = '/';
        p[pos + 1] = second;
        std::memcpy(buf + at, p.c_str(), p.size() + 1);
        bool odd;
        ASSERT_EQ(path_length_and_oddness(buf + at, &odd), p.size());
        ASSERT_EQ(odd, second != 'y') << p << " at " << at;
      }
}

TEST(PathScan, APathEndingAtTheEndOfAPageReadsNothingBeyondIt) {
  // The page after the path is unreadable: a read past the aligned word
  // holding the NUL would fault.
  const long page = sysconf(_SC_PAGESIZE);
  char* mem = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mem, MAP_FAILED);
  ASSERT_EQ(mprotect(mem + page, page, PROT_NONE), 0);
  for (size_t len = 0; len < 40; ++len) {
    char* p = mem + page - len - 1;
    std::memset(p, 'q', len);
    p[len] = '\0';
    if (len > 3) p[len - 2] = '/', p[len - 1] = '.';
    bool odd;
    EXPECT_EQ(path_length_and_oddness(p, &odd), len);
    EXPECT_EQ(odd, len > 3);
  }
  munmap(mem, 2 * page);
}

TEST(PathScan, SameBytesIsMemcmpEqualityForEveryLengthAndDifference) {
  char a[80], b[80];
  for (size_t i = 0; i < sizeof a; ++i) a[i] = b[i] = static_cast<char>('a' + i % 23);
  for (size_t n = 1; n < 70; ++n) {
    EXPECT_TRUE(same_bytes(a, b, n)) << n;
    for (size_t diff = 0; diff < n + 4; ++diff) {
      b[diff] ^= 0x20;
      EXPECT_EQ(same_bytes(a, b, n), std::memcmp(a, b, n) == 0) << n << " " << diff;
      b[diff] ^= 0x20;
    }
  }
}

TEST(PathScan, ContainsPfwFindsTheNameAnywhereAndNothingElse) {
  for (size_t len = 0; len < 40; ++len)
    for (size_t at = 0; at + 4 <= len + 4; ++at) {
      std::string p(len, 'p');
      if (at + 4 <= len) p.replace(at, 4, ".pfw");
      const bool want = p.find(".pfw") != std::string::npos;
      EXPECT_EQ(contains_pfw(p.data(), p.size()), want) << p;
      std::string near = p;  // ".pf" cut short by the end, ".pfx", "pfw" with no dot
      if (len >= 3) near.replace(len - 3, 3, ".pf");
      EXPECT_EQ(contains_pfw(near.data(), near.size()), near.find(".pfw") != std::string::npos) << near;
    }
  Rng r;
  for (int round = 0; round < 100000; ++round) {
    const std::string p = random_path(r, ".pfw/", 40);
    ASSERT_EQ(contains_pfw(p.data(), p.size()), p.find(".pfw") != std::string::npos) << p;
  }
}
