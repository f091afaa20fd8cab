// Size limits: a line or a whole-document JSON over ReadOptions' limits is
// skipped and counted as oversized, holding no more than about the limit in
// memory, and every other event is still read.
#include <gtest/gtest.h>

#include <zlib.h>

#include "cli_run.hpp"
#include "gzip_members.hpp"

namespace dftracer::analyze::testing {
namespace {

Collected collect_limited(const std::vector<std::string>& files, unsigned threads, uint64_t max_line,
                          uint64_t max_document = ReadOptions::kDefaultMaxDocumentBytes) {
  ReadOptions opt;
  opt.min_piece_bytes = 1;  // many pieces: a long line crosses their seams
  opt.max_line_bytes = max_line;
  opt.max_document_bytes = max_document;
  return collect(files, threads, opt);
}

// "[", e0, a `long_bytes` line (an event whose args hold a long string), e1.
std::string trace_with_long_line(size_t long_bytes) {
  std::string pad(long_bytes, 'a');
  std::string big = "{\"name\":\"big\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"args\":{\"pad\":\"" + pad + "\"}}";
  return pfw_text({op_event(0, "e0", 1, 1), big, op_event(1, "e1", 2, 1)});
}

const std::multiset<std::string> kKept = {"e0", "e1"};

TEST(SizeLimits, LineOverTheLimitIsSkippedAndCountedOnce) {
  TempDir d;
  for (size_t long_bytes : {size_t{3000}, size_t{9} << 20}) {  // within, and longer than, the 8 MiB read block
    std::string text = trace_with_long_line(long_bytes);
    write_file(d.file("t.pfw"), text);
    write_gz(d.file("t.pfw.gz"), text, 1, /*index=*/true);
    write_gz(d.file("s.pfw.gz"), text, 1, /*index=*/false);
    for (const char* f : {"t.pfw", "t.pfw.gz", "s.pfw.gz"}) {
      for (unsigned threads : {1u, 2u}) {
        Collected c = collect_limited({d.file(f)}, threads, 1024);
        EXPECT_EQ(c.names, kKept) << f << " " << long_bytes << " " << threads;
        EXPECT_EQ(c.stats.oversized, 1u) << f << " " << long_bytes << " " << threads;
        EXPECT_EQ(c.stats.malformed, 0u) << f << " " << long_bytes << " " << threads;
        EXPECT_NE(c.stats.problems_line().find("1 line or document over the size limit"), std::string::npos);
        // Under the default limit the same line is an event.
        Collected all = collect_limited({d.file(f)}, threads, ReadOptions::kDefaultMaxLineBytes);
        EXPECT_EQ(all.names.count("big"), 1u) << f << " " << long_bytes;
        EXPECT_EQ(all.stats.oversized, 0u);
      }
    }
  }
}

TEST(SizeLimits, LineAtTheLimitIsRead) {
  TempDir d;
  std::string big = "{\"name\":\"big\",\"ph\":\"X\",\"ts\":1,\"dur\":1}";
  write_file(d.file("t.pfw"), pfw_text({big}, /*finalized=*/false));  // the line is `big` plus ","
  EXPECT_EQ(collect_limited({d.file("t.pfw")}, 1, big.size() + 1).stats.events, 1u);
  EXPECT_EQ(collect_limited({d.file("t.pfw")}, 1, big.size()).stats.oversized, 1u);
}

TEST(SizeLimits, DocumentOverTheLimitIsSkippedAndCounted) {
  TempDir d;
  std::string doc = "{\"traceEvents\": [\n  {\"name\": \"a\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2},\n"
                    "  {\"name\": \"b\", \"ph\": \"X\", \"ts\": 2, \"dur\": 2}\n]}\n";
  write_file(d.file("t.json"), doc);
  write_file(d.file("t.json.gz"), gzip_member(doc));
  for (const char* f : {"t.json", "t.json.gz"}) {
    Collected small = collect_limited({d.file(f)}, 1, 1024, doc.size() - 1);
    EXPECT_EQ(small.stats.events, 0u) << f;
    EXPECT_EQ(small.stats.oversized, 1u) << f;
    Collected fits = collect_limited({d.file(f)}, 1, 1024, doc.size());
    EXPECT_EQ(fits.names, (std::multiset<std::string>{"a", "b"})) << f;
  }
}

// One gzip member: "[", e0, a line of `long_bytes` bytes, e1, compressed as a
// stream so that this process never holds the line.
void write_bomb_gz(const std::string& path, size_t long_bytes) {
  GzipStreamWriter w(path, 9);
  ASSERT_TRUE(w.ok());
  w.feed("[\n" + op_event(0, "e0", 1, 1) + ",\n{\"name\":\"big\",\"args\":{\"pad\":\"", Z_NO_FLUSH);
  const std::string pad(1 << 20, 'a');
  for (size_t done = 0; done < long_bytes; done += pad.size()) w.feed(pad, Z_NO_FLUSH);
  w.feed("\"}},\n" + op_event(1, "e1", 2, 1) + ",\n", Z_FINISH);
}

// A gzip bomb: 256 MiB of one line in a member of a few hundred KB. Memory
// stays near the 16 MiB line limit instead of following the line.
TEST(SizeLimits, GzipBombOfOneLineKeepsMemoryBounded) {
  TempDir d;
  write_bomb_gz(d.file("bomb.pfw.gz"), size_t{256} << 20);
  CliRun r = run_cli(d, "summary --threads 1 " + d.file("bomb.pfw.gz"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("skipped 1 line or document over the size limit"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("e1"), std::string::npos) << r.out;
  EXPECT_LT(children_max_rss_kib(), 128 * 1024) << "KiB";
  CliRun bad = run_cli(d, "summary --max-line-mib 0 " + d.file("bomb.pfw.gz"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err.find("dftracer-analyze: --max-line-mib needs an integer from 1 to 1048576, not '0'"), 0u)
      << bad.err;
}

// A member of 20 MiB grows the thread's whole-member buffer past 16 MiB to
// inflate; afterwards the buffer is back at 2 MiB, not held at 32.
TEST(SizeLimits, WholeMemberBufferShrinksAfterALargeMember) {
  std::string text;
  for (int i = 0; text.size() < (size_t{20} << 20); ++i) text += op_event(i, "e" + std::to_string(i % 97), 1, 1) + ",\n";
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> gz(deflateBound(&zs, text.size()));
  zs.next_in = reinterpret_cast<Bytef*>(text.data());
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = gz.data();
  zs.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  MemberInflater inf;
  uint64_t seen = 0;
  MemberResult r = inf.inflate_member(gz.data(), gz.size(), 0, [&](const char*, size_t n) {
    seen += n;
    return true;
  });
  EXPECT_EQ(r.end, MemberEnd::Complete);
  EXPECT_EQ(seen, text.size());
  EXPECT_LE(whole_inflate_buffer_bytes(), size_t{2} << 20);
}

TEST(SizeLimits, LimitsAreOptionsOfTheCommand) {
  TempDir d;
  write_file(d.file("t.pfw"), trace_with_long_line(size_t{2} << 20));
  CliRun lowered = run_cli(d, "summary --max-line-mib 1 " + d.file("t.pfw"));
  EXPECT_EQ(lowered.status, 0) << lowered.err;
  EXPECT_EQ(lowered.out.find("big"), std::string::npos) << lowered.out;
  EXPECT_NE(lowered.err.find("skipped 1 line or document over the size limit"), std::string::npos) << lowered.err;
  CliRun dflt = run_cli(d, "summary " + d.file("t.pfw"));
  EXPECT_EQ(dflt.status, 0) << dflt.err;
  EXPECT_NE(dflt.out.find("big"), std::string::npos) << dflt.out;
  std::string doc = "{\"traceEvents\": [\n  {\"name\": \"a\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, \"args\": {\"p\": \"" +
                    std::string(size_t{2} << 20, 'x') + "\"}}\n]}\n";
  write_file(d.file("t.json"), doc);
  CliRun doc_small = run_cli(d, "summary --max-document-mib 1 " + d.file("t.json"));
  EXPECT_EQ(doc_small.status, 1) << doc_small.err;  // nothing read
  EXPECT_NE(doc_small.err.find("skipped 1 line or document over the size limit"), std::string::npos) << doc_small.err;
  EXPECT_EQ(run_cli(d, "summary --max-document-mib 3 " + d.file("t.json")).status, 0);
}

}  // namespace
}  // namespace dftracer::analyze::testing
