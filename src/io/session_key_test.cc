// The cached session key equals dft_hash64 of the current name, whatever
// the name was before and however many threads ask while it changes.
#include "session_key.h"

#include <dftracer/dftracer.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using dftracer::io::SessionKey;

namespace {
uint64_t expected(const std::string& s) { return dft_hash64(s.data(), s.size()); }
}  // namespace

TEST(SessionKey, EqualsTheHashOfTheCurrentName) {
  auto k = std::make_unique<SessionKey>();
  EXPECT_EQ(k->of(nullptr), 0u);
  const std::string a = "/tmp/traces/app-1234.pfw.gz";
  const std::string b = "/tmp/traces/app-1235.pfw.gz";      // same length, last word differs
  const std::string c = "/tmp/traces/app-1234.pfw.gz.x";    // a longer name with a's prefix
  const std::string d = "/tmp/traces/app-1234.pfw";         // a shorter one
  for (const std::string* s : {&a, &a, &b, &a, &c, &d, &c, &b, &b})
    EXPECT_EQ(k->of(s->c_str()), expected(*s)) << *s;
  EXPECT_EQ(k->of(""), expected(""));
  const std::string long_name(2000, 'x');  // past the cache: hashed each time
  EXPECT_EQ(k->of(long_name.c_str()), expected(long_name));
  EXPECT_EQ(k->of(a.c_str()), expected(a));
}

TEST(SessionKey, ThreadsAlternatingNamesAlwaysGetTheirOwnHash) {
  auto k = std::make_unique<SessionKey>();
  // The first two of equal length: only their bytes tell them apart.
  const std::string names[] = {"/data/run/trace-a-11.pfw.gz", "/data/run/trace-b-22.pfw.gz",
                               "/data/run/longer/trace-c-333.pfw.gz"};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const std::string& n = names[(t + i / 100) % 3];
        if (k->of(n.c_str()) != expected(n)) wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}
