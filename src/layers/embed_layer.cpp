// Embed (embed_param: num_output N, input_dim K, bias_term, weight_filler,
// bias_filler): a lookup table. Each bottom value is an integer index
// i in [0, K) and becomes row i of the weight W (K x N), plus the bias b (N):
//   top[..., :] = W[bottom[...], :] + b       top shape = bottom shape + (N)
//   dE/dW[i, :] += sum of dE/dtop over the positions holding index i
//   dE/db       += sum of dE/dtop over all positions
// (the same as an InnerProduct on one-hot inputs). Indices get no gradient:
// asking for one is an error, and force_backward does not ask.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/device_apply.hpp"
#include "core/math_functions.hpp"
#include "core/math_on.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/embed_ops.hpp"
#include "layers/learnable_blobs.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/copy_kernels.hpp"
#include "layers/loss_kernels.hpp"
#include "layers/row_gradient.hpp"
#endif

namespace xtrain {
namespace {

using math::Transpose;

class EmbedLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Embed"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 0; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    const EmbedParameter& embed = param_.embed_param();
    const auto int_max = static_cast<std::uint32_t>(std::numeric_limits<int>::max());
    XTRAIN_CHECK(embed.num_output() > 0 && embed.num_output() <= int_max, where(),
                 ": embed_param.num_output must be set to a positive value, got ",
                 embed.num_output());
    XTRAIN_CHECK(embed.input_dim() > 0 && embed.input_dim() <= int_max, where(),
                 ": embed_param.input_dim (the number of distinct indices) must be set to a "
                 "positive value, got ",
                 embed.input_dim());
    num_output_ = static_cast<int>(embed.num_output());
    input_dim_ = static_cast<int>(embed.input_dim());
    bias_term_ = embed.bias_term();
    std::vector<LearnableBlobSpec> specs = {
        {"weight", {input_dim_, num_output_}, &embed.weight_filler(), "weight_filler"}};
    if (bias_term_) specs.push_back({"bias", {num_output_}, &embed.bias_filler(), "bias_filler"});
    setup_learnable_blobs(where(), specs,
                          "(input_dim K, num_output N); check input_dim and num_output", &blobs_,
                          random());
    for (std::size_t i = 0; i < blobs_.size(); ++i) {
      set_param_propagate_down(static_cast<int>(i), true);
    }
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    std::vector<int> shape = bottom[0]->shape();
    shape.push_back(num_output_);
    top[0]->reshape(shape);
    positions_ = bottom[0]->count();
  }

 protected:
  // The index at position p, checked: an out-of-range index would read or
  // write outside the weights.
  int index_at(const Blob& input, const float* indices, std::size_t p) const {
    const float value = indices[p];
    XTRAIN_CHECK(ops::embed_index_valid(value, input_dim_), where(), ": the bottom ",
                 input.shape_string(), " holds ", value, " at position ", p,
                 "; every value must be an integer index in [0, input_dim = ", input_dim_, ")");
    return static_cast<int>(value);
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* weights = blobs_[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    const float* indices = bottom[0]->cpu_data();
    for (std::size_t p = 0; p < positions_; ++p) {
      const int index = index_at(*bottom[0], indices, p);
      math::copy(num_output_, weights + static_cast<std::size_t>(index) * num_output_,
                 y + p * num_output_);
    }
    add_bias(Device::cpu(), y);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_index_gradient(propagate_down);
    const float* dy = top[0]->cpu_diff();
    if (param_propagate_down(0)) {
      float* weight_diff = blobs_[0]->mutable_cpu_diff();
      const float* indices = bottom[0]->cpu_data();
      for (std::size_t p = 0; p < positions_; ++p) {
        const int index = index_at(*bottom[0], indices, p);
        const float* source = dy + p * num_output_;
        float* target = weight_diff + static_cast<std::size_t>(index) * num_output_;
        const ops::Add add;  // the functor of the GPU's segmented sums (layers/row_segments.hpp)
        for (int n = 0; n < num_output_; ++n) target[n] = add(target[n], source[n]);
      }
    }
    add_bias_gradient(Device::cpu(), dy);
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* indices = bottom[0]->gpu_data();
    check_indices_gpu(*bottom[0]);
    float* y = top[0]->mutable_gpu_data();
    cuda::embed_forward(indices, blobs_[0]->gpu_data(), y, positions_, num_output_);
    add_bias(device(), y);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_index_gradient(propagate_down);
    const float* dy = top[0]->gpu_diff();
    if (param_propagate_down(0)) {
      // Checked by forward_gpu; read on the host, where the sums are planned
      // (usually a data layer's copy, already there).
      const float* indices = bottom[0]->cpu_data();
      weight_gradient_.add(
          positions_, [indices](std::size_t p) { return static_cast<std::size_t>(indices[p]); },
          static_cast<std::size_t>(num_output_), dy, blobs_[0]->mutable_gpu_diff());
    }
    add_bias_gradient(device(), dy);
  }

  // Throws, naming the first bad value, as index_at does on the CPU.
  void check_indices_gpu(const Blob& input) {
    scratch_.reshape(std::vector<int>{cuda::kLossScratchFloats});
    const long long invalid = cuda::embed_first_invalid_index(
        input.gpu_data(), positions_, input_dim_, scratch_.mutable_gpu_data());
    if (invalid >= 0) index_at(input, input.cpu_data(), static_cast<std::size_t>(invalid));
  }

  Blob scratch_;  // device memory for the index check
  DeviceRowGradient weight_gradient_;
#endif

 private:
  void refuse_index_gradient(const std::vector<bool>& propagate_down) const {
    XTRAIN_CHECK(!propagate_down[0], where(), ": its bottom '",
                 param_.bottom_size() > 0 ? param_.bottom(0) : std::string("?"),
                 "' holds indices, which have no gradient; add propagate_down: false");
  }

  // y (positions x N) += 1 * b^T, on the device y lives on.
  void add_bias(const Device& device, float* y) {
    if (!bias_term_ || positions_ == 0) return;
    math::on(device).gemm(Transpose::kNo, Transpose::kNo, static_cast<int>(positions_), num_output_,
                          1, 1.0f, ones_.on(device, positions_), ops::data_on(device, *blobs_[1]),
                          1.0f, y);
  }

  // db += dy^T * 1
  void add_bias_gradient(const Device& device, const float* dy) {
    if (!bias_term_ || !param_propagate_down(1) || positions_ == 0) return;
    math::on(device).gemv(Transpose::kYes, static_cast<int>(positions_), num_output_, 1.0f, dy,
                          ones_.on(device, positions_), 1.0f,
                          ops::mutable_diff_on(device, *blobs_[1]));
  }

  int num_output_ = 0;  // N
  int input_dim_ = 0;   // K
  bool bias_term_ = true;
  std::size_t positions_ = 0;  // bottom count
  math::Ones ones_;            // positions_ ones, to add and sum the bias by BLAS
};

}  // namespace

void register_embed_layer(LayerRegistry& registry) { add_layer<EmbedLayer>(registry, "Embed"); }

}  // namespace xtrain
