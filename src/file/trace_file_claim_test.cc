// Claiming a trace file name: the name function (directory prefixes,
// alternatives) and the sinks' exclusive create -- an existing file, a stale
// gzip index or a planted symlink is never truncated or written through;
// open_unique_trace_sink moves on to the next free name instead.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "trace_file.h"
#include "trace_file_name.h"
#include "trace_sink.h"
#include "unique_trace_sink.h"

namespace dftracer {
namespace {

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

const std::string kChunk = "[\n{\"id\":0,\"name\":\"a\"}\n]\n";

TEST(TraceFileName, PrefixAppPidAndAlternatives) {
  EXPECT_EQ(trace_file_name("runs/x", "my-app", 42, true), "runs/x-my-app-42.pfw.gz");
  EXPECT_EQ(trace_file_name("runs/x", "my-app", 42, false), "runs/x-my-app-42.pfw");
  EXPECT_EQ(trace_file_name("runs/x", "my-app", 42, true, 3), "runs/x-my-app-42-3.pfw.gz");
  // RANK set at start: the rank before the pid.
  EXPECT_EQ(trace_file_name("runs/x", "my-app", 42, true, 0, 7), "runs/x-my-app-rank7-42.pfw.gz");
  EXPECT_EQ(trace_file_name("runs/", "app", 42, false, 2, 0), "runs/dftracer-app-rank0-42-2.pfw");
}

// "dir/" used to give "dir/-app-42.pfw.gz": a name starting with '-'.
TEST(TraceFileName, DirectoryPrefixGetsABaseNameInside) {
  std::string dir = dftracer_test::temp_dir("name");
  EXPECT_EQ(trace_file_name(dir + "/not-yet/", "app", 42, true), dir + "/not-yet/dftracer-app-42.pfw.gz");
  EXPECT_EQ(trace_file_name(dir, "app", 42, false), dir + "/dftracer-app-42.pfw");  // an existing directory
  EXPECT_EQ(trace_file_name(dir + "/", "app", 42, false), dir + "/dftracer-app-42.pfw");
  EXPECT_EQ(trace_file_name("", "app", 42, false), "dftracer-app-42.pfw");
  EXPECT_EQ(trace_file_name(dir + "/run", "app", 42, false), dir + "/run-app-42.pfw");  // not a directory
}

TEST(TraceFileClaim, AnExistingFileIsNeitherTruncatedNorReused) {
  std::string dir = dftracer_test::temp_dir("claim");
  for (const char* ext : {".pfw", ".pfw.gz"}) {
    SCOPED_TRACE(ext);
    std::string path = dir + "/t" + ext;
    write_file(path, "someone else's trace\n");
    std::string error;
    bool taken = false;
    EXPECT_EQ(open_trace_sink(path, sink_kind_for(path), 1, &error, &taken), nullptr);
    EXPECT_TRUE(taken);
    EXPECT_EQ(dftracer_test::read_bytes(path), "someone else's trace\n");
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(TraceFileClaim, APlantedSymlinkIsNotFollowed) {
  std::string dir = dftracer_test::temp_dir("claim");
  std::string victim = dir + "/victim";
  write_file(victim, "precious\n");
  std::string path = dir + "/t.pfw";
  ASSERT_EQ(symlink(victim.c_str(), path.c_str()), 0);
  std::string dangling_target = dir + "/would-be-created";
  std::string dangling = dir + "/d.pfw";
  ASSERT_EQ(symlink(dangling_target.c_str(), dangling.c_str()), 0);
  for (const std::string& p : {path, dangling}) {
    std::string error;
    bool taken = false;
    EXPECT_EQ(open_trace_sink(p, SinkKind::kPlainFile, 1, &error, &taken), nullptr) << p;
    EXPECT_TRUE(taken) << p;
  }
  EXPECT_EQ(dftracer_test::read_bytes(victim), "precious\n");
  EXPECT_FALSE(exists(dangling_target)) << "created through a dangling link";
}

// A stale .idx beside a free trace name would describe another file's gzip
// members to every reader: the name counts as taken, and the trace file
// just created for it is removed again.
TEST(TraceFileClaim, AStaleGzipIndexMakesTheNameTaken) {
  std::string dir = dftracer_test::temp_dir("claim");
  std::string path = dir + "/t.pfw.gz";
  write_file(path + ".idx", "0 10 20 1\n");
  std::string error;
  bool taken = false;
  EXPECT_EQ(open_trace_sink(path, SinkKind::kGzipMembers, 1, &error, &taken), nullptr);
  EXPECT_TRUE(taken);
  EXPECT_FALSE(exists(path));
  EXPECT_EQ(dftracer_test::read_bytes(path + ".idx"), "0 10 20 1\n");
}

TEST(TraceFileClaim, UniqueSinkTakesTheNextFreeNameAndItsIndexFollows) {
  std::string dir = dftracer_test::temp_dir("claim");
  std::string prefix = dir + "/run";
  write_file(trace_file_name(prefix, "app", 7, true), "first\n");
  write_file(trace_file_name(prefix, "app", 7, true, 1) + ".idx", "orphan\n");
  std::string error;
  std::unique_ptr<TraceSink> sink = open_unique_trace_sink(prefix, "app", 7, true, 1, &error);
  ASSERT_NE(sink, nullptr) << error;
  EXPECT_EQ(sink->path(), trace_file_name(prefix, "app", 7, true, 2));
  EXPECT_TRUE(sink->write_chunk(kChunk.data(), kChunk.size(), 1));
  sink->close();
  EXPECT_EQ(dftracer_test::read_all(sink->path()), kChunk);
  EXPECT_TRUE(exists(sink->path() + ".idx"));
  EXPECT_EQ(dftracer_test::read_bytes(trace_file_name(prefix, "app", 7, true)), "first\n");
  EXPECT_EQ(dftracer_test::read_bytes(trace_file_name(prefix, "app", 7, true, 1) + ".idx"), "orphan\n");
  EXPECT_FALSE(exists(trace_file_name(prefix, "app", 7, true, 1)));
}

TEST(TraceFileClaim, UniqueSinkReportsOtherFailuresAtOnce) {
  std::string dir = dftracer_test::temp_dir("claim");
  std::string error;
  EXPECT_EQ(open_unique_trace_sink(dir + "/no/such/dir/run", "app", 7, false, 1, &error), nullptr);
  EXPECT_NE(error.find("cannot create trace file " + dir + "/no/such/dir/run-app-7.pfw"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace dftracer
