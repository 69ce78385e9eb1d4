// InnerProduct (Caffe type "InnerProduct"): a fully connected layer.
//
// The bottom is read as a matrix X of M rows and K columns, M = the product
// of the axes before `axis` and K = the product of the axes from `axis` on:
//   top = X * W^T + 1 * b^T        (M x N),  W is (N, K)
// or, with transpose: true, W is stored as (K, N) and top = X * W + 1 * b^T.
// Top shape = bottom shape[0:axis] + (N). Blobs: weight, bias (N).
// Backward adds dW and db into the param diffs (Caffe accumulates them; the
// solver clears them) and overwrites dX = dtop * W (or dtop * W^T).
#pragma once

#include <memory>
#include <vector>

#include "core/math_on.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class Bfloat16InnerProduct;  // layers/onednn_inner_product.hpp

class InnerProductLayer : public Layer {
 public:
  explicit InnerProductLayer(const LayerParameter& param);
  ~InnerProductLayer() override;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "InnerProduct"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

 protected:
  // Both devices run the same products (math::on): CPU BLAS or cuBLAS.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    forward_on(Device::cpu(), bottom, top);
  }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    backward_on(Device::cpu(), top, propagate_down, bottom);
  }
#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    forward_on(device(), bottom, top);
  }
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    backward_on(device(), top, propagate_down, bottom);
  }
#endif

 private:
  int axis_checked(const Blob& input) const;
  void forward_on(const Device& device, const BlobVec& bottom, const BlobVec& top);
  void backward_on(const Device& device, const BlobVec& top,
                   const std::vector<bool>& propagate_down, const BlobVec& bottom);

  int num_output_ = 0;  // N
  int input_size_ = 0;  // K
  int rows_ = 0;        // M
  bool bias_term_ = true;
  bool transpose_ = false;
  math::Ones ones_;  // M ones, to add the bias by gemm
  // In bf16 on a CPU that multiplies bf16 (xtrain/precision.hpp): oneDNN's
  // bf16 kernels instead of the BLAS products on rounded operands.
  std::unique_ptr<Bfloat16InnerProduct> bfloat16_;
};

}  // namespace xtrain
