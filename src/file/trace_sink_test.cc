// The sinks on their own: the kind a file name asks for, what each sink
// leaves on disk (read back with the test reader, which inflates gzip with
// zlib, never with the code under test), the gzip index, and a failing sink
// refusing chunks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "memory_sink.h"
#include "trace_file.h"
#include "event_observer.h"
#include "member_index.h"
#include "trace_sink.h"

namespace dftracer {
namespace {

const std::string kChunk1 = "[\n{\"id\":0,\"name\":\"a\"},\n";
const std::string kChunk2 = "{\"id\":1,\"name\":\"b\"},\n{\"id\":2,\"name\":\"c\"}\n]\n";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::unique_ptr<TraceSink> open_ok(const std::string& path) {
  std::string error;
  std::unique_ptr<TraceSink> sink = open_trace_sink(path, sink_kind_for(path), 1, &error);
  EXPECT_NE(sink, nullptr) << error;
  EXPECT_EQ(error, "");
  return sink;
}

TEST(TraceSink, KindFollowsTheFileName) {
  EXPECT_EQ(sink_kind_for("run-app-1.pfw.gz"), SinkKind::kGzipMembers);
  EXPECT_EQ(sink_kind_for("x.gz"), SinkKind::kGzipMembers);
  EXPECT_EQ(sink_kind_for("run-app-1.pfw"), SinkKind::kPlainFile);
  EXPECT_EQ(sink_kind_for("gz"), SinkKind::kPlainFile);
  EXPECT_EQ(sink_kind_for(""), SinkKind::kPlainFile);
}

TEST(TraceSink, PlainFileHoldsTheBytesAsGiven) {
  std::string path = dftracer_test::temp_dir("sink") + "/t.pfw";
  std::unique_ptr<TraceSink> sink = open_ok(path);
  ASSERT_NE(sink, nullptr);
  EXPECT_TRUE(sink->write_chunk(kChunk1.data(), kChunk1.size(), 1));
  EXPECT_TRUE(sink->write_chunk(kChunk2.data(), kChunk2.size(), 2));
  sink->close();
  sink->close();  // idempotent
  EXPECT_EQ(slurp(path), kChunk1 + kChunk2);
  EXPECT_EQ(sink->bytes_written(), kChunk1.size() + kChunk2.size());
  EXPECT_FALSE(sink->failed());
}

TEST(TraceSink, GzipFileIsOneMemberPerChunkWithAnIndexLineEach) {
  std::string path = dftracer_test::temp_dir("sink") + "/t.pfw.gz";
  std::unique_ptr<TraceSink> sink = open_ok(path);
  ASSERT_NE(sink, nullptr);
  EXPECT_TRUE(sink->write_chunk(kChunk1.data(), kChunk1.size(), 1));
  uint64_t first_member = sink->bytes_written();
  EXPECT_TRUE(sink->write_chunk(kChunk2.data(), kChunk2.size(), 2));
  sink->close();
  bool truncated = true;
  EXPECT_EQ(dftracer_test::read_all(path, &truncated), kChunk1 + kChunk2);
  EXPECT_FALSE(truncated);
  EXPECT_EQ(slurp(path).size(), sink->bytes_written());
  // The version-3 index (member_index.h): a header, one M line per member
  // ("M offset size raw_size lines gzip_crc member_crc ...": no events were observed,
  // the sink was used without a formatter), and the final F line; each line
  // ends in its CRC.
  std::istringstream idx(slurp(path + ".idx"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(idx, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u);
  std::ostringstream m1, m2;
  m1 << "M 0 " << first_member << " " << kChunk1.size() << " 1 ";
  m2 << "M " << first_member << " " << sink->bytes_written() - first_member << " " << kChunk2.size() << " 2 ";
  EXPECT_EQ(lines[0].rfind("#dftracer-idx 3 *", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind(m1.str(), 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind(m2.str(), 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("F 0 0 0 ", 0), 0u) << lines[3];
  // member_crc: the CRC-32 of each member's compressed bytes, as in the file.
  const std::string gz = slurp(path);
  for (int m = 1; m <= 2; ++m) {
    std::istringstream f(lines[m]);
    std::string tag;
    uint64_t offset = 0, size = 0, raw = 0, n = 0, gzip_crc = 0, member_crc = 0;
    f >> tag >> offset >> size >> raw >> n >> gzip_crc >> member_crc;
    ASSERT_LE(offset + size, gz.size());
    EXPECT_EQ(member_crc, crc32(0L, reinterpret_cast<const Bytef*>(gz.data() + offset), static_cast<uInt>(size)))
        << lines[m];
  }
  for (const std::string& l : lines) {
    std::string again;
    append_index_line(&again, l.substr(0, l.rfind(" *")));
    EXPECT_EQ(again, l + "\n");
  }
}

TEST(TraceSink, FailedIndexIsDroppedAndItsObserverStaysUsable) {
  std::string path = dftracer_test::temp_dir("sink") + "/t.pfw.gz";
  std::unique_ptr<TraceSink> sink = open_ok(path);
  ASSERT_NE(sink, nullptr);
  std::vector<int> fds;
  sink->descriptors(&fds);
  ASSERT_EQ(fds.size(), 2u);  // the trace, then its index
  EventObserver* observer = sink->event_observer();
  ASSERT_NE(observer, nullptr);
  EXPECT_TRUE(sink->write_chunk(kChunk1.data(), kChunk1.size(), 1));
  // The index's descriptor goes away under the sink (the program closed
  // it, or its disk filled up): the next index write fails.
  ::close(fds[1]);
  EXPECT_TRUE(sink->write_chunk(kChunk2.data(), kChunk2.size(), 2));  // the trace itself is fine
  // The formatter keeps telling its observer about every line it writes.
  // It used to be freed with the index file: this was a use after free
  // that crashed the traced program.
  observer->metadata();
  observer->other(1);
  const char args[] = "\"x\":1";
  observer->complete("a", 1, "c", 1, 1, 2, 3, args, sizeof args - 1);
  sink->close();
  EXPECT_EQ(dftracer_test::read_all(path), kChunk1 + kChunk2);
  EXPECT_FALSE(sink->failed());
}

TEST(TraceSink, ForgottenDescriptorsAreNeverClosed) {
  // A forked child drops its copy of a sink whose descriptors lived in the
  // parent's writer thread's table: those numbers are the child's own files.
  std::string path = dftracer_test::temp_dir("sink") + "/t.pfw";
  std::unique_ptr<TraceSink> sink = open_ok(path);
  ASSERT_NE(sink, nullptr);
  std::vector<int> fds;
  sink->descriptors(&fds);
  ASSERT_EQ(fds.size(), 1u);
  sink->forget_descriptors();
  sink.reset();
  EXPECT_EQ(::fcntl(fds[0], F_GETFD), FD_CLOEXEC);  // still open: not closed by the sink
  ::close(fds[0]);
}

TEST(TraceSink, UncreatableFileIsAOneLineError) {
  std::string path = dftracer_test::temp_dir("sink") + "/no/such/dir/t.pfw";
  std::string error;
  EXPECT_EQ(open_trace_sink(path, SinkKind::kPlainFile, 1, &error), nullptr);
  EXPECT_NE(error.find("cannot create trace file " + path), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(MemorySink, KeepsChunksAndRefusesThemOnceFailed) {
  MemorySink sink;
  EXPECT_TRUE(sink.write_chunk(kChunk1.data(), kChunk1.size(), 1));
  sink.fail_writes(true);
  EXPECT_FALSE(sink.write_chunk(kChunk2.data(), kChunk2.size(), 2));
  EXPECT_TRUE(sink.failed());
  sink.fail_writes(false);
  EXPECT_FALSE(sink.write_chunk(kChunk2.data(), kChunk2.size(), 2));  // failed stays failed
  EXPECT_EQ(sink.bytes(), kChunk1);
  EXPECT_EQ(sink.chunk_lines(), (std::vector<uint64_t>{1}));
  EXPECT_EQ(sink.bytes_written(), kChunk1.size());
}

}  // namespace
}  // namespace dftracer
