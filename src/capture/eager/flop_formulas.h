// FLOPs of an eager op from its input sizes: torch.utils.flop_counter's
// formulas (the table FlopCounterMode counts with, and the capture backend
// evaluates on compiled graphs), over plain integers so that they are
// tested without torch and cost the observer no allocation.
//
// Which ops: those flop_counter registers (matrix multiplies, convolutions
// and their backward, the attention kernels and their backward), plus the
// CPU flash-attention kernels the capture backend adds
// (bindings/python/dftracer/python/compile/dynamo_nodes.py,
// EXTRA_FLOP_FORMULAS). Every overload of a registered op counts, as
// FlopCounterMode keys on the overload packet; an in-place variant
// ("aten::addmm_") is another op and does not.
#ifndef DFTRACER_SRC_TORCH_FLOP_FORMULAS_H_
#define DFTRACER_SRC_TORCH_FLOP_FORMULAS_H_

#include <cstddef>
#include <cstdint>

namespace dftracer {
namespace torch_observer {

// Which formula an op name takes; kNoFormula for the rest (FlopCounterMode
// counts nothing for them).
enum FlopFormula : uint8_t {
  kNoFormula = 0,
  kMmFlops,            // mm(a, b); _scaled_mm(a, b, ...)
  kAddmmFlops,         // addmm(self, a, b)
  kBmmFlops,           // bmm(a, b)
  kBaddbmmFlops,       // baddbmm(self, a, b)
  kConvFlops,          // convolution(x, w, bias, stride, padding, dilation, transposed, ...) and its variants
  kConvBackwardFlops,  // convolution_backward(grad_out, x, w, ..., transposed, ..., output_mask)
  kSdpaFlops,          // the scaled-dot-product attention kernels: (q, k, v, ...)
  kSdpaBackwardFlops,  // their backward: (grad_out, q, k, v, ...)
  kFlashForwardFlops,  // _flash_attention_forward(q, k, v, cum_seq_q, ...)
  kEffForwardFlops,    // _efficient_attention_forward(q, k, v, bias, cu_seqlens_q, ...)
  kFlashBackwardFlops, // _flash_attention_backward(grad_out, q, k, v, out, lse, cum_seq_q, ...)
  kEffBackwardFlops,   // _efficient_attention_backward(grad_out, q, k, v, bias, out, cu_seqlens_q, ...)
};

// The formula of an op by its RecordFunction name ("aten::mm"; `n` bytes,
// not necessarily NUL-terminated). Decided once per name, off the hot path.
FlopFormula flop_formula_of(const char* name, size_t n);

// A tensor's sizes as the formulas read them.
struct Dims {
  const int64_t* d = nullptr;
  int n = 0;  // -1: not a tensor (or an undefined one)
  int64_t operator[](int i) const { return d[i]; }
};

// Each returns the FLOPs, or -1 when the sizes do not fit the formula (where
// FlopCounterMode's formula would raise): the op then carries no FLOPs.
int64_t mm_flops(Dims a, Dims b);
int64_t bmm_flops(Dims a, Dims b);
// `out_spatial`: the output's spatial sizes (x.n - 2 of them), used when not
// transposed (flop_counter's conv_flop_count).
int64_t conv_flops(Dims x, Dims w, const int64_t* out_spatial, bool transposed);
// The output's spatial sizes of a convolution that is not transposed, from
// its input, weight, stride, padding and dilation (each list 1 long: the
// same for every spatial dimension). False when they do not fit.
bool conv_out_spatial(Dims x, Dims w, const int64_t* stride, int n_stride, const int64_t* padding, int n_padding,
                      const int64_t* dilation, int n_dilation, int64_t* out);
// flop_counter's conv_backward_flop: grad_input = `grad_in_mask`, grad_weight
// = `grad_w_mask` (the first two entries of output_mask); grad_input's sizes
// are x's and grad_weight's are w's.
int64_t conv_backward_flops(Dims grad_out, Dims x, Dims w, bool transposed, bool grad_in_mask, bool grad_w_mask);
int64_t sdpa_flops(Dims q, Dims k, Dims v);
int64_t sdpa_backward_flops(Dims grad_out, Dims q, Dims k, Dims v);

}  // namespace torch_observer
}  // namespace dftracer

#endif  // DFTRACER_SRC_TORCH_FLOP_FORMULAS_H_
