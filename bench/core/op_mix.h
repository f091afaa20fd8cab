// An op-trace-like event mix for the core benchmarks: what the capture
// backend records for a BERT-style encoder, one layer after another --
// `function.<aten op>` names, cat "dynamo", each op's static node fragment
// (graph, node, module path, shapes, dtype, flops, bytes, seq_nr) and the
// per-call context fragment (phase, grad_enabled, tags), with op durations
// and gaps drawn from a fixed-seed generator.
#ifndef DFTRACER_BENCH_CORE_OP_MIX_H_
#define DFTRACER_BENCH_CORE_OP_MIX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dftracer/dftracer.h"

namespace dftracer_bench {

struct OpNode {
  dft_id name;
  dft_id fragment;
};

struct OpMix {
  std::vector<OpNode> nodes;  // one forward pass, in execution order
  dft_id cat = 0;
  dft_id context = 0;  // per-call fragment: phase, grad_enabled, tags
};

// Builds (and interns) the node table of a `layers`-layer encoder.
inline OpMix make_op_mix(int layers = 12) {
  struct Proto { const char* op; const char* sub; const char* shapes; long long flops; long long bytes; };
  static const Proto kLayer[] = {
      {"addmm.default", "attention.self.query", "[[768],[128,768],[768,768]]", 150994944, 3145728},
      {"view.default", "attention.self", "[[128,768]]", 0, 0},
      {"addmm.default", "attention.self.key", "[[768],[128,768],[768,768]]", 150994944, 3145728},
      {"view.default", "attention.self", "[[128,768]]", 0, 0},
      {"addmm.default", "attention.self.value", "[[768],[128,768],[768,768]]", 150994944, 3145728},
      {"permute.default", "attention.self", "[[1,128,12,64]]", 0, 0},
      {"bmm.default", "attention.self", "[[12,128,64],[12,64,128]]", 25165824, 1572864},
      {"div.Tensor", "attention.self", "[[1,12,128,128],[]]", 196608, 1572864},
      {"add.Tensor", "attention.self", "[[1,12,128,128],[1,1,1,128]]", 196608, 1573376},
      {"_softmax.default", "attention.self", "[[1,12,128,128]]", 983040, 1572864},
      {"native_dropout.default", "attention.self.dropout", "[[1,12,128,128]]", 0, 1769472},
      {"bmm.default", "attention.self", "[[12,128,128],[12,128,64]]", 25165824, 1572864},
      {"clone.default", "attention.self", "[[1,128,12,64]]", 0, 786432},
      {"addmm.default", "attention.output.dense", "[[768],[128,768],[768,768]]", 150994944, 3145728},
      {"add.Tensor", "attention.output", "[[1,128,768],[1,128,768]]", 98304, 1179648},
      {"native_layer_norm.default", "attention.output.LayerNorm", "[[1,128,768],[768],[768]]", 491520, 792576},
      {"addmm.default", "intermediate.dense", "[[3072],[128,768],[768,3072]]", 603979776, 11010048},
      {"gelu.default", "intermediate.intermediate_act_fn", "[[1,128,3072]]", 393216, 3145728},
      {"addmm.default", "output.dense", "[[768],[128,3072],[3072,768]]", 603979776, 11010048},
      {"add.Tensor", "output", "[[1,128,768],[1,128,768]]", 98304, 1179648},
      {"native_layer_norm.default", "output.LayerNorm", "[[1,128,768],[768],[768]]", 491520, 792576},
  };
  OpMix mix;
  mix.cat = dft_intern_cstr("dynamo");
  std::string ctx = "\"phase\":\"forward\",\"grad_enabled\":true,\"epoch\":1,\"step\":17";
  mix.context = dft_intern_json_fragment(ctx.data(), ctx.size());
  int node = 0;
  for (int l = 0; l < layers; ++l) {
    for (const Proto& p : kLayer) {
      std::string name = std::string("function.") + p.op;
      std::string frag = "\"graph\":0,\"node\":" + std::to_string(node) + ",\"module\":\"encoder.layer." +
                         std::to_string(l) + "." + p.sub + "\",\"shapes\":\"" + p.shapes +
                         "\",\"dtype\":\"float32\",\"flops\":" + std::to_string(p.flops) +
                         ",\"bytes\":" + std::to_string(p.bytes) + ",\"seq_nr\":" + std::to_string(node);
      mix.nodes.push_back({dft_intern(name.data(), name.size()), dft_intern_json_fragment(frag.data(), frag.size())});
      ++node;
    }
  }
  return mix;
}

// Records `n` op events of the mix on the calling thread with synthetic but
// realistic timing: op durations 0.5-200 us, gaps of a few hundred ns.
inline void record_op_mix(const OpMix& mix, uint64_t n) {
  uint64_t t = dft_now_ns();
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  dft_arg args[2] = {};
  args[0].type = DFT_ARG_JSON;
  args[1].type = DFT_ARG_JSON;
  args[1].v.id = mix.context;
  for (uint64_t i = 0; i < n; ++i) {
    const OpNode& node = mix.nodes[i % mix.nodes.size()];
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    uint64_t dur = 500 + rng % 200000;
    args[0].v.id = node.fragment;
    dft_complete_ns(node.name, mix.cat, t, dur, args, 2);
    t += dur + 200 + (rng >> 40) % 600;
  }
}

}  // namespace dftracer_bench

#endif  // DFTRACER_BENCH_CORE_OP_MIX_H_
