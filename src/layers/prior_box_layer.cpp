// PriorBox (SSD): the default boxes of one feature map, which MultiBoxLoss
// matches to the ground truth and DetectionOutput decodes against.
//
// Bottoms: the feature map (its height H and width W) and the image (its
// size, unless img_size/img_h/img_w give it). Top: 1 x 2 x (H W K 4); channel
// 0 holds the boxes, channel 1 their variances, cell by cell (row-major) and
// within a cell K priors of 4 normalized coordinates each.
//
// The cell (h, w) is centred at ((w + offset) step_w, (h + offset) step_h)
// pixels, step = image size / feature size unless step/step_h/step_w give it.
// Its priors, for each min_size s (with max_size S when given), in order:
//   a square of side s; a square of side sqrt(s S); then for each aspect
//   ratio a other than 1, a box s sqrt(a) wide and s / sqrt(a) high,
// each as (centre -/+ half its size) / image size. The aspect ratios are 1,
// then each given ratio not seen before, followed by 1/ratio when flip is
// true; so K = |ratios| |min_size| + |max_size|. clip clamps the
// coordinates to [0, 1]. The variances are 0.1 without `variance`, the one
// value given, or the four given (per coordinate).
// SSD quirk kept: min_size and max_size are truncated to whole pixels
// before use (30.5 acts as 30).
//
// The top depends only on shapes: no gradient flows back (bottom diffs are
// zero), and on a GPU the host computes it and the blob carries it over.
#include <algorithm>
#include <cmath>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class PriorBoxLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "PriorBox"; }
  int exact_num_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const PriorBoxParameter& p = param_.prior_box_param();
    XTRAIN_CHECK(p.min_size_size() > 0, where(),
                 " needs prior_box_param { min_size: ... } (the prior size in pixels)");
    XTRAIN_CHECK(p.max_size_size() == 0 || p.max_size_size() == p.min_size_size(), where(), " has ",
                 p.min_size_size(), " min_size and ", p.max_size_size(),
                 " max_size values; give one max_size per min_size, or none");
    for (int i = 0; i < p.min_size_size(); ++i) {
      XTRAIN_CHECK(p.min_size(i) > 0, where(), ": min_size ", p.min_size(i), " must be positive");
      if (p.max_size_size() > 0) {
        XTRAIN_CHECK(p.max_size(i) > p.min_size(i), where(), ": max_size ", p.max_size(i),
                     " must be larger than its min_size ", p.min_size(i));
      }
    }
    aspect_ratios_ = {1.0f};
    for (const float ratio : p.aspect_ratio()) {
      XTRAIN_CHECK(ratio > 0, where(), ": aspect_ratio ", ratio, " must be positive");
      bool seen = false;
      for (const float known : aspect_ratios_) seen = seen || std::fabs(ratio - known) < 1e-6f;
      if (seen) continue;
      aspect_ratios_.push_back(ratio);
      if (p.flip()) aspect_ratios_.push_back(1.0f / ratio);
    }
    priors_per_cell_ =
        static_cast<int>(aspect_ratios_.size()) * p.min_size_size() + p.max_size_size();

    XTRAIN_CHECK(p.variance_size() <= 1 || p.variance_size() == 4, where(), " has ",
                 p.variance_size(), " variance values; give none (0.1), one, or four");
    for (const float v : p.variance()) {
      XTRAIN_CHECK(v > 0, where(), ": variance ", v, " must be positive");
    }
    XTRAIN_CHECK(!(p.has_img_size() && (p.has_img_h() || p.has_img_w())), where(),
                 ": give img_size or img_h/img_w, not both");
    XTRAIN_CHECK(!(p.has_step() && (p.has_step_h() || p.has_step_w())), where(),
                 ": give step or step_h/step_w, not both");
    if (p.has_img_h() || p.has_img_w()) {
      XTRAIN_CHECK(p.img_h() > 0 && p.img_w() > 0, where(),
                   ": img_h and img_w must both be positive");
    }
    if (p.has_step_h() || p.has_step_w()) {
      XTRAIN_CHECK(p.step_h() > 0 && p.step_w() > 0, where(),
                   ": step_h and step_w must both be positive");
    }
    XTRAIN_CHECK(!p.has_img_size() || p.img_size() > 0, where(), ": img_size must be positive");
    XTRAIN_CHECK(!p.has_step() || p.step() > 0, where(), ": step must be positive");
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(bottom[0]->num_axes() == 4 && bottom[1]->num_axes() == 4, where(),
                 ": the feature map ", bottom[0]->shape_string(), " and the image ",
                 bottom[1]->shape_string(), " must both be 4-d (N x C x H x W)");
    top[0]->reshape({1, 2, bottom[0]->shape(2) * bottom[0]->shape(3) * priors_per_cell_ * 4});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const PriorBoxParameter& p = param_.prior_box_param();
    const int height = bottom[0]->shape(2);
    const int width = bottom[0]->shape(3);
    float image_h = static_cast<float>(bottom[1]->shape(2));
    float image_w = static_cast<float>(bottom[1]->shape(3));
    if (p.has_img_size()) image_h = image_w = static_cast<float>(p.img_size());
    if (p.has_img_h()) image_h = static_cast<float>(p.img_h());
    if (p.has_img_w()) image_w = static_cast<float>(p.img_w());
    float step_h = image_h / static_cast<float>(height);
    float step_w = image_w / static_cast<float>(width);
    if (p.has_step()) step_h = step_w = p.step();
    if (p.has_step_h()) step_h = p.step_h();
    if (p.has_step_w()) step_w = p.step_w();

    const std::size_t boxes = top[0]->count() / 2;
    float* out = top[0]->mutable_cpu_data();
    std::size_t at = 0;
    const auto put = [&](float cx, float cy, float box_w, float box_h) {
      out[at++] = (cx - box_w / 2) / image_w;
      out[at++] = (cy - box_h / 2) / image_h;
      out[at++] = (cx + box_w / 2) / image_w;
      out[at++] = (cy + box_h / 2) / image_h;
    };
    for (int h = 0; h < height; ++h) {
      for (int w = 0; w < width; ++w) {
        const float cx = (static_cast<float>(w) + p.offset()) * step_w;
        const float cy = (static_cast<float>(h) + p.offset()) * step_h;
        for (int s = 0; s < p.min_size_size(); ++s) {
          const int min_size = static_cast<int>(p.min_size(s));
          put(cx, cy, static_cast<float>(min_size), static_cast<float>(min_size));
          if (p.max_size_size() > 0) {
            const int max_size = static_cast<int>(p.max_size(s));
            const float side =
                static_cast<float>(std::sqrt(static_cast<double>(min_size) * max_size));
            put(cx, cy, side, side);
          }
          for (const float ratio : aspect_ratios_) {
            if (std::fabs(ratio - 1.0f) < 1e-6f) continue;
            const float root = std::sqrt(ratio);
            put(cx, cy, static_cast<float>(min_size) * root, static_cast<float>(min_size) / root);
          }
        }
      }
    }
    XTRAIN_ASSERT(at == boxes, at, " coordinates written, ", boxes, " expected");
    if (p.clip()) {
      for (std::size_t i = 0; i < boxes; ++i) out[i] = std::min(std::max(out[i], 0.0f), 1.0f);
    }
    float* variances = out + boxes;
    for (std::size_t i = 0; i < boxes; ++i) {
      variances[i] = p.variance_size() == 0   ? 0.1f
                     : p.variance_size() == 1 ? p.variance(0)
                                              : p.variance(static_cast<int>(i % 4));
    }
  }

  void backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      if (!propagate_down[i]) continue;
      float* diff = bottom[i]->mutable_cpu_diff();
      std::fill(diff, diff + bottom[i]->count(), 0.0f);
    }
  }

 private:
  std::vector<float> aspect_ratios_;
  int priors_per_cell_ = 0;
};

}  // namespace

void register_prior_box_layer(LayerRegistry& registry) {
  add_layer<PriorBoxLayer>(registry, "PriorBox");
}

}  // namespace xtrain
