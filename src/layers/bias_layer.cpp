// Bias (Caffe type "Bias"): adds a bias broadcast along the axes of bottom[0]
// it lines up with (see broadcast_axes.hpp):
//   top[o, d, i] = bottom[o, d, i] + bias[d]
// The bias is bottom[1] when given, else a learned blob spanning
// bias_param.num_axes axes from bias_param.axis (filled by bias_param.filler,
// constant 0 by default). Backward: dbottom = dtop, and
//   dbias[d] = sum over o, i of dtop[o, d, i]
// accumulated into the learned blob's diff (overwriting bottom[1]'s diff).
// Works in place.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel_loop.hpp"
#include "layers/broadcast_axes.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/learnable_blobs.hpp"
#include "layers/parallel_blocks.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class BiasLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Bias"; }
  int min_bottom_blobs() const override { return 1; }
  int max_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    if (bottom.size() > 1) {
      XTRAIN_CHECK(blobs_.empty(), where(), " takes its bias from bottom[1], but has ",
                   blobs_.size(), " stored blobs; remove them or the second bottom");
      return;
    }
    const BiasParameter& bias = param_.bias_param();
    const std::vector<int> shape =
        learned_operand_shape(where(), "bias_param", *bottom[0], bias.axis(), bias.num_axes());
    setup_learnable_blobs(where(), {{"bias", shape, &bias.filler(), "bias_param.filler"}},
                          "(bottom[0]'s dimensions from bias_param.axis over num_axes axes)",
                          &blobs_, random());
    set_param_propagate_down(0, true);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& bias = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
    axes_ = broadcast_axes(where(), "bias_param", *bottom[0], bias,
                           bottom.size() > 1 ? "bottom[1] (the bias)" : "the learned bias",
                           param_.bias_param().axis());
    if (top[0] != bottom[0]) top[0]->reshape_like(*bottom[0]);
  }

 protected:
  // Rows are the (o, d) runs of `inner` values that share bias[d], spread
  // over the thread pool in memory order. Backward keeps each row's sum and
  // adds them up by d over o in order, so the gradient does not depend on
  // the thread count.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* input = bottom[0]->cpu_data();
    const float* bias = (bottom.size() > 1 ? bottom[1] : blobs_[0].get())->cpu_data();
    float* output = top[0]->mutable_cpu_data();
    const std::size_t inner = axes_.inner;
    parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner, [&](std::int64_t row) {
      const float shift = bias[static_cast<std::size_t>(row) % axes_.dim];
      const std::size_t offset = static_cast<std::size_t>(row) * inner;
      const float* x = input + offset;
      float* y = output + offset;
      for (std::size_t i = 0; i < inner; ++i) y[i] = x[i] + shift;
    });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* output_diff = top[0]->cpu_diff();
    const bool learned = bottom.size() == 1;
    if (learned ? param_propagate_down(0) : static_cast<bool>(propagate_down[1])) {
      float* bias_diff = (learned ? blobs_[0].get() : bottom[1])->mutable_cpu_diff();
      if (!learned) std::fill(bias_diff, bias_diff + axes_.dim, 0.0f);
      const std::size_t inner = axes_.inner;
      row_sums_.resize(axes_.outer * axes_.dim);
      parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner,
                   [&](std::int64_t row_index) {
                     const auto row = static_cast<std::size_t>(row_index);
                     row_sums_[row] = channel_statistics::sum(output_diff + row * inner, inner);
                   });
      for (std::size_t o = 0; o < axes_.outer; ++o) {
        for (std::size_t d = 0; d < axes_.dim; ++d) {
          bias_diff[d] += static_cast<float>(row_sums_[o * axes_.dim + d]);
        }
      }
    }
    if (propagate_down[0] && top[0] != bottom[0]) {
      const float* source = output_diff;
      float* destination = bottom[0]->mutable_cpu_diff();
      for_each_block(top[0]->count(), 1, [&](std::size_t begin, std::size_t end) {
        std::copy(source + begin, source + end, destination + begin);
      });
    }
  }

 private:
  BroadcastAxes axes_;
  std::vector<double> row_sums_;  // backward: the sum of dtop over each (o, d) row
};

}  // namespace

void register_bias_layer(LayerRegistry& registry) { add_layer<BiasLayer>(registry, "Bias"); }

}  // namespace xtrain
