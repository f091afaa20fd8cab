// Which paths are traced: DFTRACER_DATA_DIR prefixes, `all`, relative
// paths, and the paths never traced (our trace files, /proc, /sys, /dev).
#include "path_filter.h"

#include <gtest/gtest.h>

using dftracer::io::PathFilter;

TEST(PathFilter, PrefixesMatchWholeDirectoryNamesOnly) {
  PathFilter f;
  f.configure("/data:/scratch/run1/", "/home/u");
  EXPECT_TRUE(f.wanted("/data/x.bin"));
  EXPECT_TRUE(f.wanted("/data"));
  EXPECT_TRUE(f.wanted("/scratch/run1/a/b"));
  EXPECT_FALSE(f.wanted("/database/x"));
  EXPECT_FALSE(f.wanted("/scratch/run10/x"));
  EXPECT_FALSE(f.wanted("/home/u/x"));
}

TEST(PathFilter, AllAndUnsetTraceEverythingButExcluded) {
  for (const char* dirs : {"all", "", static_cast<const char*>(nullptr), "/data:all"}) {
    PathFilter f;
    f.configure(dirs, "/");
    EXPECT_TRUE(f.wanted("/anything/x"));
    EXPECT_TRUE(f.wanted("rel/x"));
    EXPECT_FALSE(f.wanted("/proc/self/maps"));
    EXPECT_FALSE(f.wanted("/sys/kernel/x"));
    EXPECT_FALSE(f.wanted("/dev/null"));
    EXPECT_FALSE(f.wanted("/out/dftracer-app-1.pfw.gz"));
    EXPECT_FALSE(f.wanted("/out/dftracer-app-1.pfw.gz.idx"));
    EXPECT_FALSE(f.wanted("trace-app-2.pfw"));
    EXPECT_FALSE(f.wanted("/a/.pfw"));          // ".pfw" as the last four bytes
    EXPECT_FALSE(f.wanted("/a/x.y.pfwq"));      // anywhere, after another dot
    EXPECT_TRUE(f.wanted("/a/x.pf"));           // cut short: not a trace name
    EXPECT_TRUE(f.wanted("/a/b.c.d.pfx"));
    EXPECT_TRUE(f.wanted("/a/pfw/x.bin"));      // "pfw" without the dot
    EXPECT_FALSE(f.wanted(""));
  }
}

TEST(PathFilter, RelativePrefixesAreTakenFromTheStartDirectory) {
  PathFilter f;
  f.configure("/work/data:rel", "/work");
  EXPECT_TRUE(f.wanted("/work/data/x"));
  EXPECT_TRUE(f.wanted("/work/rel/y"));  // a relative prefix
  EXPECT_FALSE(f.wanted("/work/other/x"));
  EXPECT_FALSE(f.wanted("data/x"));  // still relative (another dirfd): unknown, so only under all
}
