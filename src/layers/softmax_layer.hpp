// Softmax over one axis (softmax_param.axis, default 1). Viewing the bottom
// as (outer, C, inner) with C the size of that axis:
//   y[o, c, i] = exp(x[o, c, i] - m[o, i]) / sum_c' exp(x[o, c', i] - m[o, i])
// where m[o, i] = max_c x[o, c, i] keeps exp() from overflowing. Backward:
//   dE/dx[o, c, i] = (dE/dy[o, c, i] - sum_c' dE/dy[o, c', i] * y[o, c', i]) * y[o, c, i]
// Works in place. SoftmaxWithLoss runs one of these inside itself.
//
// On a GPU: cuDNN (cudnnSoftmaxForward/Backward, CUDNN_SOFTMAX_ACCURATE, which
// subtracts the max as above, in CUDNN_SOFTMAX_MODE_CHANNEL over a tensor
// (N, C, H, W) = (outer, C, inner, 1)); the own kernels of
// cuda/elementwise_kernels.hpp when the layer runs in place (cuDNN does not
// document in-place softmax) or a size does not fit cuDNN's int dimensions.
#pragma once

#include <memory>
#include <vector>

#include "xtrain/layer.hpp"

namespace xtrain {

class SoftmaxLayer : public Layer {
 public:
  explicit SoftmaxLayer(const LayerParameter& param);
  ~SoftmaxLayer() override;
  const char* type() const override { return "Softmax"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  // The canonical softmax axis and the sizes around it (valid after reshape).
  int axis() const { return axis_; }
  std::size_t outer_num() const { return outer_num_; }
  std::size_t inner_num() const { return inner_num_; }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  // body(at, per_position, width) for every run of `width` inner positions
  // [first, first + width) of every sample o, spread over the thread pool:
  // `at` = o * channels * inner + first is the run's first value (channel 0),
  // `per_position` points at per_position_[o * inner + first].
  template <typename Body>
  void for_each_task(std::size_t work_per_value, Body body);

  int axis_ = 1;
  std::size_t outer_num_ = 0;
  std::size_t channels_ = 0;
  std::size_t inner_num_ = 0;
  // One value per (outer, inner) position: the running max (forward), the sum
  // of exponentials (forward) or the dot product dy . y (backward).
  std::vector<float> per_position_;
#ifdef XTRAIN_USE_CUDA
  struct CudnnState;  // the tensor descriptor (softmax_layer.cpp)
  std::unique_ptr<CudnnState> cudnn_;
#endif
};

}  // namespace xtrain
