// LRN (Caffe type "LRN"): local response normalisation of an (N, C, H, W)
// input, n = local_size (odd), p = (n - 1) / 2:
//   top = bottom * scale^-beta
//   ACROSS_CHANNELS: scale[c, y, x] = k + alpha / n * sum over c' in [c - p, c + p]
//                                     of bottom[c', y, x]^2
//   WITHIN_CHANNEL:  scale[c, y, x] = 1 + alpha * (sum over the n x n window
//                                     centred on (y, x) of bottom[c, ., .]^2) / n^2
// Channels and pixels outside the input count as zeros. WITHIN_CHANNEL is
// what Caffe builds from square, AVE pooling (kernel n, pad p, stride 1, whose
// divisor is always n^2) and power (shift 1, scale alpha, power -beta) layers:
// it ignores k, and so do we.
//
// Backward, with the same windows (a window holds j exactly when the window
// centred on j holds i, so the sums below run over the window of i):
//   dbottom_i = dtop_i * scale_i^-beta
//               - 2 alpha beta / d * bottom_i * sum over j in window(i) of
//                 dtop_j * top_j / scale_j
// where d = n (ACROSS_CHANNELS) or n^2 (WITHIN_CHANNEL).
//
// The channel sums are running sums (add the channel entering the window,
// drop the one leaving), as in Caffe; the spatial window sums are separable
// (rows, then columns). Not in place: backward reads both bottom and top.
#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

// out[y, x] = sum of in[y', x'] over |y' - y| <= radius, |x' - x| <= radius
// (clipped to the plane), as a row pass then a column pass, each a sum of
// shifted copies (loops the compiler vectorises). `rows` is scratch of
// height * width values.
void window_sum(const float* in, int height, int width, int radius, float* rows, float* out) {
  for (int y = 0; y < height; ++y) {
    const float* line = in + y * width;
    float* sum = rows + y * width;
    std::copy(line, line + width, sum);
    for (int d = 1; d <= radius && d < width; ++d) {
      for (int x = 0; x < width - d; ++x) sum[x] += line[x + d];
      for (int x = d; x < width; ++x) sum[x] += line[x - d];
    }
  }
  for (int y = 0; y < height; ++y) {
    const int begin = std::max(y - radius, 0);
    const int end = std::min(y + radius, height - 1);
    float* line = out + y * width;
    std::copy(rows + begin * width, rows + (begin + 1) * width, line);
    for (int i = begin + 1; i <= end; ++i) {
      const float* source = rows + i * width;
      for (int x = 0; x < width; ++x) line[x] += source[x];
    }
  }
}

// power[i] = scale[i]^-0.75 = 1 / (sqrt(s) * sqrt(sqrt(s))). Without
// -fno-math-errno GCC keeps sqrt() scalar (to set errno for negative input),
// ten times slower than the vector instruction, which gives the same IEEE
// results; so the SSE2 path spells it out.
void inverse_three_quarter_power(const float* scale, std::size_t count, float* power) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128 one = _mm_set1_ps(1.0f);
  for (; i + 4 <= count; i += 4) {
    const __m128 root = _mm_sqrt_ps(_mm_loadu_ps(scale + i));
    _mm_storeu_ps(power + i, _mm_div_ps(one, _mm_mul_ps(root, _mm_sqrt_ps(root))));
  }
#endif
  for (; i < count; ++i) {
    const float root = std::sqrt(scale[i]);
    power[i] = 1.0f / (root * std::sqrt(root));
  }
}

class LRNLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LRN"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const LRNParameter& lrn = param_.lrn_param();
    XTRAIN_CHECK(lrn.local_size() % 2 == 1, where(), ": lrn_param.local_size must be odd, got ",
                 lrn.local_size());
    size_ = static_cast<int>(lrn.local_size());
    pre_pad_ = (size_ - 1) / 2;
    alpha_ = lrn.alpha();
    beta_ = lrn.beta();
    k_ = lrn.k();
    across_channels_ = lrn.norm_region() == LRNParameter::ACROSS_CHANNELS;
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() == 4, where(),
                 ": the input must have 4 axes (num, channels, height, width), got ",
                 input.shape_string());
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place (backward needs both its input and its output); give "
                 "its top a name different from its bottom");
    num_ = input.shape(0);
    channels_ = input.shape(1);
    plane_ = static_cast<std::size_t>(input.shape(2)) * input.shape(3);
    height_ = input.shape(2);
    width_ = input.shape(3);
    top[0]->reshape_like(input);
    scale_.resize(input.count());
    power_.resize(input.count());
    if (across_channels_) {
      padded_.resize((channels_ + size_ - 1) * plane_);
      accumulated_.resize(plane_);
    } else {
      padded_.resize(plane_);
      accumulated_.resize(plane_);
      rows_.resize(plane_);
    }
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* input = bottom[0]->cpu_data();
    if (across_channels_) {
      across_channel_scale(input);
    } else {
      within_channel_scale(input);
    }
    float* output = top[0]->mutable_cpu_data();
    const std::size_t count = bottom[0]->count();
    if (beta_ == 0.75f) {  // the usual setting: two square roots beat pow()
      inverse_three_quarter_power(scale_.data(), count, power_.data());
    } else {
      for (std::size_t i = 0; i < count; ++i) power_[i] = std::pow(scale_[i], -beta_);
    }
    for (std::size_t i = 0; i < count; ++i) output[i] = input[i] * power_[i];
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* input = bottom[0]->cpu_data();
    const float* output = top[0]->cpu_data();
    const float* output_diff = top[0]->cpu_diff();
    float* input_diff = bottom[0]->mutable_cpu_diff();
    const std::size_t count = bottom[0]->count();
    for (std::size_t i = 0; i < count; ++i) input_diff[i] = output_diff[i] * power_[i];
    if (across_channels_) {
      across_channel_backward(input, output, output_diff, input_diff);
    } else {
      within_channel_backward(input, output, output_diff, input_diff);
    }
  }

 private:
  // scale = k + alpha / n * (sum of squares over the channel window).
  void across_channel_scale(const float* input) {
    const float alpha_over_size = alpha_ / static_cast<float>(size_);
    clear_padding_channels();
    const std::size_t image = channels_ * plane_;
    for (int n = 0; n < num_; ++n) {
      const float* x = input + n * image;
      float* squares = padded_.data() + pre_pad_ * plane_;
      for (std::size_t i = 0; i < image; ++i) squares[i] = x[i] * x[i];
      float* scale = scale_.data() + n * image;
      std::fill(scale, scale + plane_, k_);
      for (int c = 0; c < size_ - 1; ++c) add_scaled(alpha_over_size, channel(c), scale);
      for (int c = 0; c < channels_; ++c) {
        float* current = scale + c * plane_;
        if (c > 0) {
          std::copy(current - plane_, current, current);
          add_scaled(-alpha_over_size, channel(c - 1), current);
        }
        add_scaled(alpha_over_size, channel(c + size_ - 1), current);
      }
    }
  }

  // The channel sums of dtop * top / scale, window by window.
  void across_channel_backward(const float* input, const float* output, const float* output_diff,
                               float* input_diff) {
    const float factor = 2.0f * alpha_ * beta_ / static_cast<float>(size_);
    clear_padding_channels();
    const std::size_t image = channels_ * plane_;
    for (int n = 0; n < num_; ++n) {
      const std::size_t offset = n * image;
      float* ratio = padded_.data() + pre_pad_ * plane_;
      for (std::size_t i = 0; i < image; ++i) {
        ratio[i] = output_diff[offset + i] * output[offset + i] / scale_[offset + i];
      }
      std::fill(accumulated_.begin(), accumulated_.end(), 0.0f);
      for (int c = 0; c < size_ - 1; ++c) add_scaled(1.0f, channel(c), accumulated_.data());
      for (int c = 0; c < channels_; ++c) {
        add_scaled(1.0f, channel(c + size_ - 1), accumulated_.data());
        const float* x = input + offset + c * plane_;
        float* dx = input_diff + offset + c * plane_;
        for (std::size_t i = 0; i < plane_; ++i) dx[i] -= factor * x[i] * accumulated_[i];
        add_scaled(-1.0f, channel(c), accumulated_.data());
      }
    }
  }

  // scale = 1 + alpha * (window sum of squares) / n^2.
  void within_channel_scale(const float* input) {
    const float window_area = static_cast<float>(size_ * size_);
    const std::size_t planes = static_cast<std::size_t>(num_) * channels_;
    for (std::size_t p = 0; p < planes; ++p) {
      const float* x = input + p * plane_;
      for (std::size_t i = 0; i < plane_; ++i) padded_[i] = x[i] * x[i];
      float* scale = scale_.data() + p * plane_;
      window_sum(padded_.data(), height_, width_, pre_pad_, rows_.data(), scale);
      for (std::size_t i = 0; i < plane_; ++i) scale[i] = 1.0f + alpha_ * (scale[i] / window_area);
    }
  }

  void within_channel_backward(const float* input, const float* output, const float* output_diff,
                               float* input_diff) {
    const float factor = 2.0f * alpha_ * beta_ / static_cast<float>(size_ * size_);
    const std::size_t planes = static_cast<std::size_t>(num_) * channels_;
    for (std::size_t p = 0; p < planes; ++p) {
      const std::size_t offset = p * plane_;
      for (std::size_t i = 0; i < plane_; ++i) {
        padded_[i] = output_diff[offset + i] * output[offset + i] / scale_[offset + i];
      }
      window_sum(padded_.data(), height_, width_, pre_pad_, rows_.data(), accumulated_.data());
      for (std::size_t i = 0; i < plane_; ++i) {
        input_diff[offset + i] -= factor * input[offset + i] * accumulated_[i];
      }
    }
  }

  // The pre_pad_ channels on either side of the image in padded_ read as zero.
  void clear_padding_channels() {
    std::fill(padded_.begin(), padded_.begin() + pre_pad_ * plane_, 0.0f);
    std::fill(padded_.begin() + (pre_pad_ + channels_) * plane_, padded_.end(), 0.0f);
  }

  const float* channel(int padded_channel) const {
    return padded_.data() + padded_channel * plane_;
  }

  void add_scaled(float factor, const float* source, float* target) const {
    for (std::size_t i = 0; i < plane_; ++i) target[i] += factor * source[i];
  }

  int size_ = 5;
  int pre_pad_ = 2;
  float alpha_ = 1;
  float beta_ = 0.75f;
  float k_ = 1;
  bool across_channels_ = true;

  int num_ = 0;
  int channels_ = 0;
  int height_ = 0;
  int width_ = 0;
  std::size_t plane_ = 0;
  std::vector<float> scale_;        // the denominator base, one per input value
  std::vector<float> power_;        // scale^-beta
  std::vector<float> padded_;       // squares or ratios, with zero padding channels
  std::vector<float> accumulated_;  // one plane of window sums
  std::vector<float> rows_;         // scratch of the separable window sum
};

}  // namespace

void register_lrn_layer(LayerRegistry& registry) { add_layer<LRNLayer>(registry, "LRN"); }

}  // namespace xtrain
