// libFuzzer target for the line decoder and the gzip member / line reader.
// The first byte picks what the rest is (its low 3 bits): 0 -> one line for
// EventDecoder; 1 -> a .pfw file; 2 -> a .pfw.gz file; 3 -> a .pfw.gz with a
// .idx built from its second half; 4 -> a .pfw.gz whose .idx is a symlink to
// /dev/zero; 5 -> one whose .idx is a FIFO (a reader that opened
// either used to grow without bound or hang). Bit 3 set: tiny size limits
// (256-byte lines, 4 KiB documents), so the bomb paths -- a line or a whole
// JSON document over the limit, a gzip member inflating past it -- run at
// fuzz sizes. Files go through read_traces with two threads and tiny pieces,
// so splitting, member scanning and line joining all run.
//
// Oracles: no crash, hang or sanitizer report; the fast path agrees with
// simdjson on every line it accepts; and one validity rule (item 15): a line
// the decoder takes (Ok or BadField) is valid JSON for simdjson's DOM parser.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "decoded_event_text.hpp"
#include "event_decoder.hpp"
#include "event_fast_path.hpp"
#include "summary.hpp"
#include "trace_reader.hpp"

using namespace dftracer::analyze;

namespace {

// The input files each run writes, removed when the fuzzer exits (libFuzzer
// ends with exit(), so this destructor runs) instead of left in $TMPDIR.
struct TempFiles {
  std::string base;
  TempFiles() {
    const char* t = std::getenv("TMPDIR");
    base = std::string(t ? t : "/tmp") + "/dft-analyze-fuzz-" + std::to_string(::getpid());
  }
  ~TempFiles() {
    for (const char* suffix : {".pfw", ".pfw.gz", ".pfw.gz.idx"}) ::unlink((base + suffix).c_str());
  }
};

const std::string& temp_base() {
  static TempFiles files;
  return files.base;
}

void write_bytes(const std::string& path, const uint8_t* p, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  if (n) std::fwrite(p, 1, n, f);
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 8 > 5 ? data[0] % 4 : data[0] % 8;
  const bool tiny_limits = (data[0] & 8) != 0;
  data += 1;
  size -= 1;
  if (mode == 0) {
    static const ArgCapture capture = compared_extra_args();
    static EventDecoder dec = [] {
      EventDecoder d;
      d.capture_args(capture);
      return d;
    }();
    std::string line(reinterpret_cast<const char*>(data), size);
    std::string_view s = strip_trace_line(line);
    std::string padded(s);
    padded.resize(s.size() + kLinePadding);
    std::string_view view(padded.data(), s.size());
    Event ev;
    const DecodeStatus status = dec.decode(view, padded.size(), ev);
    if (status == DecodeStatus::Ok || status == DecodeStatus::BadField) {
      static simdjson::dom::parser strict;
      simdjson::dom::element whole;
      if (strict.parse(padded.data(), s.size(), false).get(whole)) {
        std::fprintf(stderr, "decoder took a line that is not JSON: %.*s\n", static_cast<int>(s.size()), s.data());
        std::abort();
      }
    }
    // The fast path must agree with simdjson on every line it accepts.
    if (!s.empty() && s.front() == '{') {
      Event fast;
      DecodeStatus fast_status;
      const bool fast_took = fast_decode_line(view, fast, fast_status, &capture);
      // Through line shapes: first with the shapes of earlier inputs (this
      // line may match one, differ from all, or be learned), then again with
      // its own shape kept: the same answer as the general walk each time.
      static LineShapes shapes(/*back_off=*/false);  // every line tries the shapes
      for (int round = 0; round < 2; ++round) {
        Event shaped;
        DecodeStatus shaped_status;
        const bool shaped_took = fast_decode_line(view, shaped, shaped_status, &capture, shapes);
        if (shaped_took != fast_took || (fast_took && describe(shaped, shaped_status) != describe(fast, fast_status))) {
          std::fprintf(stderr, "a line shape reads the line unlike the general walk (round %d): %.*s\n", round,
                       static_cast<int>(s.size()), s.data());
          std::abort();
        }
      }
      if (fast_took) {
        // What the reader hands on: the fast path's fields with array and
        // object values made compact, as simdjson's minified ones are.
        Event decoded;
        DecodeStatus decoded_status = dec.decode(view, padded.size(), decoded);
        std::string fast_fields = describe(decoded, decoded_status);
        Event ref;
        DecodeStatus ref_status = dec.decode_with_simdjson(view, padded.size(), ref);
        if (fast_fields != describe(ref, ref_status)) {
          std::fprintf(stderr, "fast path disagrees with simdjson:\n  fast: %s\n  ref:  %s\n", fast_fields.c_str(),
                       describe(ref, ref_status).c_str());
          std::abort();
        }
      }
    }
    return 0;
  }
  std::string path = temp_base() + (mode == 1 ? ".pfw" : ".pfw.gz");
  write_bytes(path, data, size);
  std::string idx = path + ".idx";
  ::unlink(idx.c_str());
  if (mode == 3) write_bytes(idx, data + size / 2, size - size / 2);
  if (mode == 4 && ::symlink("/dev/zero", idx.c_str()) != 0) return 0;
  if (mode == 5 && ::mkfifo(idx.c_str(), 0600) != 0) return 0;
  SummaryAggregator a(parse_group_keys("name")), b(parse_group_keys("args.fuzz"));
  ReadOptions opt;
  opt.min_piece_bytes = 16;
  if (tiny_limits) {
    opt.max_line_bytes = 256;
    opt.max_document_bytes = 4096;
  }
  try {
    read_traces({path}, {&a, &b}, opt);
  } catch (const InputError&) {
  }
  a.merge(b);
  build_summary(a, 5);
  return 0;
}
