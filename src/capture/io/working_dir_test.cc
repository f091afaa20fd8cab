// The working directory the hooks resolve relative paths against: joins,
// republishing, memory bounded by distinct directories, and readers racing
// a chdir-ing thread (run by the ThreadSanitizer step with the I/O suite).
#include "working_dir.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using dftracer::io::WorkingDir;

TEST(WorkingDir, JoinsTheLastPublishedDirectory) {
  WorkingDir w;
  char out[64];
  EXPECT_FALSE(w.join("x", out, sizeof out)) << "nothing published: unknown";
  w.publish("/work");
  ASSERT_TRUE(w.join("data/x", out, sizeof out));
  EXPECT_STREQ(out, "/work/data/x");
  ASSERT_TRUE(w.join("./y", out, sizeof out));
  EXPECT_STREQ(out, "/work/y");
  w.publish("/other/");
  ASSERT_TRUE(w.join("z", out, sizeof out));
  EXPECT_STREQ(out, "/other/z");
  char tiny[8];
  EXPECT_FALSE(w.join("data/x", tiny, sizeof tiny));
  w.publish(nullptr);
  EXPECT_FALSE(w.join("z", out, sizeof out)) << "unknown again (getcwd failed)";
}

TEST(WorkingDir, ReturningToADirectoryReusesItsString) {
  WorkingDir w;
  for (int i = 0; i < 1000; ++i) w.publish(i % 2 ? "/a" : "/b/");
  w.publish("/b");
  EXPECT_EQ(w.distinct(), 2u);
}

TEST(WorkingDir, ReadersRacingAChdirSeeOneDirectoryOrTheOther) {
  WorkingDir w;
  w.publish("/first");
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      char out[64];
      while (!stop.load(std::memory_order_relaxed)) {
        if (!w.join("f", out, sizeof out) || (std::strcmp(out, "/first/f") != 0 && std::strcmp(out, "/second/f") != 0))
          bad.fetch_add(1);
      }
    });
  for (int i = 0; i < 20000; ++i) w.publish(i % 2 ? "/first" : "/second");
  stop.store(true);
  for (auto& r : readers) r.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(w.distinct(), 2u);
}
