// The eager observer's FLOP formulas (flop_formulas.cc) against
// torch.utils.flop_counter (torch 2.13): each expected figure is what
// flop_counter's formula returns for the same sizes (its conv and attention
// formulas called on tensors of these sizes).
#include "flop_formulas.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

using namespace dftracer::torch_observer;

namespace {

// Keeps the sizes alive for a Dims.
struct Shape {
  std::vector<int64_t> v;
  Shape(std::initializer_list<int64_t> s) : v(s) {}
  Dims dims() const { return Dims{v.data(), static_cast<int>(v.size())}; }
};

FlopFormula formula(const std::string& name) {
  std::unique_ptr<char[]> exact(new char[name.size()]);  // no NUL: a read past the end is an ASan error
  std::memcpy(exact.get(), name.data(), name.size());
  return flop_formula_of(exact.get(), name.size());
}

}  // namespace

TEST(EagerFlops, NamesTakeFlopCounterFormulas) {
  EXPECT_EQ(formula("aten::mm"), kMmFlops);
  EXPECT_EQ(formula("aten::mm.out"), kMmFlops);
  EXPECT_EQ(formula("aten::addmm"), kAddmmFlops);
  EXPECT_EQ(formula("aten::bmm"), kBmmFlops);
  EXPECT_EQ(formula("aten::baddbmm"), kBaddbmmFlops);
  EXPECT_EQ(formula("aten::convolution"), kConvFlops);
  EXPECT_EQ(formula("aten::_convolution"), kConvFlops);
  EXPECT_EQ(formula("aten::convolution_backward"), kConvBackwardFlops);
  EXPECT_EQ(formula("aten::_scaled_dot_product_flash_attention_for_cpu"), kSdpaFlops);
  EXPECT_EQ(formula("aten::_scaled_dot_product_flash_attention_for_cpu_backward"), kSdpaBackwardFlops);
  EXPECT_EQ(formula("aten::_scaled_dot_product_efficient_attention_backward"), kSdpaBackwardFlops);
  EXPECT_EQ(formula("aten::_flash_attention_forward"), kFlashForwardFlops);
  // What FlopCounterMode does not count: composites (their registered ops
  // inside count), in-place variants, elementwise ops, other namespaces.
  for (const char* none : {"aten::linear", "aten::matmul", "aten::conv2d", "aten::addmm_", "aten::add", "aten::m",
                           "aten::", "", "mm", "prims::mm", "aten::scaled_dot_product_attention", "MmBackward0"})
    EXPECT_EQ(formula(none), kNoFormula) << none;
}

TEST(EagerFlops, MatrixMultiplies) {
  EXPECT_EQ(mm_flops(Shape{3, 5}.dims(), Shape{5, 7}.dims()), 210);
  EXPECT_EQ(bmm_flops(Shape{2, 3, 5}.dims(), Shape{2, 5, 7}.dims()), 420);
  EXPECT_EQ(mm_flops(Shape{3, 5}.dims(), Shape{4, 7}.dims()), -1);  // inner sizes differ
  EXPECT_EQ(mm_flops(Shape{3, 5, 1}.dims(), Shape{5, 7}.dims()), -1);
  EXPECT_EQ(mm_flops(Dims{}, Shape{5, 7}.dims()), -1);  // not a tensor
  EXPECT_EQ(bmm_flops(Shape{2, 3, 5}.dims(), Shape{3, 5, 7}.dims()), -1);  // batch differs
  EXPECT_EQ(mm_flops(Shape{0, 5}.dims(), Shape{5, 7}.dims()), 0);
}

TEST(EagerFlops, Convolutions) {
  // conv2d(x 2x3x9x11, w 4x3x3x2, stride (2,1), padding (1,0), dilation (1,2)) -> 2x4x5x9
  const Shape x{2, 3, 9, 11}, w{4, 3, 3, 2};
  const int64_t stride[] = {2, 1}, padding[] = {1, 0}, dilation[] = {1, 2};
  int64_t out[2];
  ASSERT_TRUE(conv_out_spatial(x.dims(), w.dims(), stride, 2, padding, 2, dilation, 2, out));
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(out[1], 9);
  EXPECT_EQ(conv_flops(x.dims(), w.dims(), out, false), 12960);
  // Backward, both gradients and grad_input alone.
  const Shape go{2, 4, 5, 9};
  EXPECT_EQ(conv_backward_flops(go.dims(), x.dims(), w.dims(), false, true, true), 25920);
  EXPECT_EQ(conv_backward_flops(go.dims(), x.dims(), w.dims(), false, true, false), 12960);
  // conv_transpose2d(x 2x4x5x6, w 4x3x3x3, stride 2) -> 2x3x11x13: the input's sizes count.
  const Shape xt{2, 4, 5, 6}, wt{4, 3, 3, 3}, got{2, 3, 11, 13};
  EXPECT_EQ(conv_flops(xt.dims(), wt.dims(), nullptr, true), 12960);
  EXPECT_EQ(conv_backward_flops(got.dims(), xt.dims(), wt.dims(), true, true, true), 25920);
  // conv1d(x 2x3x10, w 5x3x4, padding 1): one-element lists apply to every spatial size.
  const Shape x1{2, 3, 10}, w1{5, 3, 4};
  const int64_t one[] = {1};
  int64_t out1[1];
  ASSERT_TRUE(conv_out_spatial(x1.dims(), w1.dims(), one, 1, one, 1, one, 1, out1));
  EXPECT_EQ(out1[0], 9);
  EXPECT_EQ(conv_flops(x1.dims(), w1.dims(), out1, false), 2160);
  // Sizes that do not fit.
  const int64_t zero[] = {0};
  EXPECT_FALSE(conv_out_spatial(x1.dims(), w1.dims(), zero, 1, one, 1, one, 1, out1));  // stride 0
  EXPECT_FALSE(conv_out_spatial(x1.dims(), w1.dims(), stride, 2, one, 1, one, 1, out1));  // 2 strides, 1 spatial dim
  EXPECT_EQ(conv_flops(x1.dims(), w.dims(), out1, false), -1);
}

TEST(EagerFlops, Attention) {
  // Grouped-query attention: 8 query heads over 2 key/value heads.
  const Shape q{2, 8, 5, 16}, k{2, 2, 7, 16}, v{2, 2, 7, 12}, go{2, 8, 5, 12};
  EXPECT_EQ(sdpa_flops(q.dims(), k.dims(), v.dims()), 31360);
  EXPECT_EQ(sdpa_backward_flops(go.dims(), q.dims(), k.dims(), v.dims()), 80640);
  EXPECT_EQ(sdpa_flops(q.dims(), v.dims(), v.dims()), -1);               // head sizes differ
  EXPECT_EQ(sdpa_flops(Shape{2, 3, 5, 16}.dims(), k.dims(), v.dims()), -1);  // 3 heads over 2
}
