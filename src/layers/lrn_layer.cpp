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
// The kernels (a reference and a fast, parallel one) are in lrn_kernels.hpp.
// Not in place: backward reads both bottom and top.
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/lrn_kernels.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

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
    lrn_.size = static_cast<int>(lrn.local_size());
    lrn_.alpha = lrn.alpha();
    lrn_.beta = lrn.beta();
    lrn_.k = lrn.k();
    lrn_.across_channels = lrn.norm_region() == LRNParameter::ACROSS_CHANNELS;
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() == 4, where(),
                 ": the input must have 4 axes (num, channels, height, width), got ",
                 input.shape_string());
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place (backward needs both its input and its output); give "
                 "its top a name different from its bottom");
    shape_ = {input.shape(0), input.shape(1), input.shape(2), input.shape(3)};
    top[0]->reshape_like(input);
    scale_.resize(input.count());
    power_.resize(input.count());
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    lrn_forward(lrn_, shape_, bottom[0]->cpu_data(), scale_.data(), power_.data(),
                top[0]->mutable_cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    lrn_backward(lrn_, shape_, bottom[0]->cpu_data(), top[0]->cpu_data(), top[0]->cpu_diff(),
                 scale_.data(), power_.data(), bottom[0]->mutable_cpu_diff());
  }

 private:
  LrnParameters lrn_;
  LrnShape shape_;
  std::vector<float> scale_;  // the denominator base, one per input value
  std::vector<float> power_;  // scale^-beta
};

}  // namespace

void register_lrn_layer(LayerRegistry& registry) { add_layer<LRNLayer>(registry, "LRN"); }

}  // namespace xtrain
