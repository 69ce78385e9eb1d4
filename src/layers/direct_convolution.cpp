#include "layers/direct_convolution.hpp"

#include <algorithm>
#include <cstring>

#include "core/parallel_loop.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// The image with `pad_h` zero rows above and below and `pad_w` zero columns
// on each side, made in `buffer`; the image itself when there is no padding.
const float* padded(const float* image, int channels, int height, int width, int pad_h, int pad_w,
                    std::vector<float>& buffer) {
  if (pad_h == 0 && pad_w == 0) return image;
  const int padded_h = height + 2 * pad_h, padded_w = width + 2 * pad_w;
  buffer.assign(static_cast<std::size_t>(channels) * padded_h * padded_w, 0.0f);
  for (int c = 0; c < channels; ++c) {
    for (int y = 0; y < height; ++y) {
      std::memcpy(buffer.data() + (static_cast<std::size_t>(c) * padded_h + y + pad_h) * padded_w +
                      pad_w,
                  image + (static_cast<std::size_t>(c) * height + y) * width,
                  width * sizeof(float));
    }
  }
  return buffer.data();
}

}  // namespace

bool DirectConvolution::accepts(const ConvolutionShape& shape, int lanes, std::string* why_not) {
  const Im2colGeometry& g = shape.geometry;
  auto refuse = [why_not](const char* reason) {
    if (why_not != nullptr) *why_not = reason;
    return false;
  };
  if (shape.group != 1) return refuse("it has groups");
  if (g.channels > kMaxChannels) return refuse("it has more than 4 input channels");
  if (g.stride_h != 1 || g.stride_w != 1) return refuse("its stride is not 1");
  if (g.dilation_h != 1 || g.dilation_w != 1) return refuse("it is dilated");
  if (g.pad_h >= g.kernel_h || g.pad_w >= g.kernel_w) {
    return refuse("its padding is as wide as the kernel");
  }
  if (shape.out_height() < 1 || shape.out_width() < lanes || g.width < lanes) {
    return refuse("its rows are narrower than a vector");
  }
  if (correlation_kernels(lanes) == nullptr) return refuse("this CPU has no kernel of that width");
  return true;
}

std::vector<int> DirectConvolution::lane_widths_for(const ConvolutionShape& shape) {
  std::vector<int> widths;
  for (int lanes : correlation_lane_widths()) {
    if (accepts(shape, lanes)) widths.push_back(lanes);
  }
  return widths;
}

std::string DirectConvolution::name_for(int lanes) { return "direct" + std::to_string(lanes); }

int DirectConvolution::lanes_of(const std::string& name) {
  for (int lanes : {4, 8, 16}) {
    if (name == name_for(lanes)) return lanes;
  }
  return 0;
}

DirectConvolution::DirectConvolution(const ConvolutionShape& shape, int lanes)
    : shape_(shape), lanes_(lanes), kernels_(correlation_kernels(lanes)) {
  XTRAIN_ASSERT(accepts(shape, lanes), "DirectConvolution built for a shape it does not take");
  const Im2colGeometry& g = shape.geometry;
  forward_plan_ = make_correlation_plan(g.channels, g.height + 2 * g.pad_h, g.width + 2 * g.pad_w,
                                        g.kernel_h, g.kernel_w, shape.num_output, lanes);
  adjoint_plan_ = make_correlation_plan(
      shape.num_output, shape.out_height() + 2 * (g.kernel_h - 1 - g.pad_h),
      shape.out_width() + 2 * (g.kernel_w - 1 - g.pad_w), g.kernel_h, g.kernel_w, g.channels,
      lanes);
  XTRAIN_ASSERT(adjoint_plan_.output_height() == g.height && adjoint_plan_.output_width() == g.width,
                "the adjoint correlation must give the input's size");
  packed_.resize(
      std::max(forward_plan_.packed_weight_count(), adjoint_plan_.packed_weight_count()));
}

std::size_t DirectConvolution::buffer_bytes() const {
  return (packed_.capacity() + partials_.capacity()) * sizeof(float);
}

void DirectConvolution::forward(const float* bottom, const float* weights, const float* bias,
                                float* top) {
  const Im2colGeometry& g = shape_.geometry;
  pack_correlation_weights(
      forward_plan_,
      [&](int o, int c, int i, int j) {
        return weights[((static_cast<std::size_t>(o) * g.channels + c) * g.kernel_h + i) *
                           g.kernel_w +
                       j];
      },
      packed_.data());
  const float* used_bias = shape_.bias_term ? bias : nullptr;
  const std::size_t work = static_cast<std::size_t>(shape_.flops() / shape_.num);
  parallel_for(shape_.num, work, [&](std::int64_t n) {
    thread_local std::vector<float> buffer;
    const float* source = padded(bottom + n * shape_.input_dim(), g.channels, g.height, g.width,
                                 g.pad_h, g.pad_w, buffer);
    kernels_->correlate(forward_plan_, source, packed_.data(), used_bias,
                        top + n * shape_.output_dim());
  });
}

void DirectConvolution::backward_data(const float* top_diff, const float* weights,
                                      float* bottom_diff) {
  const Im2colGeometry& g = shape_.geometry;
  // The adjoint's outputs are the input channels, its sources the outputs,
  // and its filters the forward ones turned by 180 degrees.
  pack_correlation_weights(
      adjoint_plan_,
      [&](int c, int o, int i, int j) {
        return weights[((static_cast<std::size_t>(o) * g.channels + c) * g.kernel_h +
                        (g.kernel_h - 1 - i)) *
                           g.kernel_w +
                       (g.kernel_w - 1 - j)];
      },
      packed_.data());
  const std::size_t work = static_cast<std::size_t>(shape_.flops() / shape_.num);
  parallel_for(shape_.num, work, [&](std::int64_t n) {
    thread_local std::vector<float> buffer;
    const float* source =
        padded(top_diff + n * shape_.output_dim(), shape_.num_output, shape_.out_height(),
               shape_.out_width(), g.kernel_h - 1 - g.pad_h, g.kernel_w - 1 - g.pad_w, buffer);
    kernels_->correlate(adjoint_plan_, source, packed_.data(), nullptr,
                        bottom_diff + n * shape_.input_dim());
  });
}

void DirectConvolution::backward_weights(const float* bottom, const float* top_diff,
                                         float* weight_diff, float* bias_diff) {
  const bool with_bias = bias_diff != nullptr && shape_.bias_term;
  if (weight_diff == nullptr && !with_bias) return;
  const Im2colGeometry& g = shape_.geometry;
  const int threads = std::max(1, std::min(cpu_threads(), shape_.num));
  const std::size_t weight_lanes = shape_.weight_count() * lanes_;
  const std::size_t per_thread = weight_lanes + shape_.num_output;
  partials_.assign(threads * per_thread, 0.0f);
  const std::size_t work = static_cast<std::size_t>(shape_.flops());
  parallel_for(threads, work, [&](std::int64_t t) {
    float* partial = partials_.data() + t * per_thread;
    float* bias_partial = with_bias ? partial + weight_lanes : nullptr;
    thread_local std::vector<float> buffer;
    const int first = static_cast<int>(shape_.num * t / threads);
    const int end = static_cast<int>(shape_.num * (t + 1) / threads);
    for (int n = first; n < end; ++n) {
      const float* source = padded(bottom + n * shape_.input_dim(), g.channels, g.height, g.width,
                                   g.pad_h, g.pad_w, buffer);
      kernels_->weight_gradient(forward_plan_, source, top_diff + n * shape_.output_dim(), partial,
                                bias_partial);
    }
  });
  if (weight_diff != nullptr) {
    for (std::size_t k = 0; k < shape_.weight_count(); ++k) {
      float sum = 0;
      for (int t = 0; t < threads; ++t) {
        const float* lanes = partials_.data() + t * per_thread + k * lanes_;
        for (int l = 0; l < lanes_; ++l) sum += lanes[l];
      }
      weight_diff[k] += sum;
    }
  }
  if (with_bias) {
    for (int o = 0; o < shape_.num_output; ++o) {
      float sum = 0;
      for (int t = 0; t < threads; ++t) sum += partials_[t * per_thread + weight_lanes + o];
      bias_diff[o] += sum;
    }
  }
}

}  // namespace xtrain
