// A small LibTorch model trained for a few steps with every ATen op traced.
//
//   dftracer_torch_example [trace-prefix]      (default ./libtorch_mlp)
//
// writes <prefix>-dftracer_torch_example-<pid>.pfw.gz: one event per ATen op
// (cat "aten"), per autograd node (cat "autograd"), plus a region per step
// recorded with the core's C++ API, all in one file. Open it in Perfetto.
#include <torch/torch.h>

#include <cstdio>
#include <string>

#include "dftracer/dftracer.h"
#include "dftracer/dftracer.hpp"
#include "dftracer/torch.h"

namespace {

struct Net : torch::nn::Module {
  Net() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1)));
    fc = register_module("fc", torch::nn::Linear(4 * 8 * 8, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv->forward(x));
    return fc->forward(x.flatten(1));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear fc{nullptr};
};

}  // namespace

int main(int argc, char** argv) {
  const char* prefix = argc > 1 ? argv[1] : "libtorch_mlp";
  if (dft_init_opt_in(prefix, nullptr, -1) != 0) {
    std::fprintf(stderr, "cannot create the trace file for prefix %s\n", prefix);
    return 1;
  }
  dftracer::torch::enable(/*with_shapes=*/true);

  torch::manual_seed(0);
  Net net;
  torch::optim::SGD opt(net.parameters(), /*lr=*/0.01);
  const torch::Tensor x = torch::randn({16, 1, 8, 8});
  const torch::Tensor y = torch::randint(0, 10, {16});
  const dft_id step_name = dft_intern_cstr("train_step");
  const dft_id app = dft_intern_cstr("app");
  for (int step = 0; step < 3; ++step) {
    dftracer::Region region(step_name, app);
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net.forward(x), y);
    loss.backward();
    opt.step();
    std::printf("step %d loss %.4f\n", step, loss.item<float>());
  }

  dftracer::torch::disable();
  dft_stats stats;
  dft_get_stats(&stats);
  const std::string path = dft_trace_path();
  dft_finalize();
  std::printf("%llu events in %s\n", static_cast<unsigned long long>(stats.events_recorded), path.c_str());
  return 0;
}
