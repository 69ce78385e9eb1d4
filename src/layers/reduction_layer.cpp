// Reduction (reduction_param: operation, axis, coeff): reduces all axes from
// `axis` on to one value per leading index, so the top has the bottom's shape
// up to `axis` (axis 0: a 0-d scalar). For each of the M = count(0, axis) rows
// x of D = count(axis) values:
//   SUM    y = coeff * sum x         dE/dx = coeff * dE/dy
//   ASUM   y = coeff * sum |x|       dE/dx = coeff * dE/dy * sign(x)
//   SUMSQ  y = coeff * sum x^2       dE/dx = coeff * dE/dy * 2x
//   MEAN   y = (coeff / D) * sum x   dE/dx = (coeff / D) * dE/dy
// As in Caffe, MEAN folds 1/D into the coefficient (in float) before use.
#include <algorithm>
#include <vector>

#include "core/math_functions.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/reduction_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/reduction_kernels.hpp"
#endif

namespace xtrain {
namespace {

class ReductionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Reduction"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    operation_ = param_.reduction_param().operation();
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    const int axis = param_.reduction_param().axis();
    XTRAIN_CHECK(axis >= -input.num_axes() && axis < input.num_axes(), where(),
                 ": reduction_param.axis ", axis, " is out of range for the bottom of shape ",
                 input.shape_string(), " (", input.num_axes(), " axes)");
    const int first = input.canonical_axis_index(axis);
    top[0]->reshape(std::vector<int>(input.shape().begin(), input.shape().begin() + first));
    rows_ = input.count(0, first);
    row_size_ = input.count(first);
    coeff_ = param_.reduction_param().coeff();
    if (operation_ == ReductionParameter::MEAN) coeff_ /= static_cast<float>(row_size_);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    // The ones are made here, not at reshape: by now the bottom, as large,
    // is allocated (a huge shape ends in the blob's "out of host memory").
    if ((operation_ == ReductionParameter::SUM || operation_ == ReductionParameter::MEAN) &&
        ones_.size() != row_size_) {
      ones_.assign(row_size_, 1.0f);
    }
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    for (std::size_t row = 0; row < rows_; ++row, x += row_size_) {
      switch (operation_) {
        case ReductionParameter::SUM:
        case ReductionParameter::MEAN:
          y[row] = math::dot(row_size_, ones_.data(), x);
          break;
        case ReductionParameter::ASUM:
          y[row] = math::asum(row_size_, x);
          break;
        case ReductionParameter::SUMSQ:
          y[row] = math::dot(row_size_, x, x);
          break;
      }
    }
    if (coeff_ != 1.0f) math::scale(rows_, coeff_, y);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* x = bottom[0]->cpu_data();
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    // One loop per kind, each with its functor built from a constant, so the
    // compiler drops the functor's switch (read inside the loop, it ran 4-8x
    // slower).
    const auto fill_rows = [&](const ops::ReductionGradient gradient) {
      for (std::size_t row = 0; row < rows_; ++row, x += row_size_, dx += row_size_) {
        const float row_coeff = dy[row] * coeff_;
        for (std::size_t j = 0; j < row_size_; ++j) dx[j] = gradient(x[j], row_coeff);
      }
    };
    switch (kind()) {
      case ops::ReductionKind::kAbsoluteSum:
        fill_rows(ops::ReductionGradient{ops::ReductionKind::kAbsoluteSum});
        break;
      case ops::ReductionKind::kSumOfSquares:
        fill_rows(ops::ReductionGradient{ops::ReductionKind::kSumOfSquares});
        break;
      case ops::ReductionKind::kSum:
        fill_rows(ops::ReductionGradient{ops::ReductionKind::kSum});
        break;
    }
  }

  ops::ReductionKind kind() const {
    switch (operation_) {
      case ReductionParameter::ASUM:
        return ops::ReductionKind::kAbsoluteSum;
      case ReductionParameter::SUMSQ:
        return ops::ReductionKind::kSumOfSquares;
      default:
        return ops::ReductionKind::kSum;
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::reduce_rows(bottom[0]->gpu_data(), rows_, row_size_, kind(), coeff_,
                      top[0]->mutable_gpu_data());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::reduce_rows_backward(bottom[0]->gpu_data(), top[0]->gpu_diff(), rows_, row_size_, kind(),
                               coeff_, bottom[0]->mutable_gpu_diff());
  }
#endif

 private:
  ReductionParameter::ReductionOp operation_ = ReductionParameter::SUM;
  std::size_t rows_ = 0;      // M
  std::size_t row_size_ = 0;  // D
  float coeff_ = 1.0f;        // coeff, divided by D for MEAN
  std::vector<float> ones_;   // D ones: SUM and MEAN sum by a dot product, as Caffe does
};

}  // namespace

void register_reduction_layer(LayerRegistry& registry) {
  add_layer<ReductionLayer>(registry, "Reduction");
}

}  // namespace xtrain
