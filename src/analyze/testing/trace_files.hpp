// Test helpers: write traces in our format (.pfw, multi-member .pfw.gz with or
// without the .idx sidecar) into a temporary directory, and collect what the
// reader hands to its consumers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "event_decoder.hpp"
#include "trace_reader.hpp"

namespace dftracer::analyze::testing {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "dft-analyze-XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void write_file(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  f << content;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// One complete gzip member holding `text`.
inline std::string gzip_member(const std::string& text) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
  return out;
}

// One gzip member written to a file as a stream, a piece at a time, so that
// the test process never holds its text (a child's peak RSS, as getrusage
// reports it, includes its parent's peak from before the exec).
class GzipStreamWriter {
 public:
  GzipStreamWriter(const std::string& path, int level) : f_(std::fopen(path.c_str(), "wb")), out_(1 << 16) {
    deflateInit2(&zs_, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  }
  ~GzipStreamWriter() {
    deflateEnd(&zs_);
    if (f_) std::fclose(f_);
  }
  bool ok() const { return f_ != nullptr; }
  // Z_NO_FLUSH for more to come, Z_FINISH for the member's last piece.
  void feed(const std::string& s, int flush) {
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
    zs_.avail_in = static_cast<uInt>(s.size());
    do {
      zs_.next_out = reinterpret_cast<Bytef*>(out_.data());
      zs_.avail_out = static_cast<uInt>(out_.size());
      deflate(&zs_, flush);
      std::fwrite(out_.data(), 1, out_.size() - zs_.avail_out, f_);
    } while (zs_.avail_out == 0);
  }

 private:
  std::FILE* f_;
  z_stream zs_{};
  std::vector<char> out_;
};

// An op event line like the capture backend writes (without the trailing ",\n").
// `more_args`: further args members, e.g. "\"step\":3" (no leading comma).
inline std::string op_event(int id, const std::string& name, double ts, double dur, const std::string& phase = "forward",
                            const std::string& module = "model.layer1", double flops = -1, double bytes = -1,
                            int pid = 4242, int tid = 4243, const std::string& more_args = "") {
  char buf[1024];
  std::string extra;
  if (!more_args.empty()) extra += "," + more_args;
  // module "": no args.module (a region, a graph call); the compiled model's
  // own ops carry "module":"" (give it in more_args).
  const std::string module_arg = module.empty() ? "" : ",\"module\":\"" + module + "\"";
  if (flops >= 0) extra += ",\"flops\":" + std::to_string(static_cast<long long>(flops));
  if (bytes >= 0) extra += ",\"bytes\":" + std::to_string(static_cast<long long>(bytes));
  std::snprintf(buf, sizeof buf,
                "{\"id\":%d,\"name\":\"%s\",\"cat\":\"op\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"ph\":\"X\","
                "\"args\":{\"hhash\":\"a1b2c3d4e5f60718\",\"grad_enabled\":true,\"phase\":\"%s\",\"graph\":0,"
                "\"node\":%d%s,\"shapes\":\"[[8, 16], [16, 32]]\",\"dtype\":\"float32\"%s,"
                "\"seq_nr\":%d,\"epoch\":1}}",
                id, name.c_str(), pid, tid, ts, dur, phase.c_str(), id, module_arg.c_str(), extra.c_str(), id);
  return buf;
}

// The lines of a file in our format: "[", each line with ",", and, when
// `finalized`, the last without a comma and "]".
inline std::string pfw_text(const std::vector<std::string>& events, bool finalized = true) {
  std::string s = "[\n";
  for (size_t i = 0; i < events.size(); ++i) {
    s += events[i];
    s += (finalized && i + 1 == events.size()) ? "\n" : ",\n";
  }
  if (finalized) s += "]\n";
  return s;
}

// Writes `text` as a multi-member gzip, one member per `lines_per_member`
// lines, plus the .idx sidecar when `index`. Returns the member offsets.
inline std::vector<size_t> write_gz(const std::string& path, const std::string& text, size_t lines_per_member,
                                    bool index) {
  std::string out, idx, chunk;
  std::vector<size_t> offsets;
  size_t lines = 0, pos = 0;
  auto flush = [&] {
    if (chunk.empty()) return;
    std::string m = gzip_member(chunk);
    offsets.push_back(out.size());
    idx += std::to_string(out.size()) + " " + std::to_string(m.size()) + " " + std::to_string(chunk.size()) + " " +
           std::to_string(lines) + "\n";
    out += m;
    chunk.clear();
    lines = 0;
  };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    chunk.append(text, pos, end - pos);
    pos = end;
    if (++lines == lines_per_member) flush();
  }
  flush();
  write_file(path, out);
  if (index) write_file(path + ".idx", idx);
  return offsets;
}

// Collects the names of the events the reader decoded, across threads.
class NameCollector : public LineConsumer {
 public:
  DecodeStatus consume(std::string_view line, size_t cap) override {
    DecodeStatus st = dec_.decode(line, cap, ev_);
    if (st == DecodeStatus::Ok) names.emplace_back(ev_.name);
    return st;
  }
  std::vector<std::string> names;

 private:
  EventDecoder dec_;
  Event ev_;
};

struct Collected {
  ReadStats stats;
  std::multiset<std::string> names;
};

inline Collected collect(const std::vector<std::string>& files, unsigned threads, const ReadOptions& opt) {
  std::vector<std::unique_ptr<NameCollector>> cs;
  std::vector<LineConsumer*> ptrs;
  for (unsigned i = 0; i < threads; ++i) {
    cs.push_back(std::make_unique<NameCollector>());
    ptrs.push_back(cs.back().get());
  }
  Collected c;
  c.stats = read_traces(files, ptrs, opt);
  for (auto& x : cs) c.names.insert(x->names.begin(), x->names.end());
  return c;
}

inline Collected collect(const std::vector<std::string>& files, unsigned threads = 2, uint64_t min_piece = 1) {
  ReadOptions opt;
  opt.min_piece_bytes = min_piece;  // tiny pieces: exercise the splitting
  return collect(files, threads, opt);
}

}  // namespace dftracer::analyze::testing
