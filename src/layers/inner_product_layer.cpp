#include "layers/inner_product_layer.hpp"

#include <limits>
#include <string>

#include "core/device_apply.hpp"
#include "core/math_functions.hpp"
#include "core/rounded_operand.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/learnable_blobs.hpp"
#include "layers/onednn_inner_product.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using math::Transpose;
using ops::data_on;
using ops::diff_on;
using ops::mutable_data_on;
using ops::mutable_diff_on;

}  // namespace

int InnerProductLayer::axis_checked(const Blob& input) const {
  const int axis = param_.inner_product_param().axis();
  XTRAIN_CHECK(axis >= -input.num_axes() && axis < input.num_axes(), where(), ": axis ", axis,
               " is out of range for the input of shape ", input.shape_string());
  return input.canonical_axis_index(axis);
}

void InnerProductLayer::layer_setup(const BlobVec& bottom, const BlobVec& top) {
  (void)top;
  const InnerProductParameter& ip = param_.inner_product_param();
  XTRAIN_CHECK(ip.num_output() > 0 && ip.num_output() <= std::numeric_limits<int>::max(), where(),
               ": inner_product_param.num_output must be > 0");
  num_output_ = static_cast<int>(ip.num_output());
  bias_term_ = ip.bias_term();
  transpose_ = ip.transpose();
  const Blob& input = *bottom[0];
  const std::size_t input_size = input.count(axis_checked(input));
  XTRAIN_CHECK(
      input_size > 0 && input_size <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
      where(), ": the input ", input.shape_string(), " gives ", input_size,
      " values per row; it must be between 1 and 2^31 - 1");
  input_size_ = static_cast<int>(input_size);

  const std::vector<int> weight_shape = transpose_ ? std::vector<int>{input_size_, num_output_}
                                                   : std::vector<int>{num_output_, input_size_};
  const std::vector<int> bias_shape = {num_output_};
  std::vector<LearnableBlobSpec> specs = {
      {"weight", weight_shape, &ip.weight_filler(), "weight_filler"}};
  if (bias_term_) specs.push_back({"bias", bias_shape, &ip.bias_filler(), "bias_filler"});
  setup_learnable_blobs(
      where(), specs,
      std::string(transpose_ ? "(input size K, num_output N)" : "(num_output N, input size K)") +
          "; check num_output, transpose and the input shape " + input.shape_string(),
      &blobs_, random());
  for (std::size_t i = 0; i < blobs_.size(); ++i) {
    set_param_propagate_down(static_cast<int>(i), true);
  }
}

InnerProductLayer::InnerProductLayer(const LayerParameter& param) : Layer(param) {}

// Out of line: Bfloat16InnerProduct is complete only here.
InnerProductLayer::~InnerProductLayer() = default;

void InnerProductLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob& input = *bottom[0];
  const int axis = axis_checked(input);
  XTRAIN_CHECK(input.count(axis) == static_cast<std::size_t>(input_size_), where(),
               ": the input size changed: the weights expect K = ", input_size_,
               " values per row (axes from ", axis, " on), but the input ", input.shape_string(),
               " has ", input.count(axis),
               "; an InnerProduct layer cannot change its input size after setup");
  rows_ = static_cast<int>(input.count(0, axis));
  std::vector<int> top_shape(input.shape().begin(), input.shape().begin() + axis);
  top_shape.push_back(num_output_);
  top[0]->reshape(top_shape);

  const bool bfloat16 = precision().forward_type == NumberType::kBfloat16 &&
                        precision().backward_type == NumberType::kBfloat16 && !device().is_gpu() &&
                        cpu_computes_bfloat16_natively() && rows_ > 0;
  const InnerProductShape shape{rows_, input_size_, num_output_, transpose_, bias_term_};
  if (!bfloat16) {
    bfloat16_.reset();
  } else if (!bfloat16_ || bfloat16_->shape().rows != rows_) {
    std::string why_not;
    bfloat16_ = make_bfloat16_inner_product(shape, &why_not);
    if (bfloat16_) {
      XLOG(INFO) << where() << ": " << bfloat16_->name();
    } else {
      XLOG(INFO) << where() << ": fp32 products on bf16-rounded operands, because " << why_not;
    }
  }
}

void InnerProductLayer::forward_on(const Device& device, const BlobVec& bottom,
                                   const BlobVec& top) {
  if (rows_ == 0) return;
  if (bfloat16_ && !device.is_gpu()) {
    bfloat16_->forward(bottom[0]->cpu_data(), blobs_[0]->cpu_data(),
                       bias_term_ ? blobs_[1]->cpu_data() : nullptr, top[0]->mutable_cpu_data());
    return;
  }
  const math::On blas = math::on(device);
  float* output = mutable_data_on(device, *top[0]);
  // In a 16-bit precision the products take operands rounded to the type.
  const NumberType round_to = precision().forward_type;
  const RoundedOperand input(device, round_to, data_on(device, *bottom[0]), bottom[0]->count(),
                             OperandSlot::kInput, bottom_arrives_in(0));
  const RoundedOperand weights(device, round_to, data_on(device, *blobs_[0]), blobs_[0]->count(),
                               OperandSlot::kWeights, NumberType::kFloat32);
  // Y (M x N) = X * W^T, or X * W when W is stored transposed
  blas.gemm(Transpose::kNo, transpose_ ? Transpose::kNo : Transpose::kYes, rows_, num_output_,
            input_size_, 1.0f, input.get(), weights.get(), 0.0f, output);
  if (bias_term_) {
    // Y += 1 * b^T
    blas.gemm(Transpose::kNo, Transpose::kNo, rows_, num_output_, 1, 1.0f, ones_.on(device, rows_),
              data_on(device, *blobs_[1]), 1.0f, output);
  }
}

void InnerProductLayer::backward_on(const Device& device, const BlobVec& top,
                                    const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (rows_ == 0) return;
  if (bfloat16_ && !device.is_gpu()) {
    bfloat16_->backward(
        bottom[0]->cpu_data(), top[0]->cpu_diff(), blobs_[0]->cpu_data(),
        param_propagate_down(0) ? blobs_[0]->mutable_cpu_diff() : nullptr,
        bias_term_ && param_propagate_down(1) ? blobs_[1]->mutable_cpu_diff() : nullptr,
        propagate_down[0] ? bottom[0]->mutable_cpu_diff() : nullptr);
    return;
  }
  const math::On blas = math::on(device);
  const NumberType round_to = precision().backward_type;
  const RoundedOperand gradient(device, round_to, diff_on(device, *top[0]), top[0]->count(),
                                OperandSlot::kGradient, top_gradient_arrives_in(0));
  const float* output_diff = gradient.get();
  if (param_propagate_down(0)) {
    const RoundedOperand input_operand(device, round_to, data_on(device, *bottom[0]),
                                       bottom[0]->count(), OperandSlot::kInput,
                                       bottom_arrives_in(0));
    const float* input = input_operand.get();
    float* weight_diff = mutable_diff_on(device, *blobs_[0]);
    if (transpose_) {
      // dW (K x N) += X^T * dtop
      blas.gemm(Transpose::kYes, Transpose::kNo, input_size_, num_output_, rows_, 1.0f, input,
                output_diff, 1.0f, weight_diff);
    } else {
      // dW (N x K) += dtop^T * X
      blas.gemm(Transpose::kYes, Transpose::kNo, num_output_, input_size_, rows_, 1.0f, output_diff,
                input, 1.0f, weight_diff);
    }
  }
  if (bias_term_ && param_propagate_down(1)) {
    // db += dtop^T * 1
    blas.gemv(Transpose::kYes, rows_, num_output_, 1.0f, output_diff, ones_.on(device, rows_), 1.0f,
              mutable_diff_on(device, *blobs_[1]));
  }
  if (propagate_down[0]) {
    const RoundedOperand weights(device, round_to, data_on(device, *blobs_[0]), blobs_[0]->count(),
                                 OperandSlot::kWeights, NumberType::kFloat32);
    // dX (M x K) = dtop * W, or dtop * W^T when W is stored transposed
    blas.gemm(Transpose::kNo, transpose_ ? Transpose::kYes : Transpose::kNo, rows_, input_size_,
              num_output_, 1.0f, output_diff, weights.get(), 0.0f,
              mutable_diff_on(device, *bottom[0]));
  }
}

void register_inner_product_layer(LayerRegistry& registry) {
  add_layer<InnerProductLayer>(registry, "InnerProduct");
}

}  // namespace xtrain
