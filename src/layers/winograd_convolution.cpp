#include "layers/winograd_convolution.hpp"

#include <algorithm>
#include <array>

#include "core/channel_blocked_layout.hpp"
#include "core/parallel_loop.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

bool WinogradConvolution::accepts(const ConvolutionShape& shape, std::string* why_not) {
  const Im2colGeometry& g = shape.geometry;
  auto refuse = [why_not](const char* reason) {
    if (why_not != nullptr) *why_not = reason;
    return false;
  };
  if (g.kernel_h != 5 || g.kernel_w != 5) return refuse("its kernel is not 5x5");
  if (shape.group != 1) return refuse("it has groups");
  if (g.stride_h != 1 || g.stride_w != 1) return refuse("its stride is not 1");
  if (g.dilation_h != 1 || g.dilation_w != 1) return refuse("it is dilated");
  if (g.pad_h > 4 || g.pad_w > 4) return refuse("its padding is wider than the kernel");
  if (shape.out_height() < 1 || shape.out_width() < 1) return refuse("it has no output");
  return true;
}

WinogradConvolution::WinogradConvolution(const ConvolutionShape& shape)
    : shape_(shape) {
  XTRAIN_ASSERT(accepts(shape), "WinogradConvolution built for a shape it does not take");
  const Im2colGeometry& g = shape.geometry;
  forward_plan_ =
      make_winograd_plan(g.channels, g.height, g.width, g.pad_h, g.pad_w, shape.num_output);
  adjoint_plan_ = make_winograd_plan(shape.num_output, shape.out_height(), shape.out_width(),
                                     4 - g.pad_h, 4 - g.pad_w, g.channels);
  XTRAIN_ASSERT(adjoint_plan_.out_h == g.height && adjoint_plan_.out_w == g.width,
                "the adjoint correlation must give the input's size");
  transformed_.resize(std::max(forward_plan_.transformed_weight_count(),
                               adjoint_plan_.transformed_weight_count()));
}

std::string WinogradConvolution::kernel(ConvolutionPass pass) const {
  return pass == ConvolutionPass::kBackwardWeights ? GemmConvolution::kName : name();
}

std::size_t WinogradConvolution::buffer_bytes() const {
  return (transformed_.capacity() + plain_bottom_.capacity() + plain_top_diff_.capacity()) *
             sizeof(float) +
         (weight_gradient_ ? weight_gradient_->buffer_bytes() : 0);
}

GemmConvolution& WinogradConvolution::weight_gradient() {
  if (!weight_gradient_) weight_gradient_ = std::make_unique<GemmConvolution>(shape_);
  return *weight_gradient_;
}

void WinogradConvolution::run(const WinogradPlan& plan, const float* sources,
                              std::size_t source_dim, const float* bias, float* results,
                              std::size_t result_dim) {
  const WinogradKernels& kernels = winograd_kernels();
  // The work is (group of 8 images, tile row) pairs, split evenly between
  // the threads: by groups alone, CIFAR10-quick's 100 images (13 groups)
  // gave one of 2 threads 7 groups' work and the other 6.
  const std::int64_t groups = (shape_.num + kWinogradLanes - 1) / kWinogradLanes;
  const std::int64_t rows = plan.tiles_y(), items = groups * rows;
  const std::int64_t threads = std::max<std::int64_t>(1, std::min<std::int64_t>(cpu_threads(), items));
  const std::size_t work = static_cast<std::size_t>(shape_.flops());
  parallel_for(threads, work, [&](std::int64_t t) {
    thread_local WinogradScratch scratch;
    const std::int64_t first = items * t / threads, end = items * (t + 1) / threads;
    for (std::int64_t item = first; item < end;) {
      const std::int64_t group = item / rows;
      const std::int64_t group_end = std::min(end, (group + 1) * rows);
      std::array<const float*, kWinogradLanes> in{};
      std::array<float*, kWinogradLanes> out{};
      for (int lane = 0; lane < kWinogradLanes; ++lane) {
        const std::int64_t n = group * kWinogradLanes + lane;
        if (n >= shape_.num) break;
        in[lane] = sources + n * source_dim;
        out[lane] = results + n * result_dim;
      }
      kernels.convolve_group(plan, in.data(), transformed_.data(), bias, out.data(),
                             static_cast<int>(item - group * rows),
                             static_cast<int>(group_end - group * rows), scratch);
      item = group_end;
    }
  });
}

namespace {
// The kernels' block argument for a layout: 0 for plain.
int block_of(MemoryLayout layout) {
  return layout == MemoryLayout::kChannelBlocked ? channel_block() : 0;
}
}  // namespace

void WinogradConvolution::forward_in(const Layouts& layouts, const float* bottom,
                                     const float* weights, const float* bias, float* top) {
  const Im2colGeometry& g = shape_.geometry;
  transform_winograd_weights(
      forward_plan_,
      [&](int o, int c, int i, int j) {
        return weights[((static_cast<std::size_t>(o) * g.channels + c) * 5 + i) * 5 + j];
      },
      transformed_.data());
  WinogradPlan plan = forward_plan_;
  plan.source_block = block_of(layouts.bottom);
  plan.result_block = block_of(layouts.top);
  run(plan, bottom, shape_.input_dim(), shape_.bias_term ? bias : nullptr, top,
      shape_.output_dim());
}

void WinogradConvolution::backward_data_in(const Layouts& layouts, const float* top_diff,
                                           const float* weights, float* bottom_diff) {
  const Im2colGeometry& g = shape_.geometry;
  // The adjoint's outputs are the input channels, its sources the outputs,
  // and its filters the forward ones turned by 180 degrees.
  transform_winograd_weights(
      adjoint_plan_,
      [&](int c, int o, int i, int j) {
        return weights[((static_cast<std::size_t>(o) * g.channels + c) * 5 + (4 - i)) * 5 +
                       (4 - j)];
      },
      transformed_.data());
  WinogradPlan plan = adjoint_plan_;
  plan.source_block = block_of(layouts.top);
  plan.result_block = block_of(layouts.bottom);
  run(plan, top_diff, shape_.output_dim(), nullptr, bottom_diff, shape_.input_dim());
}

void WinogradConvolution::forward(const float* bottom, const float* weights, const float* bias,
                                  float* top) {
  forward_in(Layouts{}, bottom, weights, bias, top);
}

void WinogradConvolution::backward_data(const float* top_diff, const float* weights,
                                        float* bottom_diff) {
  backward_data_in(Layouts{}, top_diff, weights, bottom_diff);
}

void WinogradConvolution::backward_weights(const float* bottom, const float* top_diff,
                                           float* weight_diff, float* bias_diff) {
  weight_gradient().backward_weights(bottom, top_diff, weight_diff, bias_diff);
}

void WinogradConvolution::backward_in(const Layouts& layouts, const float* bottom,
                                      const float* top_diff, const float* weights,
                                      float* weight_diff, float* bias_diff, float* bottom_diff) {
  if (weight_diff != nullptr || bias_diff != nullptr) {
    const Im2colGeometry& g = shape_.geometry;
    weight_gradient().backward_weights(
        plain(bottom, layouts.bottom, g.channels, g.height * g.width, plain_bottom_),
        plain(top_diff, layouts.top, shape_.num_output, shape_.out_height() * shape_.out_width(),
              plain_top_diff_),
        weight_diff, bias_diff);
  }
  if (bottom_diff != nullptr) {
    backward_data_in(layouts, top_diff, weights, bottom_diff);
  }
}

const float* WinogradConvolution::plain(const float* values, MemoryLayout layout, int channels,
                                        int spatial, std::vector<float>& copy) const {
  if (layout == MemoryLayout::kPlain) return values;
  ChannelBlockedShape blocked;
  blocked.num = shape_.num;
  blocked.channels = channels;
  blocked.spatial = spatial;
  copy.resize(blocked.count());
  channel_blocked_to_plain(blocked, values, copy.data());
  return copy.data();
}

}  // namespace xtrain
