// MVN (mvn_param: normalize_variance, across_channels, eps): mean-variance
// normalisation of each (n, c) plane, or of each item n across_channels.
// For each such row x of D values, mu = mean(x), sigma = sqrt(mean((x - mu)^2)):
//   normalize_variance: y = (x - mu) / (sigma + eps)
//       dE/dx = (dE/dy - mean(dE/dy) - y mean(dE/dy * y)) / (sigma + eps)
//   otherwise:          y = x - mu
//       dE/dx = dE/dy - mean(dE/dy)
// As in Caffe 1.0, eps is added to the standard deviation (not the variance),
// the gradient treats sigma + eps as if eps were 0 inside d(sigma)/dx, and
// the top is 4-d: (num, channels, height, width) of the bottom (at most 4 axes).
#include <cmath>
#include <vector>

#include "core/math_functions.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/reduction_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#include "layers/reduction_kernels.hpp"
#endif

namespace xtrain {
namespace {

using math::Transpose;

class MVNLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "MVN"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() <= 4, where(), ": the bottom ", input.shape_string(), " has ",
                 input.num_axes(), " axes; MVN takes at most 4 (num, channels, height, width)");
    top[0]->reshape({input.num(), input.channels(), input.height(), input.width()});
    const MVNParameter& mvn = param_.mvn_param();
    rows_ = static_cast<std::size_t>(input.num()) *
            (mvn.across_channels() ? 1 : static_cast<std::size_t>(input.channels()));
    row_size_ = rows_ == 0 ? 0 : input.count() / rows_;
    mean_.resize(rows_);
    scale_.resize(rows_);
    sums_.resize(rows_);
  }

 protected:
  bool normalize_variance() const { return param_.mvn_param().normalize_variance(); }

  // The CPU passes' ones and squares, made when they run, not at reshape: by
  // then the bottom, as large, is allocated (a huge shape ends in the
  // blob's "out of host memory", not in a failed new here).
  void make_cpu_scratch(std::size_t count) {
    if (ones_.size() != row_size_) ones_.assign(row_size_, 1.0f);
    squares_.resize(count);
  }

  // out[r] = alpha * sum of row r of `rows` (Caffe's gemv against ones).
  void row_sums(const float* values, float alpha, float* out) const {
    math::gemv(Transpose::kNo, static_cast<int>(rows_), static_cast<int>(row_size_), alpha, values,
               ones_.data(), 0.0f, out);
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (rows_ == 0 || row_size_ == 0) return;
    make_cpu_scratch(bottom[0]->count());
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    const float inverse_size = static_cast<float>(1.0 / static_cast<double>(row_size_));
    row_sums(x, inverse_size, mean_.data());
    const ops::Add add;
    for (std::size_t r = 0, i = 0; r < rows_; ++r) {
      const float minus_mean = -mean_[r];
      for (std::size_t end = i + row_size_; i < end; ++i) y[i] = add(x[i], minus_mean);
    }
    if (!normalize_variance()) return;
    const ops::MvnSquare square;
    for (std::size_t i = 0; i < squares_.size(); ++i) squares_[i] = square(y[i]);
    row_sums(squares_.data(), inverse_size, scale_.data());
    const ops::MvnStddev stddev{param_.mvn_param().eps()};
    for (std::size_t r = 0; r < rows_; ++r) scale_[r] = stddev(scale_[r]);
    const ops::Divide divide;
    for (std::size_t r = 0, i = 0; r < rows_; ++r) {
      for (std::size_t end = i + row_size_; i < end; ++i) y[i] = divide(y[i], scale_[r]);
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0] || rows_ == 0 || row_size_ == 0) return;
    make_cpu_scratch(bottom[0]->count());
    const float* y = top[0]->cpu_data();
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    const float minus_inverse_size = static_cast<float>(-1.0 / static_cast<double>(row_size_));
    if (!normalize_variance()) {
      row_sums(dy, -minus_inverse_size, mean_.data());
      const ops::Add add;
      for (std::size_t r = 0, i = 0; r < rows_; ++r) {
        const float minus_mean = -mean_[r];
        for (std::size_t end = i + row_size_; i < end; ++i) dx[i] = add(dy[i], minus_mean);
      }
      return;
    }
    // sums_ = sum(dy * y) and mean_ = sum(dy) per row, both read before dx is
    // written (in place, dx and dy are one array).
    const ops::Multiply multiply;
    for (std::size_t i = 0; i < squares_.size(); ++i) squares_[i] = multiply(y[i], dy[i]);
    row_sums(squares_.data(), 1.0f, sums_.data());
    row_sums(dy, 1.0f, mean_.data());
    const ops::MvnGradient gradient{minus_inverse_size};
    for (std::size_t r = 0, i = 0; r < rows_; ++r) {
      for (std::size_t end = i + row_size_; i < end; ++i) {
        dx[i] = gradient(dy[i], y[i], mean_[r], sums_[r], scale_[r]);
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  // The CPU passes step by step: row sums by gemv with a ones vector, the
  // per-value steps by kernels applying the same functors. In place, dx and
  // dy are one array: both sums are taken before dx is written, as on the CPU.
  void row_sums_gpu(const float* values, float alpha, float* out) {
    math::gpu::gemv(Transpose::kNo, static_cast<int>(rows_), static_cast<int>(row_size_), alpha,
                    values, device_ones(), 0.0f, out);
  }

  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (rows_ == 0 || row_size_ == 0) return;
    reshape_device_buffers();
    const float* x = bottom[0]->gpu_data();
    float* y = top[0]->mutable_gpu_data();
    const float inverse_size = static_cast<float>(1.0 / static_cast<double>(row_size_));
    float* mean = mean_gpu_.mutable_gpu_data();
    row_sums_gpu(x, inverse_size, mean);
    cuda::mvn_subtract_row_values(x, mean, y, rows_, row_size_);
    if (!normalize_variance()) return;
    float* squares = squares_gpu_.mutable_gpu_data();
    cuda::mvn_square(y, squares, rows_ * row_size_);
    float* stddev = scale_gpu_.mutable_gpu_data();
    row_sums_gpu(squares, inverse_size, stddev);
    cuda::mvn_stddev(stddev, rows_, param_.mvn_param().eps());
    cuda::mvn_divide_by_row_values(y, stddev, rows_, row_size_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0] || rows_ == 0 || row_size_ == 0) return;
    reshape_device_buffers();
    const float* y = top[0]->gpu_data();
    const float* dy = top[0]->gpu_diff();
    float* dx = bottom[0]->mutable_gpu_diff();
    const float minus_inverse_size = static_cast<float>(-1.0 / static_cast<double>(row_size_));
    float* dy_sums = mean_gpu_.mutable_gpu_data();
    if (!normalize_variance()) {
      row_sums_gpu(dy, -minus_inverse_size, dy_sums);
      cuda::mvn_subtract_row_values(dy, dy_sums, dx, rows_, row_size_);
      return;
    }
    float* products = squares_gpu_.mutable_gpu_data();
    cuda::multiply(y, dy, products, rows_ * row_size_);
    float* dy_y_sums = sums_gpu_.mutable_gpu_data();
    row_sums_gpu(products, 1.0f, dy_y_sums);
    row_sums_gpu(dy, 1.0f, dy_sums);
    cuda::mvn_backward(dy, y, dy_sums, dy_y_sums, scale_gpu_.gpu_data(), dx, rows_, row_size_,
                       minus_inverse_size);
  }

  void reshape_device_buffers() {
    const std::vector<int> rows{static_cast<int>(rows_)};
    mean_gpu_.reshape(rows);
    scale_gpu_.reshape(rows);
    sums_gpu_.reshape(rows);
    squares_gpu_.reshape(std::vector<int>{static_cast<int>(rows_ * row_size_)});
  }

  const float* device_ones() {
    if (!device_ones_filled_ || device_ones_.count() != row_size_) {
      device_ones_.reshape(std::vector<int>{static_cast<int>(row_size_)});
      math::gpu::set(row_size_, 1.0f, device_ones_.mutable_gpu_data());
      device_ones_filled_ = true;
    }
    return device_ones_.gpu_data();
  }

  // The device twins of the vectors below (scale_gpu_ is kept for backward).
  Blob mean_gpu_, scale_gpu_, sums_gpu_, squares_gpu_, device_ones_;
  bool device_ones_filled_ = false;
#endif

 private:
  std::size_t rows_ = 0;      // normalised groups: N, or N * C
  std::size_t row_size_ = 0;  // values per group
  std::vector<float> ones_;
  std::vector<float> mean_;     // per row: the mean (forward), sum(dy) (backward)
  std::vector<float> scale_;    // per row: sigma + eps, kept for backward
  std::vector<float> sums_;     // per row: sum(dy * y)
  std::vector<float> squares_;  // per element: (x - mu)^2 (forward), y dy (backward)
};

}  // namespace

void register_mvn_layer(LayerRegistry& registry) { add_layer<MVNLayer>(registry, "MVN"); }

}  // namespace xtrain
