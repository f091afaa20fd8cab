// Generates a realistic trace for the analyzer benchmark: op events like the
// capture backend writes (~300 bytes, the full args set), in our format, as
// .pfw and as a multi-member .pfw.gz (one member per ~1 MiB chunk, level 1
// like the writer's default fast setting) with its .idx sidecar.
//
//   gen_trace OUT_PREFIX [EVENTS=10000000]
//   -> OUT_PREFIX.pfw, OUT_PREFIX.pfw.gz, OUT_PREFIX.pfw.gz.idx
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* kOps[] = {"aten.mm.default",         "aten.addmm.default",  "aten.relu.default",
                      "aten.native_layer_norm.default", "aten.add.Tensor", "aten.mul.Tensor",
                      "aten._softmax.default",   "aten.bmm.default",    "aten.view.default",
                      "aten.t.default",          "aten.gelu.default",   "aten.threshold_backward.default"};
const char* kModules[] = {"model.encoder.layer.0.attention", "model.encoder.layer.0.mlp", "model.encoder.layer.1.attention",
                          "model.encoder.layer.1.mlp",       "model.head",                "model.embed"};
const char* kPhases[] = {"forward", "backward", "inference"};

std::string gzip_member(const std::string& text) {
  z_stream zs{};
  deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gen_trace OUT_PREFIX [EVENTS]\n");
    return 2;
  }
  std::string prefix = argv[1];
  long long events = argc > 2 ? std::atoll(argv[2]) : 10000000;
  std::FILE* pfw = std::fopen((prefix + ".pfw").c_str(), "wb");
  std::FILE* gz = std::fopen((prefix + ".pfw.gz").c_str(), "wb");
  std::FILE* idx = std::fopen((prefix + ".pfw.gz.idx").c_str(), "wb");
  if (!pfw || !gz || !idx) {
    std::perror("gen_trace: open");
    return 1;
  }
  std::mt19937_64 rng(12345);
  std::lognormal_distribution<double> dur(2.0, 1.5);
  std::string chunk;
  uint64_t gz_off = 0, lines = 0;
  char buf[1024];
  double ts = 1727387307981693.0;
  chunk = "[\n";
  lines = 1;
  const int pid = 3537780;
  // Members are compressed two at a time in parallel: generation is not what we measure.
  std::vector<std::string> pending;
  auto flush_pending = [&] {
    std::vector<std::string> out(pending.size());
    std::vector<std::thread> th;
    for (size_t i = 0; i < pending.size(); ++i) th.emplace_back([&, i] { out[i] = gzip_member(pending[i]); });
    for (auto& t : th) t.join();
    for (size_t i = 0; i < pending.size(); ++i) {
      std::fwrite(out[i].data(), 1, out[i].size(), gz);
      long long nl = 0;
      for (char c : pending[i]) nl += c == '\n';
      std::fprintf(idx, "%llu %zu %zu %lld\n", static_cast<unsigned long long>(gz_off), out[i].size(), pending[i].size(), nl);
      gz_off += out[i].size();
    }
    pending.clear();
  };
  auto flush = [&] {
    std::fwrite(chunk.data(), 1, chunk.size(), pfw);
    pending.push_back(std::move(chunk));
    chunk.clear();
    lines = 0;
    if (pending.size() == 2) flush_pending();
  };
  for (long long i = 0; i < events; ++i) {
    unsigned r = static_cast<unsigned>(rng());
    const char* op = kOps[r % 12];
    const char* mod = kModules[(r >> 4) % 6];
    const char* phase = kPhases[(r >> 8) % 3];
    double d = dur(rng);
    int node = static_cast<int>((r >> 12) % 400);
    long long flops = 2LL * 64 * 768 * (768 + (r >> 20) % 1024);
    long long bytes = 4LL * 64 * (768 + (r >> 16) % 4096);
    bool last = i + 1 == events;
    int n = std::snprintf(buf, sizeof buf,
                          "{\"id\":%lld,\"name\":\"function.%s\",\"cat\":\"torch\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                          "\"dur\":%.3f,\"ph\":\"X\",\"args\":{\"hhash\":\"8f3a9c2e11d04b7a\",\"grad_enabled\":%s,"
                          "\"phase\":\"%s\",\"graph\":%d,\"node\":%d,\"module\":\"%s\",\"shapes\":\"[[64, 768], [768, 3072]]\","
                          "\"dtype\":\"float32\",\"flops\":%lld,\"bytes\":%lld,\"seq_nr\":%d,\"epoch\":%lld,\"step\":%lld}}%s\n",
                          i, op, pid, pid + 1 + static_cast<int>(r % 2), ts, d, phase[0] == 'b' ? "true" : "false", phase,
                          static_cast<int>((r >> 24) % 4), node, mod, flops, bytes, node * 3, i / 1000000, i / 1000,
                          last ? "" : ",");
    chunk.append(buf, n);
    ++lines;
    ts += d + 0.25;
    if (chunk.size() >= (1u << 20)) flush();
  }
  chunk += "]\n";
  flush();
  flush_pending();
  std::fclose(pfw);
  std::fclose(gz);
  std::fclose(idx);
  return 0;
}
