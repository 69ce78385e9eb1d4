// An inner product multiplied in bf16 by oneDNN's kernels (AVX512-BF16,
// AMX), for an InnerProduct layer whose precision is bf16 on a CPU that has
// them (xtrain/precision.hpp): X, W and the top's gradient are reordered to
// bf16 at the boundary (rounding to nearest even, as storing them would), the
// products accumulate in fp32, and the top, the bias and every gradient are
// written in fp32. The same numbers as fp32 products of the rounded operands,
// up to the order of the sums.
#pragma once

#include <memory>
#include <string>

namespace xtrain {

struct InnerProductShape {
  int rows = 0;             // M
  int inputs = 0;           // K
  int outputs = 0;          // N
  bool transposed = false;  // W stored (K, N) instead of (N, K)
  bool bias = false;
};

class Bfloat16InnerProduct {
 public:
  virtual ~Bfloat16InnerProduct() = default;
  virtual const InnerProductShape& shape() const = 0;
  // "onednn bf16 (forward brg:avx512_core_amx, ...)".
  virtual std::string name() const = 0;
  // top (M x N) = X W^T + b.
  virtual void forward(const float* bottom, const float* weights, const float* bias,
                       float* top) = 0;
  // weight_diff += dtop^T X, bias_diff += column sums of dtop (either may be
  // null to skip it); bottom_diff = dtop W (overwritten; null to skip),
  // with W as the last forward() rounded it when that was given `weights`.
  virtual void backward(const float* bottom, const float* top_diff, const float* weights,
                        float* weight_diff, float* bias_diff, float* bottom_diff) = 0;
};

// Null when oneDNN offers no bf16 kernel for the shape (or the build has no
// oneDNN), with the reason in *why_not.
std::unique_ptr<Bfloat16InnerProduct> make_bfloat16_inner_product(const InnerProductShape& shape,
                                                                  std::string* why_not);

}  // namespace xtrain
