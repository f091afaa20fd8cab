// Which paths are traced: DFTRACER_DATA_DIR prefixes, `all`, relative
// paths, and the paths never traced (our trace files, /proc, /sys, /dev).
#include "path_filter.h"

#include <gtest/gtest.h>

using dftracer::io::PathFilter;

TEST(PathFilter, PrefixesMatchWholeDirectoryNamesOnly) {
  PathFilter f;
  f.configure("/data:/scratch/run1/", "/home/u");
  EXPECT_TRUE(f.wanted("/data/x.bin", true));
  EXPECT_TRUE(f.wanted("/data", true));
  EXPECT_TRUE(f.wanted("/scratch/run1/a/b", true));
  EXPECT_FALSE(f.wanted("/database/x", true));
  EXPECT_FALSE(f.wanted("/scratch/run10/x", true));
  EXPECT_FALSE(f.wanted("/home/u/x", true));
}

TEST(PathFilter, AllAndUnsetTraceEverythingButExcluded) {
  for (const char* dirs : {"all", "", static_cast<const char*>(nullptr), "/data:all"}) {
    PathFilter f;
    f.configure(dirs, "/");
    EXPECT_TRUE(f.wanted("/anything/x", true));
    EXPECT_TRUE(f.wanted("rel/x", false));
    EXPECT_FALSE(f.wanted("/proc/self/maps", true));
    EXPECT_FALSE(f.wanted("/sys/kernel/x", true));
    EXPECT_FALSE(f.wanted("/dev/null", true));
    EXPECT_FALSE(f.wanted("/out/dftracer-app-1.pfw.gz", true));
    EXPECT_FALSE(f.wanted("/out/dftracer-app-1.pfw.gz.idx", true));
    EXPECT_FALSE(f.wanted("trace-app-2.pfw", true));
    EXPECT_FALSE(f.wanted("", true));
  }
}

TEST(PathFilter, RelativePathsResolveAgainstTheWorkingDirectory) {
  PathFilter f;
  f.configure("/work/data:rel", "/work");
  EXPECT_TRUE(f.wanted("data/x", true));      // /work/data/x
  EXPECT_TRUE(f.wanted("rel/y", true));       // /work/rel/y (a relative prefix)
  EXPECT_FALSE(f.wanted("other/x", true));
  EXPECT_FALSE(f.wanted("data/x", false));    // relative to another directory: unknown
  PathFilter inside;
  inside.configure("/work", "/work/sub");
  EXPECT_TRUE(inside.wanted("x", true));      // cwd is inside the prefix
}

TEST(PathFilter, AbsoluteJoinsTheWorkingDirectory) {
  PathFilter f;
  f.configure("all", "/work");
  char out[64];
  ASSERT_TRUE(f.absolute("data/x", out, sizeof out));
  EXPECT_STREQ(out, "/work/data/x");
  ASSERT_TRUE(f.absolute("./y", out, sizeof out));
  EXPECT_STREQ(out, "/work/y");
  char tiny[8];
  EXPECT_FALSE(f.absolute("data/x", tiny, sizeof tiny));
}
