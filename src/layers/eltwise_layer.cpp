// Eltwise (Caffe type "Eltwise"): combines two or more bottoms of one shape
// value by value.
//   SUM (default):  top = sum_k coeff_k * bottom_k    (coeff: one per bottom, default 1)
//                   dbottom_k = coeff_k * dtop
//   PROD:           top = prod_k bottom_k
//                   dbottom_k = dtop * prod_{j != k} bottom_j   (stable_prod_grad, default)
//                   dbottom_k = dtop * top / bottom_k            (otherwise: faster, but
//                                                                 inf/NaN where bottom_k = 0)
//   MAX:            top = max_k bottom_k; the gradient goes to the bottom that
//                   gave the max. As in Caffe, a tie between bottoms 0 and 1
//                   goes to bottom 1, and a later bottom wins only if strictly
//                   greater.
// Not in place (forward overwrites the top before reading every bottom). A SUM
// takes over the in-place ReLU after it (EngineHooks::absorb_following_relu): it
// writes ReLU(top), and backward masks dtop by top > 0 in its first sweep.
#include <algorithm>
#include <memory>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/engine_hooks.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/eltwise_ops.hpp"
#include "layers/parallel_blocks.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#include "layers/eltwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#include "xtrain/synced_memory.hpp"
#endif

namespace xtrain {
namespace {

class EltwiseLayer : public Layer, public EngineHooks {
 public:
  using Layer::Layer;
  const char* type() const override { return "Eltwise"; }
  int min_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    const EltwiseParameter& eltwise = param_.eltwise_param();
    operation_ = eltwise.operation();
    XTRAIN_CHECK(
        eltwise.coeff_size() == 0 || eltwise.coeff_size() == static_cast<int>(bottom.size()),
        where(), ": eltwise_param has ", eltwise.coeff_size(), " coeff values for ", bottom.size(),
        " bottoms; give one per bottom, or none");
    XTRAIN_CHECK(operation_ == EltwiseParameter::SUM || eltwise.coeff_size() == 0, where(),
                 ": coeff applies to operation SUM only; remove it or use SUM");
    coefficients_.assign(bottom.size(), 1.0f);
    for (int i = 0; i < eltwise.coeff_size(); ++i) coefficients_[i] = eltwise.coeff(i);
    stable_prod_grad_ = eltwise.stable_prod_grad();
  }

  // A SUM can apply the ReLU that follows it in place (EngineHooks::absorb_following_relu);
  // PROD's and MAX's gradients read the top, which the ReLU would change.
  bool absorb_following_relu() override {
    fused_relu_ = operation_ == EltwiseParameter::SUM;
    return fused_relu_;
  }

  // A SUM (and its absorbed ReLU) writes the same bits again from the same
  // bottoms, which the Net brings back first; MAX would rewrite its winners.
  bool can_recompute_top() const override { return operation_ == EltwiseParameter::SUM; }
  void recompute_top(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_ASSERT(can_recompute_top(), "recompute_top on an Eltwise that cannot");
    forward_cpu(bottom, top);
  }

  // Value by value, so any layout will do when all blobs share it.
  bool reads_channel_blocked_bottom(int) const override { return true; }
  bool computes_in_one_layout() const override { return true; }
  std::size_t buffer_bytes() const override { return winner_.capacity() * sizeof(int); }
  // SUM and MAX need no bottom values in backward; the top's only PROD's
  // unstable gradient and an absorbed ReLU's mask.
  bool backward_touches_bottom_data(int) const override {
    return operation_ == EltwiseParameter::PROD;
  }
  bool backward_touches_top_data(int) const override { return reads_output_in_backward(); }
  // A sum's first bottom of coefficient 1 has the top's gradient as its own
  // (with an absorbed ReLU, masked in place before any bottom reads it).
  int top_whose_gradient_storage_bottom_may_use(int bottom_index) const override {
    if (operation_ != EltwiseParameter::SUM) return -1;
    const auto first_of_one = std::find(coefficients_.begin(), coefficients_.end(), 1.0f);
    return first_of_one - coefficients_.begin() == bottom_index ? 0 : -1;
  }
  bool can_write_channel_blocked_top(int, const std::vector<bool>& blocked_bottoms) const override {
    return std::all_of(blocked_bottoms.begin(), blocked_bottoms.end(), [](bool b) { return b; });
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    for (std::size_t i = 1; i < bottom.size(); ++i) {
      XTRAIN_CHECK(bottom[i]->shape() == bottom[0]->shape(), where(),
                   ": all bottoms must have one shape, but bottom 0 is ", bottom[0]->shape_string(),
                   " and bottom ", i, " is ", bottom[i]->shape_string());
    }
    for (const Blob* input : bottom) {
      XTRAIN_CHECK(input != top[0], where(),
                   " cannot run in place; give its top a name different from its bottoms");
    }
    top[0]->reshape_like(*bottom[0]);
    if (operation_ == EltwiseParameter::MAX) winner_.resize(bottom[0]->count());
  }

 protected:
  // Each pass runs over blocks of values spread across the thread pool; a
  // block stays in cache while every bottom is folded into it, in the order
  // Caffe folds them, so the results are Caffe's sweep-by-sweep ones.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    layout_ = writes_channel_blocked_top(0) ? MemoryLayout::kChannelBlocked : MemoryLayout::kPlain;
    float* output = top[0]->overwrite_cpu_data_in(layout_);
    std::vector<const float*> inputs;
    for (const Blob* input : bottom) inputs.push_back(input->cpu_data_in(layout_));
    const std::size_t last = inputs.size();
    switch (operation_) {
      case EltwiseParameter::PROD:
        for_each_block(top[0]->count(), last, [&](std::size_t begin, std::size_t end) {
          const float* first = inputs[0];
          const float* second = inputs[1];
          const ops::Multiply multiply;
          for (std::size_t j = begin; j < end; ++j) output[j] = multiply(first[j], second[j]);
          for (std::size_t k = 2; k < last; ++k) {
            const float* input = inputs[k];
            for (std::size_t j = begin; j < end; ++j) output[j] = multiply(output[j], input[j]);
          }
        });
        break;
      case EltwiseParameter::SUM:
        for_each_block(top[0]->count(), 2 * last, [&](std::size_t begin, std::size_t end) {
          const float* first = inputs[0];
          const ops::EltwiseSumFirst sum_first{coefficients_[0]};
          for (std::size_t j = begin; j < end; ++j) output[j] = sum_first(first[j]);
          for (std::size_t k = 1; k < last; ++k) {
            const float* input = inputs[k];
            const ops::EltwiseSumNext sum_next{coefficients_[k]};
            for (std::size_t j = begin; j < end; ++j) output[j] = sum_next(output[j], input[j]);
          }
          if (fused_relu_) {  // the absorbed ReLU, while the block is in cache
            const ops::ReluForward relu{0.0f};
            // simd: without it GCC keeps the select as a branch, which the
            // signs of real data mispredict half the time.
#pragma omp simd
            for (std::size_t j = begin; j < end; ++j) output[j] = relu(output[j]);
          }
        });
        break;
      case EltwiseParameter::MAX:
        for_each_block(top[0]->count(), 2 * last, [&](std::size_t begin, std::size_t end) {
          const float* first = inputs[0];
          const float* second = inputs[1];
          int* winner = winner_.data();
          for (std::size_t j = begin; j < end; ++j) {
            const bool first_wins = ops::eltwise_max_takes(first[j], second[j]);
            output[j] = first_wins ? first[j] : second[j];
            winner[j] = first_wins ? 0 : 1;
          }
          for (std::size_t k = 2; k < last; ++k) {
            const float* input = inputs[k];
            for (std::size_t j = begin; j < end; ++j) {
              if (ops::eltwise_max_takes(input[j], output[j])) {
                output[j] = input[j];
                winner[j] = static_cast<int>(k);
              }
            }
          }
        });
        break;
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const std::size_t count = top[0]->count();
    // In the layout of the forward pass (MAX's winners are in its order).
    // Values only where used: the memory plan may have lent the others'
    // storage to another blob (backward_touches_*_data).
    const float* output = reads_output_in_backward() ? top[0]->cpu_data_in(layout_) : nullptr;
    const float* output_diff = top[0]->cpu_diff_in(layout_);
    // With an absorbed ReLU the first bottom's pass also masks dtop in place
    // (the ReLU's top and bottom are this layer's top), for the others.
    float* unmasked_diff = fused_relu_ ? top[0]->mutable_cpu_diff_in(layout_) : nullptr;
    std::vector<const float*> inputs(bottom.size(), nullptr);
    if (operation_ == EltwiseParameter::PROD) {
      for (std::size_t k = 0; k < bottom.size(); ++k) inputs[k] = bottom[k]->cpu_data_in(layout_);
    }
    for (std::size_t k = 0; k < bottom.size(); ++k) {
      if (!propagate_down[k]) continue;
      const float* input = inputs[k];
      float* input_diff = bottom[k]->overwrite_cpu_diff_in(layout_);
      switch (operation_) {
        case EltwiseParameter::PROD:
          for_each_block(count, inputs.size(), [&](std::size_t begin, std::size_t end) {
            if (stable_prod_grad_) {
              product_of_others(inputs, k, begin, end, input_diff);
              const ops::Multiply multiply;
              for (std::size_t j = begin; j < end; ++j) {
                input_diff[j] = multiply(input_diff[j], output_diff[j]);
              }
            } else {
              const ops::EltwiseProdGradientFromTop gradient;
              for (std::size_t j = begin; j < end; ++j) {
                input_diff[j] = gradient(output[j], input[j], output_diff[j]);
              }
            }
          });
          break;
        case EltwiseParameter::SUM: {
          const float coefficient = coefficients_[k];
          const ops::ScaleBy scale{coefficient};
          if (unmasked_diff) {
            const ops::ReluBackward relu{0.0f};
            for_each_block(count, 2, [&](std::size_t begin, std::size_t end) {
#pragma omp simd
              for (std::size_t j = begin; j < end; ++j) {
                const float masked = relu(output[j], unmasked_diff[j]);
                unmasked_diff[j] = masked;
                input_diff[j] = scale(masked);
              }
            });
            unmasked_diff = nullptr;  // masked now
            break;
          }
          // In the top's gradient storage already (gradients in place).
          if (input_diff == output_diff && coefficient == 1.0f) break;
          for_each_block(count, 1, [&](std::size_t begin, std::size_t end) {
            for (std::size_t j = begin; j < end; ++j) input_diff[j] = scale(output_diff[j]);
          });
          break;
        }
        case EltwiseParameter::MAX: {
          const int* winner = winner_.data();
          const ops::EltwiseMaxGradient gradient{static_cast<int>(k)};
          for_each_block(count, 1, [&](std::size_t begin, std::size_t end) {
            for (std::size_t j = begin; j < end; ++j) {
              input_diff[j] = gradient(winner[j], output_diff[j]);
            }
          });
          break;
        }
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  // The CPU passes' sweeps, one kernel per bottom (plain layout: the GPU net
  // keeps activations plain).
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const std::size_t count = top[0]->count();
    float* output = top[0]->mutable_gpu_data();
    switch (operation_) {
      case EltwiseParameter::PROD:
        cuda::multiply(bottom[0]->gpu_data(), bottom[1]->gpu_data(), output, count);
        for (std::size_t k = 2; k < bottom.size(); ++k) {
          cuda::multiply(output, bottom[k]->gpu_data(), output, count);
        }
        break;
      case EltwiseParameter::SUM:
        cuda::eltwise_sum_first(bottom[0]->gpu_data(), coefficients_[0], output, count);
        for (std::size_t k = 1; k < bottom.size(); ++k) {
          cuda::eltwise_sum_next(bottom[k]->gpu_data(), coefficients_[k], output, count);
        }
        if (fused_relu_) cuda::relu_forward(output, output, count, 0.0f);
        break;
      case EltwiseParameter::MAX: {
        int* winner = device_winners(count);
        cuda::eltwise_max_first(bottom[0]->gpu_data(), bottom[1]->gpu_data(), output, winner,
                                count);
        for (std::size_t k = 2; k < bottom.size(); ++k) {
          cuda::eltwise_max_next(bottom[k]->gpu_data(), static_cast<int>(k), output, winner, count);
        }
        break;
      }
    }
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const std::size_t count = top[0]->count();
    const float* output = top[0]->gpu_data();
    const float* output_diff = top[0]->gpu_diff();
    if (fused_relu_ && operation_ == EltwiseParameter::SUM) {
      float* masked = top[0]->mutable_gpu_diff();
      cuda::relu_backward(output, masked, masked, count, 0.0f);
    }
    for (std::size_t k = 0; k < bottom.size(); ++k) {
      if (!propagate_down[k]) continue;
      float* input_diff = bottom[k]->mutable_gpu_diff();
      switch (operation_) {
        case EltwiseParameter::PROD:
          if (stable_prod_grad_) {
            bool started = false;
            for (std::size_t j = 0; j < bottom.size(); ++j) {
              if (j == k) continue;
              if (!started) {
                math::gpu::copy(count, bottom[j]->gpu_data(), input_diff);
                started = true;
              } else {
                cuda::multiply(input_diff, bottom[j]->gpu_data(), input_diff, count);
              }
            }
            cuda::multiply(input_diff, output_diff, input_diff, count);
          } else {
            cuda::eltwise_prod_gradient_from_top(output, bottom[k]->gpu_data(), output_diff,
                                                 input_diff, count);
          }
          break;
        case EltwiseParameter::SUM:
          if (input_diff == output_diff && coefficients_[k] == 1.0f) break;  // in place
          cuda::scale_values(output_diff, coefficients_[k], input_diff, count);
          break;
        case EltwiseParameter::MAX:
          cuda::eltwise_max_backward(device_winners(count), output_diff, static_cast<int>(k),
                                     input_diff, count);
          break;
      }
    }
  }

  int* device_winners(std::size_t count) {
    if (!winner_gpu_ || winner_gpu_->size() != count * sizeof(int)) {
      winner_gpu_ = std::make_unique<SyncedMemory>(count * sizeof(int));
    }
    return static_cast<int*>(winner_gpu_->mutable_gpu_data());
  }
#endif

 private:
  bool reads_output_in_backward() const {
    return fused_relu_ || (operation_ == EltwiseParameter::PROD && !stable_prod_grad_);
  }

  // result[begin, end) = product of every input but inputs[skip].
  static void product_of_others(const std::vector<const float*>& inputs, std::size_t skip,
                                std::size_t begin, std::size_t end, float* result) {
    bool started = false;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (k == skip) continue;
      const float* input = inputs[k];
      if (!started) {
        std::copy(input + begin, input + end, result + begin);
        started = true;
      } else {
        const ops::Multiply multiply;
        for (std::size_t j = begin; j < end; ++j) result[j] = multiply(result[j], input[j]);
      }
    }
  }

  EltwiseParameter::EltwiseOp operation_ = EltwiseParameter::SUM;
  bool fused_relu_ = false;  // an in-place ReLU after this SUM is done here
  std::vector<float> coefficients_;
  bool stable_prod_grad_ = true;
  std::vector<int> winner_;  // MAX: the bottom each top value came from
#ifdef XTRAIN_USE_CUDA
  std::unique_ptr<SyncedMemory> winner_gpu_;  // the same, for forward_gpu
#endif
  MemoryLayout layout_ = MemoryLayout::kPlain;  // of every blob in the last forward pass
};

}  // namespace

void register_eltwise_layer(LayerRegistry& registry) {
  add_layer<EltwiseLayer>(registry, "Eltwise");
}

}  // namespace xtrain
