// The reader hands every event to exactly one consumer, whatever the layout
// (ours, DFTracer's, Chrome JSON), compression, gzip member layout and split.
#include <gtest/gtest.h>
#include <unistd.h>

#include "trace_files.hpp"

namespace dftracer::analyze::testing {
namespace {

std::vector<std::string> make_events(int n, std::multiset<std::string>* names) {
  std::vector<std::string> evs;
  for (int i = 0; i < n; ++i) {
    std::string name = "function.op_" + std::to_string(i);
    evs.push_back(op_event(i, name, 1.7e15 + i * 10.125, 3.5 + i % 7));
    if (names) names->insert(name);
  }
  return evs;
}

// DFTracer's DFTRACER_TIME_METRIC=NS files: whole nanoseconds become exact
// microseconds (top-level ts/dur, an aggregated row's args durations), nothing else.
TEST(Reader, NanosecondTimesBecomeExactMicroseconds) {
  EXPECT_EQ(ns_times_to_us(R"({"name":"ts","ts":1795769288973953123,"dur":535,"ph":1,"args":{"dur":1000,"x":7}})"),
            R"({"name":"ts","ts":1795769288973953.123,"dur":0.535,"ph":1,"args":{"dur":1.000,"x":7}})");
  EXPECT_EQ(ns_times_to_us(R"({"ph":3,"ts":5,"args":{"dur_sum":12345,"dur_min":0,"dur_max":7,"dft_cnt":3}})"),
            R"({"ph":3,"ts":0.005,"args":{"dur_sum":12.345,"dur_min":0.000,"dur_max":0.007,"dft_cnt":3}})");
  // Not whole non-negative numbers, strings, deeper objects: kept as they are.
  const std::string kept = R"({"ts":"12","dur":-4,"id":9,"args":{"cfg":{"dur":5}},"x":1.5})";
  EXPECT_EQ(ns_times_to_us(kept), kept);
  EXPECT_TRUE(declares_ns_times(
      "{\"name\":\"HH\"}\n{\"name\":\"CM\",\"ph\":4,\"args\":{\"name\":\"time_metric\",\"value\":\"NS\"}}\n"));
  EXPECT_FALSE(declares_ns_times("{\"name\":\"CM\",\"ph\":4,\"args\":{\"name\":\"time_metric\",\"value\":\"US\"}}\n"));
  EXPECT_FALSE(declares_ns_times("{\"name\":\"CM\",\"args\":{\"name\":\"model\",\"value\":\"NS\"}}\n"));
}

TEST(Reader, PlainFileSplitAcrossThreadsReadsEveryEventOnce) {
  TempDir d;
  std::multiset<std::string> want;
  auto text = pfw_text(make_events(2000, &want));
  write_file(d.file("a.pfw"), text);
  for (unsigned threads : {1u, 2u, 3u}) {
    Collected c = collect({d.file("a.pfw")}, threads);
    EXPECT_EQ(c.names, want) << threads << " threads";
    EXPECT_EQ(c.stats.events, 2000u);
    EXPECT_FALSE(c.stats.any_problem()) << c.stats.problems_line();
    EXPECT_EQ(c.stats.json_bytes, text.size());
  }
}

// Truncates the file on its first line, as another process might.
class Truncator : public LineConsumer {
 public:
  explicit Truncator(std::string path) : path_(std::move(path)) {}
  DecodeStatus consume(std::string_view, size_t) override {
    ++lines;
    if (!done_) done_ = ::truncate(path_.c_str(), 4096) == 0;
    return DecodeStatus::Ok;
  }
  uint64_t lines = 0;

 private:
  std::string path_;
  bool done_ = false;
};

// The plain reader copies with pread(): reading a mapping of the file instead
// (measured ~10% less CPU) would die of SIGBUS on the pages cut off here.
TEST(Reader, PlainFileCutShortWhileReadEndsWithoutACrash) {
  TempDir d;
  std::string text = pfw_text(make_events(80000, nullptr));
  ASSERT_GT(text.size(), 17u << 20);  // over two 8 MiB buffers of one piece
  write_file(d.file("a.pfw"), text);
  Truncator t(d.file("a.pfw"));
  ReadOptions opt;
  opt.min_piece_bytes = uint64_t{1} << 40;  // one piece
  try {
    read_traces({d.file("a.pfw")}, {&t}, opt);
  } catch (const InputError& e) {
    SUCCEED() << e.what();  // a clear error is as good as a short read
  }
  EXPECT_GE(t.lines, 1u);
  EXPECT_LT(t.lines, 80000u);  // what the first buffer held, not the whole file
}

// Counts the events it decodes (no names kept: the trace below is large).
class EventCounter : public LineConsumer {
 public:
  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = dec_.decode(line, cap, ev_);
    if (st == DecodeStatus::Ok) ++events;
    return st;
  }
  uint64_t events = 0;

 private:
  EventDecoder dec_;
  Event ev_;
};

// A member too large for one whole-member buffer (libdeflate's, 32 MiB) is
// inflated as a stream, and so are a few after it; every line still comes
// once. Written a piece at a time: the test process stays small (the memory
// tests measure the CLI children it forks).
TEST(Reader, GzipMemberOverTheWholeMemberBufferAndSmallOnesAfter) {
  TempDir d;
  const int kBig = 150000, kSmall = 20, kPerSmall = 1000;
  std::string lines;
  size_t big_bytes = 0;
  {
    GzipStreamWriter w(d.file("a.pfw.gz"), 1);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < kBig; ++i) {
      lines += op_event(i, "function.op", 1.7e15 + i * 10.0, 3.5) + "\n";
      if (lines.size() > (1u << 20) || i + 1 == kBig) {
        big_bytes += lines.size();
        w.feed(lines, i + 1 == kBig ? Z_FINISH : Z_NO_FLUSH);
        lines.clear();
      }
    }
  }
  ASSERT_GT(big_bytes, size_t{33} << 20);
  std::string small;
  for (int m = 0; m < kSmall; ++m) {
    std::string chunk;
    for (int k = 0; k < kPerSmall; ++k) chunk += op_event(k, "function.small", 1.8e15 + k * 10.0, 1.5) + "\n";
    small += gzip_member(chunk);
  }
  std::ofstream(d.file("a.pfw.gz"), std::ios::binary | std::ios::app) << small;
  for (unsigned threads : {1u, 2u}) {
    std::vector<EventCounter> cs(threads);
    std::vector<LineConsumer*> ptrs;
    for (auto& c : cs) ptrs.push_back(&c);
    ReadOptions opt;
    opt.min_piece_bytes = 1;
    ReadStats st = read_traces({d.file("a.pfw.gz")}, ptrs, opt);
    uint64_t n = 0;
    for (auto& c : cs) n += c.events;
    EXPECT_EQ(n, uint64_t{kBig} + kSmall * kPerSmall) << threads << " threads";
    EXPECT_EQ(st.events, n);
    EXPECT_FALSE(st.any_problem()) << st.problems_line();
  }
}

TEST(Reader, UnfinalizedFileKeepsAllEvents) {
  TempDir d;
  std::multiset<std::string> want;
  write_file(d.file("a.pfw"), pfw_text(make_events(500, &want), /*finalized=*/false));
  Collected c = collect({d.file("a.pfw")});
  EXPECT_EQ(c.names, want);
  EXPECT_FALSE(c.stats.any_problem()) << c.stats.problems_line();
}

TEST(Reader, GzipMembersWithAndWithoutIndex) {
  TempDir d;
  std::multiset<std::string> want;
  auto text = pfw_text(make_events(3000, &want));
  for (bool index : {true, false}) {
    for (size_t per_member : {size_t(1), size_t(37), size_t(100000)}) {
      std::string p = d.file("t" + std::to_string(index) + "_" + std::to_string(per_member) + ".pfw.gz");
      write_gz(p, text, per_member, index);
      Collected c = collect({p}, 2);
      EXPECT_EQ(c.names, want) << "index=" << index << " per_member=" << per_member;
      EXPECT_FALSE(c.stats.any_problem()) << c.stats.problems_line();
      EXPECT_EQ(c.stats.json_bytes, text.size());
    }
  }
}

TEST(Reader, LinesStraddlingGzipMembersAreJoined) {
  // A generic gzip writer may cut members anywhere, not at line ends.
  TempDir d;
  std::multiset<std::string> want;
  auto text = pfw_text(make_events(1500, &want));
  for (bool index : {true, false}) {
    std::string out, idx;
    for (size_t pos = 0; pos < text.size(); pos += 777) {
      std::string piece = text.substr(pos, 777);
      std::string m = gzip_member(piece);
      idx += std::to_string(out.size()) + " " + std::to_string(m.size()) + " " + std::to_string(piece.size()) + " 0\n";
      out += m;
    }
    std::string p = d.file(index ? "i.pfw.gz" : "n.pfw.gz");
    write_file(p, out);
    if (index) write_file(p + ".idx", idx);
    for (unsigned threads : {1u, 2u, 4u}) {
      Collected c = collect({p}, threads);
      EXPECT_EQ(c.names, want) << "index=" << index << " threads=" << threads;
      EXPECT_FALSE(c.stats.any_problem()) << c.stats.problems_line();
    }
  }
}

TEST(Reader, ChromeJsonArrayAndObjectPrettyPrinted) {
  TempDir d;
  const char* array_doc = R"([
  {"name": "aten::mm", "ph": "X", "cat": "cpu_op", "pid": 7, "tid": 8,
   "ts": 100.5, "dur": 20.25, "args": {"Input Dims": [[2, 3], [3, 4]]}},
  {"name": "process_name", "ph": "M", "pid": 7, "tid": 0, "args": {"name": "python"}},
  {
    "name": "aten::add", "ph": "X", "cat": "cpu_op", "pid": 7, "tid": 8,
    "ts": 130, "dur": 2
  }
])";
  std::string object_doc = std::string("{\n  \"schemaVersion\": 1,\n  \"traceEvents\": ") + array_doc +
                           ",\n  \"traceName\": \"x\"\n}\n";
  write_file(d.file("a.json"), array_doc);
  write_file(d.file("o.json"), object_doc);
  write_gz(d.file("o.json.gz"), object_doc, 3, false);
  std::multiset<std::string> want{"aten::mm", "process_name", "aten::add"};
  for (const char* f : {"a.json", "o.json", "o.json.gz"}) {
    Collected c = collect({d.file(f)});
    EXPECT_EQ(c.names, want) << f;
    EXPECT_FALSE(c.stats.any_problem()) << c.stats.problems_line();
  }
}

// A directory of traces often holds other JSON (a Trainer's output_dir:
// config.json, trainer_state.json): a valid JSON object without
// "traceEvents" that is no event is not a trace, its nested objects no
// events with bad fields.
TEST(Reader, AJsonObjectThatIsNoTraceGivesNoEventsAndNoErrors) {
  TempDir d;
  write_file(d.file("config.json"), R"({
  "architectures": ["GPT2LMHeadModel"],
  "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "n_layer": 2
})");
  write_file(d.file("trainer_state.json"), "{\n  \"log_history\": [{\"loss\": 5.4, \"step\": 2}],\n  \"max_steps\": 8\n}\n");
  // json.dump's one line, with arrays of numbers and objects
  write_file(d.file("loop.json"), "{\"iterations\": [[1.5, 2.5, true], {\"name\": \"x\"}], \"forward_s\": 0.1}");
  write_file(d.file("t.pfw"), pfw_text({op_event(1, "x", 1, 1)}));
  // a trace of one event on one line is still a trace
  write_file(d.file("one.json"), R"({"name":"y","cat":"c","ph":"X","ts":1,"dur":1,"pid":1,"tid":1})");
  Collected c = collect(expand_inputs({d.path().string()}));
  EXPECT_EQ(c.names, (std::multiset<std::string>{"x", "y"}));
  EXPECT_FALSE(c.stats.any_problem()) << c.stats.problems_line();
}

TEST(Reader, DirectoriesAndGlobsExpandToTraceFiles) {
  TempDir d;
  fs::create_directories(d.path() / "sub");
  write_file(d.file("a.pfw"), pfw_text({op_event(1, "x", 1, 1)}));
  write_file(d.file("sub/b.pfw.gz"), gzip_member(pfw_text({op_event(2, "y", 1, 1)})));
  write_file(d.file("notes.txt"), "not a trace");
  auto files = expand_inputs({d.path().string()});
  ASSERT_EQ(files.size(), 2u);
  auto globbed = expand_inputs({d.file("*.pfw"), d.file("a.pfw")});
  EXPECT_EQ(globbed.size(), 1u);  // the same file named twice is read once
  Collected c = collect(files);
  EXPECT_EQ(c.names, (std::multiset<std::string>{"x", "y"}));
}

TEST(Reader, MissingPathsAreErrors) {
  TempDir d;
  EXPECT_THROW(expand_inputs({d.file("nope.pfw")}), InputError);
  EXPECT_THROW(expand_inputs({d.file("*.nothing")}), InputError);
}

TEST(Reader, DecoderAcceptsQuotedNumbersAndRejectsWrongTypes) {
  EventDecoder dec;
  Event ev;
  std::string line;  // outlives each call: ev's text views point into it
  auto run = [&](std::string s) {
    size_t n = s.size();
    s.resize(n + kLinePadding);
    line = std::move(s);
    return dec.decode(std::string_view(line.data(), n), line.size(), ev);
  };
  ASSERT_EQ(run(R"({"id":"0","name":"open","cat":"POSIX","pid":"12","tid":"13","ts":"100","dur":"7","ph":"X"})"),
            DecodeStatus::Ok);
  EXPECT_EQ(ev.pid, 12);
  EXPECT_EQ(ev.pid_text, "12");
  EXPECT_EQ(ev.dur_ns, 7000);
  ASSERT_EQ(run(R"({"name":"mm","ph":"X","ts":1.5,"dur":0.125,"pid":1,"tid":2,"args":{"flops":"1000","bytes":64,"phase":"backward","graph":3}})"),
            DecodeStatus::Ok);
  EXPECT_DOUBLE_EQ(ev.flops, 1000);
  EXPECT_DOUBLE_EQ(ev.bytes, 64);
  EXPECT_EQ(ev.phase, "backward");
  EXPECT_EQ(ev.graph, "3");
  EXPECT_EQ(run(R"({"name":5,"ph":"X","dur":1})"), DecodeStatus::BadField);
  EXPECT_EQ(run(R"({"name":"a","ph":"X","dur":"abc"})"), DecodeStatus::BadField);
  EXPECT_EQ(run(R"({"name":"a","ph":"X","dur":-1})"), DecodeStatus::BadField);
  EXPECT_EQ(run(R"({"name":"a","ph":"X","dur":1}})"), DecodeStatus::Malformed);
  EXPECT_EQ(run(R"({"name":"a","ph":"X","du)"), DecodeStatus::Malformed);
  EXPECT_EQ(run("[1,2]"), DecodeStatus::Malformed);
  EXPECT_EQ(strip_trace_line("  {\"a\":1},\r"), "{\"a\":1}");
  EXPECT_EQ(strip_trace_line("]"), "");
}

}  // namespace
}  // namespace dftracer::analyze::testing
