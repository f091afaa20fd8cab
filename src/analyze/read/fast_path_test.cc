// The hand-written line decoder (event_fast_path.hpp) against simdjson: on
// well-formed lines of every layout we know, and on every one-byte mutation and
// every cut of them, EventDecoder::decode (fast path, then simdjson) must give
// exactly what simdjson alone gives -- same status, same fields.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "decoded_event_text.hpp"
#include "event_decoder.hpp"
#include "event_fast_path.hpp"

using namespace dftracer::analyze;

namespace {

struct Outcome {
  std::string both;    // decode(): fast path, then simdjson
  std::string ref;     // simdjson alone
  bool fast_took = false;
};

Outcome run(EventDecoder& dec, const std::string& raw) {
  std::string_view s = strip_trace_line(raw);
  std::string padded(s);
  padded.resize(s.size() + kLinePadding, 'x');  // padding content must not matter
  std::string_view line(padded.data(), s.size());
  Outcome o;
  Event ev;
  DecodeStatus st = dec.decode(line, padded.size(), ev);
  o.both = describe(ev, st);
  st = dec.decode_with_simdjson(line, padded.size(), ev);
  o.ref = describe(ev, st);
  DecodeStatus fs;
  static const ArgCapture capture = compared_extra_args();
  o.fast_took = !line.empty() && line.front() == '{' && fast_decode_line(line, ev, fs, &capture);
  return o;
}

// Well-formed lines: ours (bench generator), DFTracer v1 (quoted numbers),
// metadata, torch.profiler-style string pids, nested args, escapes, odd numbers.
const std::vector<std::string> kLines = {
    R"({"id":0,"name":"function.aten.relu.default","cat":"torch","pid":3537780,"tid":3537781,"ts":1727387307981693.000,"dur":85.329,"ph":"X","args":{"hhash":"8f3a9c2e11d04b7a","grad_enabled":false,"phase":"inference","graph":2,"node":240,"module":"model.encoder.layer.0.mlp","shapes":"[[64, 768], [768, 3072]]","dtype":"float32","flops":129171456,"bytes":336384,"seq_nr":720,"epoch":0,"step":0}},)",
    R"({"id":"12","name":"read","cat":"POSIX","pid":"1338896","tid":"1338896","ts":"1695149522946391","dur":"12","ph":"X","args":{"hostname":"corona171","fname":"/p/gpfs1/iopp/temp/dlio/train/img_01_of_32.npz","size":"4096"}})",
    R"({"id":1,"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"python3 train.py"}})",
    R"({"name":"thread_name","ph":"M","pid":7,"tid":9,"args":{"name":"worker-1","sort_index":-3}})",
    R"({"name":"aten::mm","cat":"cpu_op","ph":"X","pid":"Spawned process","tid":"stream 7","ts":1.5e3,"dur":0.25,"args":{"Input Dims":[[64,768],[768,3072]],"nested":{"a":[1,{"b":null}],"c":true},"External id":5}})",
    R"({ "name" : "op" , "ph" : "X" , "ts" : -0.0 , "dur" : 0 , "pid" : -12 , "tid" : 100 , "args" : { "module" : 7 , "phase" : true , "graph" : false } })",
    R"({"name":"a\"b","ph":"X","ts":1,"dur":2,"args":{"s":"tab\there \u00e9 \\ \/"}})",
    R"({"name":"op","ph":"X","ts":123456789012345678901234567890,"dur":1.7976931348623157e308,"args":{"flops":4.9e-324,"bytes":"123"}})",
    R"({"name":"op","ph":"X","ts":0.1,"dur":0.30000000000000004,"pid":123456789012345,"tid":1234567890123456789,"args":{"flops":9007199254740993,"bytes":1e22}})",
    R"({"name":"op","ph":"X","ts":1.25,"dur":-1})",
    R"({"name":"op","ph":"X","ts":1,"dur":1,"pid":1e2,"tid":12.0})",
    R"({"name":"op","ts":1,"dur":2})",
    R"({"name":"op","ph":"X","dur":2,"name":5})",
    R"({"name":"op","ph":"X","ts":1,"dur":2,"args":{"module":"m","module":"n","flops":1,"flops":null}})",
    R"({"name":"op","ph":"X","ts":1,"dur":2,"args":[1,2]})",
    R"({"name":"op","ph":"X","cat":5,"ts":"abc","dur":"1.5"})",
    R"({})",
    R"({"name":"h\u00e9llo","ph":"X","ts":1,"dur":2})",
    "{\"name\":\"caf\xc3\xa9\",\"ph\":\"X\",\"ts\":1,\"dur\":2}",
    // Schema args of every kind and captured args.<key> values (arrays, objects, numbers).
    R"({"name":"mm","ph":"X","ts":2,"dur":1,"args":{"shapes":[[8, 16], [16,32]],"step":3,"epoch":"1","source":"x.py:7","dtype":"float32","s":null,"nested":{"a" : [1]},"size":-2.5e3}})",
};

// Lines from DFTracer's sample traces, when the shared data is there.
std::vector<std::string> sample_lines(size_t max_lines) {
  std::vector<std::string> out;
  for (const char* name : {"test-2023.pfw.gz", "cm1-DEFAULT-3537780-preload.pfw.gz"}) {
    std::string path = std::string(DFTRACER_SAMPLES_DIR) + "/" + name;
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) continue;
    char buf[1 << 16];
    size_t taken = 0;
    while (taken < max_lines && gzgets(f, buf, sizeof buf)) {
      std::string l(buf);
      if (l.size() > 2) {
        out.push_back(l);
        ++taken;
      }
    }
    gzclose(f);
  }
  return out;
}

}  // namespace

TEST(FastPath, TakesTheCommonLayoutsAndAgreesWithSimdjson) {
  EventDecoder dec;
  dec.capture_args(compared_extra_args());
  for (size_t i = 0; i < kLines.size(); ++i) {
    Outcome o = run(dec, kLines[i]);
    EXPECT_EQ(o.both, o.ref) << "line " << i << ": " << kLines[i];
  }
  // The lines the benchmark and the tracer write must not fall back to simdjson.
  for (size_t i : {0, 2, 3, 4, 5, 9, 19}) EXPECT_TRUE(run(dec, kLines[i]).fast_took) << kLines[i];
  // Escapes in kept strings, non-ASCII, quoted numbers and non-integral ids are simdjson's.
  for (size_t i : {1, 6, 10, 17, 18}) EXPECT_FALSE(run(dec, kLines[i]).fast_took) << kLines[i];
}

TEST(FastPath, AgreesWithSimdjsonOnSampleTraces) {
  EventDecoder dec;
  dec.capture_args(compared_extra_args());
  std::vector<std::string> lines = sample_lines(2000);
  ASSERT_FALSE(lines.empty()) << "no sample traces in " << DFTRACER_SAMPLES_DIR;
  for (auto& l : lines) {
    Outcome o = run(dec, l);
    ASSERT_EQ(o.both, o.ref) << l;
  }
}

TEST(FastPath, AgreesWithSimdjsonOnEveryMutationAndCut) {
  EventDecoder dec;
  dec.capture_args(compared_extra_args());
  const std::string subst = std::string("\"\\,:{}[] 0-+e.xtn\x01\xc3", 20);
  size_t variants = 0, fast = 0;
  for (const std::string& base : kLines) {
    for (size_t i = 0; i <= base.size(); ++i) {
      std::vector<std::string> vs;
      vs.push_back(base.substr(0, i));                         // cut
      if (i < base.size()) vs.push_back(base.substr(0, i) + base.substr(i + 1));  // deletion
      for (char c : subst) {
        std::string m = base;
        if (i < base.size()) m[i] = c;                         // replacement
        else m += c;
        vs.push_back(std::move(m));
        vs.push_back(base.substr(0, i) + c + base.substr(i));  // insertion
      }
      for (auto& v : vs) {
        Outcome o = run(dec, v);
        ++variants;
        fast += o.fast_took;
        ASSERT_EQ(o.both, o.ref) << "variant of line: " << v;
      }
    }
  }
  // Sanity: the mutations exercise both paths.
  EXPECT_GT(fast, variants / 10);
  EXPECT_LT(fast, variants);
}

// Line shapes (event_fast_path.hpp): after a line teaches its shape, every
// mutation and cut of it -- text between the values changed, a value changed
// so that its reader refuses it, bytes after the object -- reads exactly as
// the general walk and simdjson read it.
TEST(FastPath, LineShapesReadEveryVariantLikeTheGeneralWalk) {
  static const ArgCapture capture = compared_extra_args();
  const std::string subst = std::string("\"\\,:{}[] 0-+e.xtn\x01\xc3", 20);
  auto decode = [](LineShapes& shapes, const std::string& raw, std::string& general) {
    std::string_view s = strip_trace_line(raw);
    std::string padded(s);
    padded.resize(s.size() + kLinePadding, 'x');
    std::string_view line(padded.data(), s.size());
    Event ev;
    DecodeStatus st = DecodeStatus::Malformed;
    bool took = !line.empty() && line.front() == '{' && fast_decode_line(line, ev, st, &capture);
    general = took ? describe(ev, st) : "declined";
    took = !line.empty() && line.front() == '{' && fast_decode_line(line, ev, st, &capture, shapes);
    return took ? describe(ev, st) : std::string("declined");
  };
  uint64_t variants = 0;
  for (size_t b : {0, 2, 3, 4, 5, 9, 11, 19}) {
    const std::string& base = kLines[b];
    LineShapes shapes(/*back_off=*/false);
    std::string general;
    decode(shapes, base, general);  // learns the base's shape
    for (size_t i = 0; i <= base.size(); ++i) {
      std::vector<std::string> vs;
      vs.push_back(base.substr(0, i));
      if (i < base.size()) vs.push_back(base.substr(0, i) + base.substr(i + 1));
      for (char c : subst) {
        std::string m = base;
        if (i < base.size()) m[i] = c;
        else m += c;
        vs.push_back(std::move(m));
        vs.push_back(base.substr(0, i) + c + base.substr(i));
      }
      for (auto& v : vs) {
        // The base's shape first (the most recently matched), then the variant.
        std::string g;
        ASSERT_EQ(decode(shapes, base, g), g) << base;
        ASSERT_EQ(decode(shapes, v, g), g) << "variant of line: " << v;
        ++variants;
      }
    }
    EXPECT_GE(shapes.matched(), variants / 2) << "the base line must be read by its shape: " << base;
    variants = 0;
  }
}

// One line, padded with `pad`: the general walk takes it, and so does the walk
// through `shapes`, with the same fields.
static void expect_shaped_like_general(LineShapes& shapes, const std::string& l, char pad) {
  static const ArgCapture capture = compared_extra_args();
  std::string padded = l + std::string(kLinePadding, pad);
  std::string_view line(padded.data(), l.size());
  Event a, b;
  DecodeStatus sa, sb;
  ASSERT_TRUE(fast_decode_line(line, a, sa, &capture)) << l;
  ASSERT_TRUE(fast_decode_line(line, b, sb, &capture, shapes)) << l;
  ASSERT_EQ(describe(b, sb), describe(a, sa)) << l;
}

// Lines of several shapes in turn (more than a decoder keeps) and keys in
// another order: each read as the general walk reads it.
TEST(FastPath, LineShapesOfManyLayoutsInTurn) {
  LineShapes shapes(/*back_off=*/false);
  std::vector<std::string> lines;
  for (int i = 0; i < 6; ++i) {
    lines.push_back("{\"name\":\"n" + std::to_string(i) + "\",\"ph\":\"X\",\"ts\":" + std::to_string(100 + i) +
                    ",\"dur\":1.5,\"args\":{\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",\"step\":" +
                    std::to_string(i) + "}}");
    lines.push_back("{\"ph\":\"X\",\"name\":\"m" + std::to_string(i) + "\",\"dur\":2,\"ts\":" + std::to_string(i) + "}");
  }
  for (int round = 0; round < 3; ++round) {
    for (const std::string& l : lines) ASSERT_NO_FATAL_FAILURE(expect_shaped_like_general(shapes, l, '}'));
  }
  // The second layout alternates with the first: it stays among the kept shapes.
  EXPECT_GT(shapes.matched(), 0u);
}

// A trace whose layouts keep changing: after a window of lines that match no
// shape, lines take the general walk alone for a while (the same answers).
TEST(FastPath, LineShapesStepAsideWhenLayoutsKeepChanging) {
  LineShapes shapes;
  for (int i = 0; i < 200; ++i) {
    std::string l = "{\"name\":\"n\",\"ph\":\"X\",\"ts\":1,\"dur\":2,\"args\":{\"k" + std::to_string(i) + "\":1}}";
    ASSERT_NO_FATAL_FAILURE(expect_shaped_like_general(shapes, l, ' '));
  }
  EXPECT_EQ(shapes.matched(), 0u);
  EXPECT_EQ(shapes.paused_lines(), 200u - 64u);
}
