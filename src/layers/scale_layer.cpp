// Scale (Caffe type "Scale"): multiplies bottom[0] by a scale broadcast along
// the axes it lines up with (see broadcast_axes.hpp), optionally adding a bias
// of the same shape:
//   top[o, d, i] = bottom[o, d, i] * scale[d] (+ bias[d])
// The scale is bottom[1] when given (then there is no learned scale), else a
// learned blob spanning scale_param.num_axes axes from scale_param.axis,
// filled by scale_param.filler (constant 1 by default). With bias_term the
// bias is learned (bias_filler, constant 0 by default) and is the last blob.
// Backward, with x = bottom[0]:
//   dbottom = dtop * scale[d]
//   dscale[d] = sum over o, i of dtop[o, d, i] * x[o, d, i]
//   dbias[d]  = sum over o, i of dtop[o, d, i]
// Learned blobs accumulate their gradients; bottom[1]'s diff is overwritten.
// Works in place (forward then keeps a copy of x for dscale). In place it can
// take over the in-place ReLU that follows it (Layer::absorb_following_relu):
// forward then writes ReLU(top) and backward first masks dtop by top > 0, with
// the ReLU's own functors, so the bits are the same. This is Caffe's
// ScaleLayer with its inner BiasLayer folded in.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/parallel_loop.hpp"
#include "layers/broadcast_axes.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/learnable_blobs.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class ScaleLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Scale"; }
  int min_bottom_blobs() const override { return 1; }
  int max_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    const ScaleParameter& scale = param_.scale_param();
    const Blob& input = *bottom[0];
    learned_scale_ = bottom.size() == 1;
    bias_term_ = scale.bias_term();
    std::vector<LearnableBlobSpec> specs;
    std::vector<int> shape;
    if (learned_scale_) {
      shape = learned_operand_shape(where(), "scale_param", input, scale.axis(), scale.num_axes());
      if (scale.has_filler()) {
        scale_filler_ = scale.filler();
      } else {
        scale_filler_.set_type("constant");  // identity by default
        scale_filler_.set_value(1.0f);
      }
      specs.push_back({"scale", shape, &scale_filler_, "scale_param.filler"});
    } else if (bias_term_) {
      // The bias spans the axes bottom[1] covers, as in Caffe.
      shape =
          learned_operand_shape(where(), "scale_param", input, scale.axis(), bottom[1]->num_axes());
    }
    if (bias_term_) {
      specs.push_back({"bias", shape, &scale.bias_filler(), "scale_param.bias_filler"});
    }
    if (specs.empty()) {
      XTRAIN_CHECK(blobs_.empty(), where(), " takes its scale from bottom[1] and has no ",
                   "bias_term, but has ", blobs_.size(), " stored blobs; remove them");
      return;
    }
    setup_learnable_blobs(where(), specs,
                          "(bottom[0]'s dimensions from scale_param.axis over num_axes axes); "
                          "check bias_term and the number of bottoms",
                          &blobs_, random());
    for (std::size_t i = 0; i < blobs_.size(); ++i) {
      set_param_propagate_down(static_cast<int>(i), true);
    }
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& scale = learned_scale_ ? *blobs_[0] : *bottom[1];
    axes_ = broadcast_axes(where(), "scale_param", *bottom[0], scale,
                           learned_scale_ ? "the learned scale" : "bottom[1] (the scale)",
                           param_.scale_param().axis());
    if (bias_term_) {
      XTRAIN_CHECK(blobs_.back()->count() == scale.count(), where(), ": the bias ",
                   blobs_.back()->shape_string(), " does not match the scale ",
                   scale.shape_string());
    }
    in_place_ = top[0] == bottom[0];
    if (in_place_) {
      saved_input_.resize(bottom[0]->count());
    } else {
      top[0]->reshape_like(*bottom[0]);
    }
  }

  bool absorb_following_relu() override {
    if (!in_place_) return false;
    fused_relu_ = true;
    return true;
  }

 protected:
  // Rows are the (o, d) runs of `inner` values that share scale[d]; both
  // passes spread them over the thread pool in memory order. Backward keeps
  // each row's sums and adds them up by d over o in order, so the gradients
  // do not depend on the thread count.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* input = bottom[0]->cpu_data();
    float* output = top[0]->mutable_cpu_data();
    // In place, the input is copied for backward in the same sweep.
    float* saved = top[0] == bottom[0] ? saved_input_.data() : nullptr;
    const float* scale = scale_blob(bottom)->cpu_data();
    const float* bias = bias_term_ ? blobs_.back()->cpu_data() : nullptr;
    const std::size_t inner = axes_.inner;
    parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner * 2,
                 [&](std::int64_t row) {
                   const std::size_t d = static_cast<std::size_t>(row) % axes_.dim;
                   const std::size_t offset = static_cast<std::size_t>(row) * inner;
                   const float factor = scale[d];
                   const float shift = bias ? bias[d] : 0.0f;
                   const float* x = input + offset;
                   float* y = output + offset;
                   if (saved) {
                     float* kept = saved + offset;
                     for (std::size_t i = 0; i < inner; ++i) {
                       const float value = x[i];
                       kept[i] = value;
                       y[i] = value * factor + shift;
                     }
                   } else {
                     for (std::size_t i = 0; i < inner; ++i) y[i] = x[i] * factor + shift;
                   }
                   // The absorbed ReLU, while the row is in cache.
                   if (fused_relu_) {
                     const ops::ReluForward relu{0.0f};
        // simd: without it GCC keeps the select as a branch,
        // which the signs of real data mispredict half the time.
#pragma omp simd
                     for (std::size_t i = 0; i < inner; ++i) y[i] = relu(y[i]);
                   }
                 });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    // With an absorbed ReLU, dtop is first masked in place, row by row (the
    // ReLU's top and bottom are this layer's top).
    float* masked_diff = fused_relu_ ? top[0]->mutable_cpu_diff() : nullptr;
    const float* relu_output = fused_relu_ ? top[0]->cpu_data() : nullptr;
    const auto mask_row = [&](std::size_t offset, std::size_t n) {
      if (!masked_diff) return;
      const ops::ReluBackward relu{0.0f};
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) {
        masked_diff[offset + i] = relu(relu_output[offset + i], masked_diff[offset + i]);
      }
    };
    const float* output_diff = top[0]->cpu_diff();
    const int bias_index = static_cast<int>(blobs_.size()) - 1;
    float* bias_diff = bias_term_ && param_propagate_down(bias_index)
                           ? blobs_.back()->mutable_cpu_diff()
                           : nullptr;
    const bool scale_gradient =
        learned_scale_ ? param_propagate_down(0) : static_cast<bool>(propagate_down[1]);
    float* scale_diff = scale_gradient ? scale_blob(bottom)->mutable_cpu_diff() : nullptr;
    if (scale_diff && !learned_scale_) std::fill(scale_diff, scale_diff + axes_.dim, 0.0f);
    const float* scale = scale_blob(bottom)->cpu_data();
    float* input_diff = propagate_down[0] ? bottom[0]->mutable_cpu_diff() : nullptr;
    const float* input = top[0] == bottom[0] ? saved_input_.data() : bottom[0]->cpu_data();
    const std::size_t inner = axes_.inner;
    if (!bias_diff && !scale_diff) {
      if (!input_diff) return;
      parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner,
                   [&](std::int64_t row) {
                     const float factor = scale[static_cast<std::size_t>(row) % axes_.dim];
                     const std::size_t offset = static_cast<std::size_t>(row) * inner;
                     mask_row(offset, inner);
                     scale_row(output_diff + offset, factor, inner, input_diff + offset);
                   });
      return;
    }
    // One sweep in memory order: each row's sums, then (in place, after
    // them) its dbottom; the rows' sums are added up by d over o in order.
    row_sums_.resize(axes_.outer * axes_.dim);
    row_dots_.resize(axes_.outer * axes_.dim);
    parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner * 4,
                 [&](std::int64_t row_index) {
                   const std::size_t row = static_cast<std::size_t>(row_index);
                   const std::size_t offset = row * inner;
                   mask_row(offset, inner);
                   const float* dy = output_diff + offset;
                   if (scale_diff) {
                     const auto sums = channel_statistics::sum_and_dot(dy, input + offset, inner);
                     row_sums_[row] = sums.sum;
                     row_dots_[row] = sums.dot;
                   } else {
                     row_sums_[row] = channel_statistics::sum(dy, inner);
                   }
                   if (input_diff) {
                     scale_row(dy, scale[row % axes_.dim], inner, input_diff + offset);
                   }
                 });
    for (std::size_t o = 0; o < axes_.outer; ++o) {
      for (std::size_t d = 0; d < axes_.dim; ++d) {
        const std::size_t row = o * axes_.dim + d;
        if (bias_diff) bias_diff[d] += static_cast<float>(row_sums_[row]);
        if (scale_diff) scale_diff[d] += static_cast<float>(row_dots_[row]);
      }
    }
  }

 private:
  // out = in * factor; out may be in.
  static void scale_row(const float* in, float factor, std::size_t n, float* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * factor;
  }

  Blob* scale_blob(const BlobVec& bottom) const {
    return learned_scale_ ? blobs_[0].get() : bottom[1];
  }

  bool learned_scale_ = true;
  bool bias_term_ = false;
  bool in_place_ = false;
  bool fused_relu_ = false;  // an in-place ReLU after this layer is done here
  FillerParameter scale_filler_;
  BroadcastAxes axes_;
  std::vector<float> saved_input_;  // bottom[0] when in place
  // Backward: per (o, d) row, the sum of dtop and of dtop * bottom.
  std::vector<double> row_sums_;
  std::vector<double> row_dots_;
};

}  // namespace

void register_scale_layer(LayerRegistry& registry) { add_layer<ScaleLayer>(registry, "Scale"); }

}  // namespace xtrain
