// The JSON-lines formatter on its own, into a MemorySink: every kind of
// record and every arg type it handles, the preamble and the end. Every line
// is parsed back with simdjson (not with the code under test), and the
// framing is pinned byte for byte: "[" alone on the first line, one bare
// object a line (no trailing comma, as DFTracer writes), "]\n" after `end`.
// A change here is a change to every trace file.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dftracer/dftracer.h"
#include "json_lines_formatter.h"
#include "memory_sink.h"
#include "string_table.h"
#include "trace_file.h"

namespace dftracer {
namespace {

uint32_t id(const char* s) { return StringTable::instance().intern(s, std::strlen(s)); }

// Builds one record (header, arg slots, inline bytes) the way the C API does.
class RecordBuilder {
 public:
  RecordBuilder(RecordKind kind, const char* name, const char* cat, uint64_t start, uint64_t end, uint8_t flags) {
    RecordHeader h{};
    h.start = start;
    h.end = end;
    h.name = id(name);
    h.cat = id(cat);
    h.kind = kind;
    h.flags = flags;
    slots_.resize(2 * kSlot);
    std::memcpy(slots_.data(), &h, sizeof h);
  }
  RecordBuilder& arg(const char* key, dft_arg_type type, uint64_t value) {
    ArgSlot a{};
    a.key = key != nullptr ? id(key) : 0;
    a.type = static_cast<uint8_t>(type);
    a.value = value;
    push(&a, sizeof a);
    ++nargs_;
    return *this;
  }
  RecordBuilder& bytes(const char* key, const std::string& s) {
    ArgSlot a{};
    a.key = id(key);
    a.type = DFT_ARG_BYTES;
    a.len = static_cast<uint16_t>(s.size());
    push(&a, sizeof a);
    size_t padded = (s.size() + kSlot - 1) / kSlot * kSlot;
    size_t at = slots_.size();
    slots_.resize(at + padded);
    std::memcpy(slots_.data() + at, s.data(), s.size());
    ++nargs_;
    return *this;
  }
  const RecordHeader* get() {
    RecordHeader* h = reinterpret_cast<RecordHeader*>(slots_.data());
    h->nslots = static_cast<uint16_t>(slots_.size() / kSlot);
    h->nargs = nargs_;
    return h;
  }

 private:
  void push(const void* p, size_t n) {
    size_t at = slots_.size();
    slots_.resize(at + n);
    std::memcpy(slots_.data() + at, p, n);
  }
  // 16-byte aligned storage, as in a chunk.
  struct alignas(16) Slot { unsigned char b[kSlot]; };
  struct Bytes {
    std::vector<Slot> v;
    size_t n = 0;
    unsigned char* data() { return v.front().b; }
    size_t size() const { return n; }
    void resize(size_t m) { v.resize((m + kSlot - 1) / kSlot); n = m; }
  } slots_;
  uint32_t nargs_ = 0;
};

SessionInfo test_session() {
  SessionInfo info;
  info.pid = 4242;
  info.ppid = 1;
  info.main_tid = 4243;
  info.start_ns = 1700000000123456789ull;
  info.hostname = "node-1";
  info.cmdline = "prog --name \"x\"";
  info.exe = "/opt/prog";
  info.app = "prog";
  info.cwd = "/work";
  info.config.data_dir = "/data";
  info.config.whole_micros = false;  // the byte-for-byte lines show nanosecond fractions
  info.config.inc_metadata = true;   // the full form: SH/FH lines, "hhash" in every event
  return info;
}

// Formats like the writer does: every call's output handed to the sink as
// one chunk with its line count.
struct Harness {
  explicit Harness(const SessionInfo& info) : fmt(info) {}
  void hand_over() {
    sink.write_chunk(out.data(), out.size(), fmt.lines() - handed);
    handed = fmt.lines();
    out.clear();
  }
  JsonLinesFormatter fmt;
  MemorySink sink;
  OutBuffer out{64};
  uint64_t handed = 0;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    EXPECT_NE(nl, std::string::npos) << "the text must end in a newline";
    if (nl == std::string::npos) break;
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return lines;
}

// A process started with torchrun's variables says which rank it
// is in its first chunk: the rank keys as JSON numbers, the host, and the
// process name "rank R (pid P)" in place of "<app> (<pid>)".
TEST(JsonLinesFormatter, RankFromTheEnvironmentInThePreamble) {
  SessionInfo info = test_session();
  info.config.inc_metadata = false;
  info.config.rank = 3;
  info.config.local_rank = 1;
  info.config.world_size = 8;
  info.config.group_rank = 1;
  Harness h(info);
  h.fmt.preamble(&h.out);
  h.hand_over();
  std::vector<std::string> lines = split_lines(h.sink.bytes());
  ASSERT_EQ(lines.size(), 9u) << h.sink.bytes();
  std::vector<dftracer_test::Event> events =
      dftracer_test::parse_events(std::vector<std::string>(lines.begin() + 1, lines.end()));
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"HH", "rank", "local_rank", "world_size", "group_rank", "hostname",
                                             "process_name", "start"}));
  const std::string hh = lines[1].substr(lines[1].find("\"hhash\":\""), 26);
  EXPECT_EQ(lines[2], "{\"id\":1,\"name\":\"rank\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":4243,\"ph\":\"M\","
                      "\"args\":{" + hh + ",\"name\":\"rank\",\"value\":3}}");
  EXPECT_NE(lines[4].find("\"name\":\"world_size\",\"value\":8}}"), std::string::npos) << lines[4];
  EXPECT_NE(lines[6].find("\"name\":\"hostname\",\"value\":\"node-1\"}}"), std::string::npos) << lines[6];
  EXPECT_EQ(lines[7], "{\"id\":6,\"name\":\"process_name\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":4243,"
                      "\"ph\":\"M\",\"args\":{\"name\":\"rank 3 (pid 4242)\"}}");
}

TEST(JsonLinesFormatter, EveryRecordKindAndArgTypeWithExactFraming) {
  Harness h(test_session());
  h.fmt.preamble(&h.out);
  h.hand_over();
  h.fmt.thread_name(7, "worker \"1\"", &h.out);

  double one_and_half = 1.5, nan = std::nan("");
  uint64_t d1, d2;
  std::memcpy(&d1, &one_and_half, sizeof d1);
  std::memcpy(&d2, &nan, sizeof d2);
  RecordBuilder complete(RecordKind::kComplete, "op", "cat", 1700000000000001500ull, 2500, kTimeIsNs);
  complete.arg("i", DFT_ARG_INT, static_cast<uint64_t>(int64_t{-5}))
      .arg("u", DFT_ARG_UINT, 7)
      .arg("b", DFT_ARG_BOOL, 1)
      .arg("f", DFT_ARG_BOOL, 0)
      .arg("d", DFT_ARG_DOUBLE, d1)
      .arg("nan", DFT_ARG_DOUBLE, d2)
      .arg("s", DFT_ARG_STR, id("say \"hi\"\n"))
      .arg("h", DFT_ARG_HASH, 0xabc)
      .bytes("by", "a\tb\x01")
      .arg(nullptr, DFT_ARG_JSON, id("\"j\":{\"x\":[1,2]}"));
  h.fmt.event(complete.get(), 7, &h.out);
  RecordBuilder instant(RecordKind::kInstant, "mark", "cat", 1700000000000002000ull, 0, kTimeIsNs);
  h.fmt.event(instant.get(), 7, &h.out);
  RecordBuilder meta(RecordKind::kMetadata, "step", "dftracer", 0, 0, 0);
  meta.arg("name", DFT_ARG_STR, id("step")).arg("value", DFT_ARG_INT, 3);
  h.fmt.event(meta.get(), 7, &h.out);
  RecordBuilder tname(RecordKind::kThreadName, "thread_name", "dftracer", 0, 0, 0);
  tname.arg("name", DFT_ARG_STR, id("loader"));
  h.fmt.event(tname.get(), 7, &h.out);
  // Flow events carry ticks: their ts depends on the clock, so they are
  // checked field by field below, not byte for byte.
  RecordBuilder flow_s(RecordKind::kFlowStart, "flow", "cat", 0, 99, 0);
  h.fmt.event(flow_s.get(), 7, &h.out);
  RecordBuilder flow_f(RecordKind::kFlowEnd, "flow", "cat", 0, 99, 0);
  h.fmt.event(flow_f.get(), 8, &h.out);
  h.hand_over();
  h.fmt.end(4243, 1700000000999000000ull, h.fmt.lines(), 3, &h.out);
  h.hand_over();
  h.sink.close();

  const std::string& text = h.sink.bytes();
  std::vector<std::string> lines = split_lines(text);
  ASSERT_EQ(lines.size(), 16u) << text;

  // Framing: "[" alone, then one bare object a line, then "]" alone.
  EXPECT_EQ(lines.front(), "[");
  EXPECT_EQ(lines.back(), "]");
  for (size_t i = 1; i + 1 < lines.size(); ++i) EXPECT_EQ(lines[i].back(), '}') << lines[i];

  // Every line parses as one JSON object.
  std::vector<std::string> event_lines = dftracer_test::event_lines(text);
  ASSERT_EQ(event_lines.size(), 14u);
  std::vector<dftracer_test::Event> events = dftracer_test::parse_events(event_lines);
  ASSERT_EQ(events.size(), 14u);
  size_t elements = 0;
  EXPECT_EQ(dftracer_test::finalized_trace_error(text, &elements), "");
  EXPECT_EQ(elements, 14u);

  // The preamble (process metadata, process name, `start`), the events in
  // the order given, `end`.
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"HH", "SH", "SH", "FH", "process_name", "start", "thread_name", "op",
                                             "mark", "step", "thread_name", "flow", "flow", "end"}));

  // Byte for byte, the lines whose content does not depend on the clock.
  std::string hhash;
  {
    simdjson::dom::parser p;
    simdjson::dom::element first = p.parse(event_lines[0]);
    hhash = std::string(std::string_view(first["args"]["hhash"]));
  }
  EXPECT_EQ(lines[7], "{\"id\":6,\"name\":\"thread_name\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":7,\"ph\":\"M\","
                      "\"args\":{\"name\":\"worker \\\"1\\\"\"}}");
  EXPECT_EQ(lines[8], "{\"id\":7,\"name\":\"op\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"ts\":1700000000000001.5,"
                      "\"dur\":2.5,\"ph\":\"X\",\"args\":{\"hhash\":\"" + hhash + "\",\"i\":-5,\"u\":7,\"b\":true,"
                      "\"f\":false,\"d\":1.5,\"nan\":null,\"s\":\"say \\\"hi\\\"\\n\",\"h\":\"0000000000000abc\","
                      "\"by\":\"a\\tb\\u0001\",\"j\":{\"x\":[1,2]}}}");
  EXPECT_EQ(lines[9], "{\"id\":8,\"name\":\"mark\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"ts\":1700000000000002,"
                      "\"ph\":\"i\",\"s\":\"t\",\"args\":{\"hhash\":\"" + hhash + "\"}}");
  EXPECT_EQ(lines[10], "{\"id\":9,\"name\":\"step\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":7,\"ph\":\"M\","
                       "\"args\":{\"hhash\":\"" + hhash + "\",\"name\":\"step\",\"value\":3}}");
  EXPECT_EQ(lines[11], "{\"id\":10,\"name\":\"thread_name\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":7,\"ph\":\"M\","
                       "\"args\":{\"hhash\":\"" + hhash + "\",\"name\":\"loader\"}}");
  EXPECT_EQ(lines[14], "{\"id\":11,\"name\":\"end\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":4243,"
                       "\"ts\":1700000000999000,\"dur\":0,\"ph\":\"X\",\"args\":{\"hhash\":\"" + hhash +
                       "\",\"num_events\":3,\"dropped\":3}}");  // start, op, mark: as DFTracer 2.x counts
  EXPECT_EQ(lines[1], "{\"id\":0,\"name\":\"HH\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":4243,\"ph\":\"M\","
                      "\"args\":{\"hhash\":\"" + hhash + "\",\"name\":\"node-1\",\"value\":\"" + hhash + "\"}}");
  EXPECT_EQ(lines[5], "{\"id\":4,\"name\":\"process_name\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":4243,"
                      "\"ph\":\"M\",\"args\":{\"name\":\"prog (4242)\"}}");
  EXPECT_EQ(lines[6].rfind("{\"id\":5,\"name\":\"start\",\"cat\":\"dftracer\",\"pid\":4242,\"tid\":4243,"
                           "\"ts\":1700000000123456.789,\"dur\":0,\"ph\":\"X\",\"args\":{\"hhash\":\"" + hhash +
                           "\",\"cmd_hash\":\"", 0),
            0u)
      << lines[6];
  EXPECT_NE(lines[6].find(",\"ppid\":1,\"p_idx\":-1,\"version\":\""), std::string::npos) << lines[6];
  EXPECT_NE(lines[6].find(",\"init\":\"FUNCTION\",\"data_dir\":\"/data\",\"compression\":1,\"clock\":\""),
            std::string::npos)
      << lines[6];
  EXPECT_NE(lines[6].find(",\"clock_anchor_ns\":"), std::string::npos) << lines[6];  // the clock anchor

  // Flow events: no event index; "id" is the flow id.
  EXPECT_EQ(lines[12].rfind("{\"name\":\"flow\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"id\":99,\"ts\":", 0), 0u)
      << lines[12];
  EXPECT_NE(lines[12].find(",\"ph\":\"s\"}"), std::string::npos) << lines[12];
  EXPECT_NE(lines[13].find(",\"tid\":8,\"id\":99,"), std::string::npos) << lines[13];
  EXPECT_NE(lines[13].find(",\"ph\":\"f\",\"bp\":\"e\"}"), std::string::npos) << lines[13];

  // The sink got each hand-over as one chunk, with its line count.
  EXPECT_EQ(h.sink.chunk_lines(), (std::vector<uint64_t>{6, 7, 1}));
  EXPECT_TRUE(h.sink.closed());
}

// A record arg keyed "hhash" used to be written after ours: the same key twice.
TEST(JsonLinesFormatter, AUserHhashArgIsWrittenAsUserHhash) {
  Harness h(test_session());
  RecordBuilder r(RecordKind::kComplete, "op", "cat", 1000, 2000, kTimeIsNs);
  r.arg("hhash", DFT_ARG_STR, id("mine")).arg("x", DFT_ARG_INT, 1);
  h.fmt.event(r.get(), 7, &h.out);
  h.hand_over();
  std::string line = h.sink.bytes();
  size_t ours = line.find("\"args\":{\"hhash\":\"");
  ASSERT_NE(ours, std::string::npos) << line;
  std::string host = line.substr(ours + std::strlen("\"args\":{\"hhash\":\""), 16);
  EXPECT_EQ(line, "{\"id\":0,\"name\":\"op\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"ts\":1,\"dur\":2,"
                  "\"ph\":\"X\",\"args\":{\"hhash\":\"" + host + "\",\"user_hhash\":\"mine\",\"x\":1}}\n");
}

// dft_complete_ns(start, dur) with start + dur past 2^64 ns used to wrap the
// end to before the start (written as "dur":0); it now stops at 2^64 - 1.
TEST(JsonLinesFormatter, AnEndPastTwoToTheSixtyFourDoesNotWrap) {
  Harness h(test_session());
  const uint64_t start = UINT64_MAX - 999;  // 1000 ns below the top
  RecordBuilder r(RecordKind::kComplete, "op", "cat", start, 5000, kTimeIsNs);
  h.fmt.event(r.get(), 7, &h.out);
  h.hand_over();
  const std::string& line = h.sink.bytes();
  EXPECT_NE(line.find(",\"ts\":18446744073709550.616,\"dur\":0.999,"), std::string::npos) << line;
}

}  // namespace
}  // namespace dftracer

namespace dftracer {
namespace {

// The default (Config{}): whole microseconds, both ends floored, as DFTracer
// writes them: 1.5 us from ...001.5 ends at ...003.0 -> ts ...001, dur 2.
TEST(JsonLinesFormatter, WholeMicrosecondsByDefaultFlooringBothEnds) {
  SessionInfo info = test_session();
  info.config = Config{};
  Harness h(info);
  RecordBuilder r(RecordKind::kComplete, "op", "cat", 1700000000000001500ull, 1500, kTimeIsNs);
  h.fmt.event(r.get(), 7, &h.out);
  RecordBuilder inner(RecordKind::kComplete, "in", "cat", 1700000000000001900ull, 1000, kTimeIsNs);
  h.fmt.event(inner.get(), 7, &h.out);
  h.hand_over();
  std::vector<std::string> lines = split_lines(h.sink.bytes());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(",\"ts\":1700000000000001,\"dur\":2,"), std::string::npos) << lines[0];
  // 1.9 .. 2.9 us: floored to 1 .. 2, so it stays inside its parent (1 .. 3).
  EXPECT_NE(lines[1].find(",\"ts\":1700000000000001,\"dur\":1,"), std::string::npos) << lines[1];
}

}  // namespace
}  // namespace dftracer

namespace dftracer {
namespace {

// DFTRACER_INC_METADATA unset (pydftracer's default): no SH/FH lines and no
// "hhash" in events' args (an event without args of its own has no "args"),
// but HH, the names and metadata events keep theirs, and the capture
// sources' own args stay (the analysis needs them: a deliberate difference
// from pydftracer, whose events then carry no args at all).
TEST(JsonLinesFormatter, WithoutIncMetadataNoShFhAndNoHostHashInEvents) {
  SessionInfo info = test_session();
  info.config.inc_metadata = false;
  Harness h(info);
  h.fmt.preamble(&h.out);
  RecordBuilder bare(RecordKind::kComplete, "bare", "cat", 1000, 2000, kTimeIsNs);
  h.fmt.event(bare.get(), 7, &h.out);
  RecordBuilder op(RecordKind::kComplete, "op", "cat", 1000, 2000, kTimeIsNs);
  op.arg(nullptr, DFT_ARG_JSON, id("\"phase\":\"forward\"")).arg("step", DFT_ARG_INT, 3);
  h.fmt.event(op.get(), 7, &h.out);
  RecordBuilder cm(RecordKind::kMetadata, "CM", "dftracer", 0, 0, 0);
  cm.arg("name", DFT_ARG_STR, id("model")).arg("value", DFT_ARG_STR, id("mlp"));
  h.fmt.event(cm.get(), 7, &h.out);
  h.fmt.end(4243, 1700000000999000000ull, 0, 0, &h.out);
  h.hand_over();
  std::vector<std::string> lines = split_lines(h.sink.bytes());
  std::vector<std::string> names;
  for (const auto& e : dftracer_test::parse_events(dftracer_test::event_lines(h.sink.bytes()))) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"HH", "process_name", "start", "bare", "op", "CM", "end"}));
  EXPECT_NE(lines[1].find("\"args\":{\"hhash\":"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[4], "{\"id\":3,\"name\":\"bare\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"ts\":1,\"dur\":2,"
                      "\"ph\":\"X\"}");
  EXPECT_EQ(lines[5], "{\"id\":4,\"name\":\"op\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"ts\":1,\"dur\":2,"
                      "\"ph\":\"X\",\"args\":{\"phase\":\"forward\",\"step\":3}}");
  EXPECT_NE(lines[6].find("\"name\":\"CM\",\"cat\":\"dftracer\""), std::string::npos) << lines[6];
  EXPECT_NE(lines[6].find("\"args\":{\"hhash\":"), std::string::npos) << lines[6];
  EXPECT_EQ(lines[3].find("hhash"), std::string::npos) << lines[3];  // start
  EXPECT_EQ(lines[7].find("hhash"), std::string::npos) << lines[7];  // end
  EXPECT_EQ(dftracer_test::finalized_trace_error(h.sink.bytes(), nullptr), "");
}

// A counter record is a Chrome "ph":"C" event whose args are the series'
// values and nothing else (no host hash: Perfetto would draw it as a series).
// No sample carries an "id" (a counter's id is part of its track's name in
// the Trace Event Format: one track per sample in Perfetto), the memory
// track's and any other category's alike.
TEST(JsonLinesFormatter, ACounterIsPhCWithOnlyItsSeries) {
  Harness h(test_session());
  RecordBuilder r(RecordKind::kCounter, "memory", "memory", 3000, 3000, kTimeIsNs);
  r.arg("cpu", DFT_ARG_UINT, 4096).arg("cuda:0", DFT_ARG_UINT, 512);
  h.fmt.event(r.get(), 7, &h.out);
  RecordBuilder other(RecordKind::kCounter, "queue", "app", 4000, 4000, kTimeIsNs);
  other.arg("depth", DFT_ARG_UINT, 3);
  h.fmt.event(other.get(), 7, &h.out);
  h.hand_over();
  EXPECT_EQ(h.sink.bytes(), "{\"name\":\"memory\",\"cat\":\"memory\",\"pid\":4242,\"tid\":7,\"ts\":3,"
                            "\"ph\":\"C\",\"args\":{\"cpu\":4096,\"cuda:0\":512}}\n"
                            "{\"name\":\"queue\",\"cat\":\"app\",\"pid\":4242,\"tid\":7,\"ts\":4,"
                            "\"ph\":\"C\",\"args\":{\"depth\":3}}\n");
  // The next event's index runs on from the last one written (none above).
  RecordBuilder op(RecordKind::kComplete, "op", "cat", 5000, 6000, kTimeIsNs);
  h.fmt.event(op.get(), 7, &h.out);
  h.hand_over();
  EXPECT_NE(h.sink.bytes().find("{\"id\":0,\"name\":\"op\""), std::string::npos) << h.sink.bytes();
}

// The memory capture's block events are instants without "id" and "s" (an
// instant's scope is the thread by default): the bytes the writer formats
// and compresses for about half the events of a traced training step. Other
// instants keep both, and the ids of the other events run on without a gap.
TEST(JsonLinesFormatter, MemoryBlockInstantsCarryNoIdOrScope) {
  SessionInfo info = test_session();
  info.config.inc_metadata = false;
  Harness h(info);
  RecordBuilder op(RecordKind::kComplete, "op", "cat", 1000, 2000, kTimeIsNs);
  h.fmt.event(op.get(), 7, &h.out);
  RecordBuilder alloc(RecordKind::kInstant, "alloc", "memory", 3000, 0, kTimeIsNs);
  alloc.arg("addr", DFT_ARG_UINT, 94673798908928ull).arg("size", DFT_ARG_UINT, 16384).arg("op", DFT_ARG_STR,
                                                                                             id("aten::mm"));
  h.fmt.event(alloc.get(), 7, &h.out);
  RecordBuilder free_(RecordKind::kInstant, "free", "memory", 4000, 0, kTimeIsNs);
  free_.arg("addr", DFT_ARG_UINT, 94673798908928ull);
  h.fmt.event(free_.get(), 7, &h.out);
  RecordBuilder mark(RecordKind::kInstant, "mark", "cat", 5000, 0, kTimeIsNs);
  h.fmt.event(mark.get(), 7, &h.out);
  RecordBuilder other(RecordKind::kInstant, "note", "memory", 6000, 0, kTimeIsNs);  // args of any other key
  other.arg("addr", DFT_ARG_UINT, 1).arg("why", DFT_ARG_STR, id("x")).arg("total", DFT_ARG_INT, -2);
  h.fmt.event(other.get(), 7, &h.out);
  RecordBuilder dev(RecordKind::kInstant, "alloc", "memory", 7000, 0, kTimeIsNs);
  dev.arg("addr", DFT_ARG_UINT, 2).arg("size", DFT_ARG_UINT, 0).arg("total", DFT_ARG_UINT, 18446744073709551615ull)
      .arg("dev", DFT_ARG_STR, id("cuda:0"));
  h.fmt.event(dev.get(), 7, &h.out);
  h.hand_over();
  EXPECT_EQ(h.sink.bytes(),
            "{\"id\":0,\"name\":\"op\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"ts\":1,\"dur\":2,\"ph\":\"X\"}\n"
            "{\"name\":\"alloc\",\"cat\":\"memory\",\"pid\":4242,\"tid\":7,\"ts\":3,\"ph\":\"i\","
            "\"args\":{\"addr\":94673798908928,\"size\":16384,\"op\":\"aten::mm\"}}\n"
            "{\"name\":\"free\",\"cat\":\"memory\",\"pid\":4242,\"tid\":7,\"ts\":4,\"ph\":\"i\","
            "\"args\":{\"addr\":94673798908928}}\n"
            "{\"id\":1,\"name\":\"mark\",\"cat\":\"cat\",\"pid\":4242,\"tid\":7,\"ts\":5,\"ph\":\"i\",\"s\":\"t\"}\n"
            "{\"name\":\"note\",\"cat\":\"memory\",\"pid\":4242,\"tid\":7,\"ts\":6,\"ph\":\"i\","
            "\"args\":{\"addr\":1,\"why\":\"x\",\"total\":-2}}\n"
            "{\"name\":\"alloc\",\"cat\":\"memory\",\"pid\":4242,\"tid\":7,\"ts\":7,\"ph\":\"i\","
            "\"args\":{\"addr\":2,\"size\":0,\"total\":18446744073709551615,\"dev\":\"cuda:0\"}}\n");
  EXPECT_EQ(h.fmt.lines(), 6u);

  // With DFTRACER_INC_METADATA=1 the host hash comes first, as in every event's args.
  Harness full(test_session());
  full.fmt.event(alloc.get(), 7, &full.out);
  full.hand_over();
  EXPECT_NE(full.sink.bytes().find("\"ph\":\"i\",\"args\":{\"hhash\":\""), std::string::npos) << full.sink.bytes();
  EXPECT_NE(full.sink.bytes().find("\",\"addr\":94673798908928,\"size\":16384,\"op\":\"aten::mm\"}}\n"),
            std::string::npos)
      << full.sink.bytes();
}

}  // namespace
}  // namespace dftracer

// The buffer is allocated, not zero-filled, and grows by copying what it
// holds: every byte appended across many growths reads back in order.
TEST(OutBuffer, KeepsEveryByteAcrossGrowth) {
  dftracer::OutBuffer out{1};
  std::string expect;
  for (int i = 0; i < 5000; ++i) {
    out.u64(static_cast<uint64_t>(i));
    out.ch(',');
    expect += std::to_string(i) + ",";
  }
  ASSERT_EQ(out.size(), expect.size());
  EXPECT_EQ(std::string(out.data(), out.size()), expect);
  out.truncate(3);
  out.lit("xy");
  EXPECT_EQ(std::string(out.data(), out.size()), "0,1xy");
}

// Integers are written in place from their digit count: every length and
// each side of every power of ten, 0 and the largest.
TEST(OutBuffer, WritesEveryDigitCountExactly) {
  std::vector<uint64_t> values = {0, UINT64_MAX, UINT64_MAX - 1};
  for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10) values.insert(values.end(), {p - 1, p, p + 1, p * 10 - 1});
  values.push_back(10000000000000000000ull);
  uint64_t x = 88172645463325252ull;  // xorshift64: values of every length, zeros inside them
  for (int i = 0; i < 4000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    values.push_back(x >> (i % 64));
  }
  dftracer::OutBuffer out{1};
  std::string expect;
  for (uint64_t v : values) {
    out.u64(v);
    out.ch(' ');
    out.i64(-static_cast<int64_t>(v >> 1));
    out.ch(' ');
    expect += std::to_string(v) + " " + std::to_string(-static_cast<int64_t>(v >> 1)) + " ";
  }
  EXPECT_EQ(std::string(out.data(), out.size()), expect);
}
