// Which paths are traced: DFTRACER_DATA_DIR prefixes, `all`, relative
// paths, and the paths never traced (our trace files, /proc, /sys, /dev).
#include "path_filter.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

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

// A DFTRACER_DATA_DIR prefix named through a symlink: the kernel's resolved
// names (getcwd, /proc/self/fd/N) under its real path come back under the
// prefix's name; other paths are left alone.
TEST(PathFilter, ResolvedPathsUnderASymlinkedPrefixTakeThePrefixName) {
  char tmpl[] = "/tmp/dft-path-filter-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string real = root + "/real", link = root + "/data";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  char resolved_root[PATH_MAX];
  ASSERT_NE(realpath(root.c_str(), resolved_root), nullptr);  // /tmp itself may be a link
  const std::string real_resolved = std::string(resolved_root) + "/real";

  PathFilter f;
  f.configure((link + ":/elsewhere").c_str(), "/");
  char out[4096];
  auto named = [&](const std::string& p, size_t cap = sizeof out) {
    size_t n = f.as_named_in_data_dir(p.data(), p.size(), out, cap);
    return n == 0 ? std::string("<none>") : std::string(out, n);
  };
  EXPECT_EQ(named(real_resolved + "/sub/f.bin"), link + "/sub/f.bin");
  EXPECT_EQ(named(real_resolved), link);               // the directory itself
  EXPECT_EQ(named(real_resolved + "x/f.bin"), "<none>");  // a sibling whose name starts the same
  EXPECT_EQ(named("/elsewhere/f.bin"), "<none>");      // a prefix that is no symlink
  EXPECT_EQ(named(real_resolved + "/f", 4), "<none>");  // does not fit
  EXPECT_TRUE(f.wanted((link + "/sub/f.bin").c_str()));
  EXPECT_FALSE(f.wanted((real_resolved + "/sub/f.bin").c_str()));  // only the names it was given

  unlink(link.c_str());
  rmdir(real.c_str());
  rmdir(root.c_str());
}

// initialize_log's data_dir reconfigures a filter already in use: the new
// prefixes apply at once, and "all" comes back with a later configure.
TEST(PathFilter, ReconfiguringReplacesTheDirectories) {
  PathFilter f;
  EXPECT_TRUE(f.wanted("/usr/lib/python3/x.py"));  // never configured: every path
  f.configure(nullptr, "/");
  EXPECT_TRUE(f.wanted("/usr/lib/python3/x.py"));
  f.configure("/data", "/");
  EXPECT_FALSE(f.wanted("/usr/lib/python3/x.py"));
  EXPECT_TRUE(f.wanted("/data/x.bin"));
  f.configure("/data:/other", "/");
  EXPECT_TRUE(f.wanted("/other/y"));
  f.configure("all", "/");
  EXPECT_TRUE(f.wanted("/usr/lib/python3/x.py"));
  EXPECT_FALSE(f.wanted("/dev/null"));
}
