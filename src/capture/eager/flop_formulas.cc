// torch.utils.flop_counter's formulas (torch 2.13), one for one; see
// flop_formulas.h.
#include "flop_formulas.h"

#include <string_view>

namespace dftracer {
namespace torch_observer {

FlopFormula flop_formula_of(const char* name, size_t n) {
  std::string_view s(name, n);
  if (s.substr(0, 6) != "aten::") return kNoFormula;
  s.remove_prefix(6);
  static constexpr struct {
    std::string_view op;
    FlopFormula formula;
  } kTable[] = {
      {"mm", kMmFlops},
      {"_scaled_mm", kMmFlops},
      {"addmm", kAddmmFlops},
      {"bmm", kBmmFlops},
      {"baddbmm", kBaddbmmFlops},
      {"convolution", kConvFlops},
      {"_convolution", kConvFlops},
      {"cudnn_convolution", kConvFlops},
      {"convolution_overrideable", kConvFlops},
      {"_slow_conv2d_forward", kConvFlops},
      {"convolution_backward", kConvBackwardFlops},
      {"_scaled_dot_product_efficient_attention", kSdpaFlops},
      {"_scaled_dot_product_flash_attention", kSdpaFlops},
      {"_scaled_dot_product_cudnn_attention", kSdpaFlops},
      {"_scaled_dot_product_flash_attention_for_cpu", kSdpaFlops},
      {"_scaled_dot_product_efficient_attention_backward", kSdpaBackwardFlops},
      {"_scaled_dot_product_flash_attention_backward", kSdpaBackwardFlops},
      {"_scaled_dot_product_cudnn_attention_backward", kSdpaBackwardFlops},
      {"_scaled_dot_product_flash_attention_for_cpu_backward", kSdpaBackwardFlops},
      {"_flash_attention_forward", kFlashForwardFlops},
      {"_efficient_attention_forward", kEffForwardFlops},
      {"_flash_attention_backward", kFlashBackwardFlops},
      {"_efficient_attention_backward", kEffBackwardFlops},
  };
  // The name may carry an overload ("aten::mm.out" in some torch builds).
  const size_t dot = s.find('.');
  if (dot != std::string_view::npos) s = s.substr(0, dot);
  for (const auto& e : kTable)
    if (e.op == s) return e.formula;
  return kNoFormula;
}

namespace {

bool nonneg(Dims a) {
  for (int i = 0; i < a.n; ++i)
    if (a[i] < 0) return false;
  return true;
}

// flop_counter's bmm_flop on (b, m, k) x (b, k, n), the counts as numbers.
int64_t bmm3(int64_t b, int64_t m, int64_t k, int64_t k2, int64_t n, int64_t b2) {
  if (b != b2 || k != k2) return -1;
  return b * m * n * 2 * k;
}

}  // namespace

int64_t mm_flops(Dims a, Dims b) {
  if (a.n != 2 || b.n != 2 || !nonneg(a) || !nonneg(b) || a[1] != b[0]) return -1;
  return a[0] * b[1] * 2 * a[1];
}

int64_t bmm_flops(Dims a, Dims b) {
  if (a.n != 3 || b.n != 3 || !nonneg(a) || !nonneg(b)) return -1;
  return bmm3(a[0], a[1], a[2], b[1], b[2], b[0]);
}

int64_t conv_flops(Dims x, Dims w, const int64_t* out_spatial, bool transposed) {
  if (x.n < 3 || w.n != x.n || !nonneg(x) || !nonneg(w)) return -1;
  // flop = prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2,
  // conv_shape: the input's spatial sizes when transposed, else the output's.
  int64_t f = x[0] * w[0] * w[1] * 2;
  for (int i = 2; i < x.n; ++i) f *= (transposed ? x[i] : out_spatial[i - 2]) * w[i];
  return f;
}

bool conv_out_spatial(Dims x, Dims w, const int64_t* stride, int n_stride, const int64_t* padding, int n_padding,
                      const int64_t* dilation, int n_dilation, int64_t* out) {
  const int spatial = x.n - 2;
  if (spatial < 1 || w.n != x.n) return false;
  auto at = [spatial](const int64_t* v, int n, int i, int64_t* r) {
    if (n == spatial) *r = v[i];
    else if (n == 1) *r = v[0];
    else return false;
    return true;
  };
  for (int i = 0; i < spatial; ++i) {
    int64_t s, p, d;
    if (!at(stride, n_stride, i, &s) || !at(padding, n_padding, i, &p) || !at(dilation, n_dilation, i, &d)) return false;
    if (s <= 0) return false;
    const int64_t span = x[i + 2] + 2 * p - d * (w[i + 2] - 1) - 1;
    if (span < 0) return false;
    out[i] = span / s + 1;
  }
  return true;
}

int64_t conv_backward_flops(Dims grad_out, Dims x, Dims w, bool transposed, bool grad_in_mask, bool grad_w_mask) {
  const int n = x.n;
  if (n < 3 || grad_out.n != n || w.n != n || !nonneg(grad_out) || !nonneg(x) || !nonneg(w)) return -1;
  int64_t f = 0;
  if (grad_in_mask) {
    // conv_flop_count(grad_out, w, grad_input = x's sizes, not transposed)
    int64_t g = grad_out[0] * w[0] * w[1] * 2;
    for (int i = 2; i < n; ++i) g *= (!transposed ? grad_out[i] : x[i]) * w[i];
    f += g;
  }
  if (grad_w_mask) {
    // conv_flop_count(t(a), t(b), t(grad_weight = w's sizes), False), t()
    // swapping the first two sizes: a, b = x, grad_out (or grad_out, x when
    // transposed). batch = a[1], c_out, c_in = b[1], b[0], filter = b's
    // spatial sizes, conv_shape = w's.
    const Dims a = transposed ? grad_out : x, b = transposed ? x : grad_out;
    int64_t g = a[1] * b[1] * b[0] * 2;
    for (int i = 2; i < n; ++i) g *= w[i] * b[i];
    f += g;
  }
  return f;
}

int64_t sdpa_flops(Dims q, Dims k, Dims v) {
  if (q.n != 4 || k.n != 4 || v.n != 4 || !nonneg(q) || !nonneg(k) || !nonneg(v)) return -1;
  const int64_t b = q[0], hq = q[1], sq = q[2], dq = q[3], hkv = k[1], sk = k[2], dv = v[3];
  if (!(b == k[0] && b == v[0] && hkv == v[1] && dq == k[3] && sk == v[2])) return -1;
  if (hkv == 0 || hq < hkv || hq % hkv != 0) return -1;
  return bmm3(b * hq, sq, dq, dq, sk, b * hq) + bmm3(b * hq, sq, sk, sk, dv, b * hq);
}

int64_t sdpa_backward_flops(Dims grad_out, Dims q, Dims k, Dims v) {
  if (grad_out.n != 4 || q.n != 4 || k.n != 4 || v.n != 4) return -1;
  if (!nonneg(grad_out) || !nonneg(q) || !nonneg(k) || !nonneg(v)) return -1;
  const int64_t b = q[0], hq = q[1], sq = q[2], dq = q[3], hkv = k[1], sk = k[2], dv = v[3];
  if (!(b == k[0] && b == v[0] && b == grad_out[0] && hkv == v[1] && hq == grad_out[1])) return -1;
  if (hkv == 0 || hq < hkv || hq % hkv != 0) return -1;
  if (!(dq == k[3] && dv == grad_out[3] && sk == v[2] && sq == grad_out[2])) return -1;
  const int64_t bh = b * hq;
  return bmm3(bh, sq, dq, dq, sk, bh) + bmm3(bh, sq, dv, dv, sk, bh) + bmm3(bh, sk, sq, sq, dv, bh) +
         bmm3(bh, sq, sk, sk, dq, bh) + bmm3(bh, dq, sq, sq, sk, bh);
}

}  // namespace torch_observer
}  // namespace dftracer
