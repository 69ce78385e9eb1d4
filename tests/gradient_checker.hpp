// Numerical gradient checking for layers, used by every layer test.
//
// The checked objective is f = sum over tops t, elements j of w_tj * top_tj
// with fixed random weights w. Backward gets w as the top diffs, so the
// analytic gradient of every checked bottom element and parameter element is
// compared against the central difference (f(x + h) - f(x - h)) / 2h.
// The layer is reseeded before every forward, so a layer with randomness
// (Dropout) sees the same mask in all evaluations.
//
// On a GPU layer every read and write here goes through cpu_data() /
// mutable_cpu_data(): a perturbation moves the blob's head to the host, so the
// next forward_gpu uploads the perturbed values, and reading a top downloads
// it (SyncedMemory's lazy copies). Slow, but the same check on every device.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "xtrain/layer.hpp"
#include "xtrain/random.hpp"

namespace xtrain::testing {

struct GradientCheckOptions {
  float step = 1e-2f;
  float threshold = 1e-3f;
  // Elements whose input value lies within kink_range of kink are skipped
  // (the function is not differentiable there, e.g. ReLU at 0).
  float kink = 0.0f;
  float kink_range = -1.0f;
  // Which bottoms to check; empty means all.
  std::vector<int> bottoms_to_check;
  bool check_params = true;
  std::uint64_t seed = 1701;
};

class GradientChecker {
 public:
  explicit GradientChecker(GradientCheckOptions options = {}) : options_(std::move(options)) {}

  // `layer` must already be set up with `bottom` and `top`.
  void check(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
    const std::vector<Blob*> targets = blobs_to_check(layer, bottom);
    make_top_weights(layer, bottom, top);

    // Analytic gradients: one forward, backward with the weights as diffs.
    std::vector<bool> propagate_down(bottom.size(), false);
    for (std::size_t i = 0; i < bottom.size(); ++i) propagate_down[i] = wants_bottom(i);
    for (auto& blob : layer.blobs()) {
      float* diff = blob->mutable_cpu_diff();
      for (std::size_t j = 0; j < blob->count(); ++j) diff[j] = 0;
    }
    run_forward(layer, bottom, top);
    set_top_diffs(top);
    layer.backward(top, propagate_down, bottom);
    std::vector<std::vector<float>> analytic;
    for (Blob* blob : targets) {
      analytic.emplace_back(blob->cpu_diff(), blob->cpu_diff() + blob->count());
    }

    for (std::size_t t = 0; t < targets.size(); ++t) {
      Blob* blob = targets[t];
      for (std::size_t j = 0; j < blob->count(); ++j) {
        const float original = blob->cpu_data()[j];
        if (options_.kink_range > 0 && std::fabs(original - options_.kink) < options_.kink_range) {
          continue;
        }
        blob->mutable_cpu_data()[j] = original + options_.step;
        const double plus = objective(layer, bottom, top);
        blob->mutable_cpu_data()[j] = original - options_.step;
        const double minus = objective(layer, bottom, top);
        blob->mutable_cpu_data()[j] = original;
        const double estimated = (plus - minus) / (2.0 * options_.step);
        const double computed = analytic[t][j];
        const double scale = std::max({std::fabs(computed), std::fabs(estimated), 1.0});
        ASSERT_NEAR(computed, estimated, options_.threshold * scale)
            << layer.type() << " '" << layer.name() << "': target blob " << t << " ("
            << blob->shape_string() << "), element " << j;
      }
    }
  }

 private:
  bool wants_bottom(std::size_t i) const {
    if (options_.bottoms_to_check.empty()) return true;
    for (int b : options_.bottoms_to_check) {
      if (static_cast<std::size_t>(b) == i) return true;
    }
    return false;
  }

  std::vector<Blob*> blobs_to_check(Layer& layer, const BlobVec& bottom) const {
    std::vector<Blob*> targets;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      if (wants_bottom(i)) targets.push_back(bottom[i]);
    }
    if (options_.check_params) {
      for (std::size_t i = 0; i < layer.blobs().size(); ++i) {
        if (layer.param_propagate_down(static_cast<int>(i))) {
          targets.push_back(layer.blobs()[i].get());
        }
      }
    }
    return targets;
  }

  void make_top_weights(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
    run_forward(layer, bottom, top);
    RandomStream random(options_.seed);
    weights_.clear();
    for (Blob* blob : top) {
      std::vector<float> w(blob->count());
      if (!w.empty()) random.uniform(w.size(), -1.0f, 1.0f, w.data());
      weights_.push_back(std::move(w));
    }
  }

  void set_top_diffs(const BlobVec& top) {
    for (std::size_t t = 0; t < top.size(); ++t) {
      float* diff = top[t]->mutable_cpu_diff();
      for (std::size_t j = 0; j < top[t]->count(); ++j) diff[j] = weights_[t][j];
    }
  }

  void run_forward(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
    layer.seed(options_.seed);
    layer.forward(bottom, top);
  }

  double objective(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
    run_forward(layer, bottom, top);
    double sum = 0;
    for (std::size_t t = 0; t < top.size(); ++t) {
      const float* data = top[t]->cpu_data();
      for (std::size_t j = 0; j < top[t]->count(); ++j) sum += static_cast<double>(weights_[t][j]) * data[j];
    }
    return sum;
  }

  GradientCheckOptions options_;
  std::vector<std::vector<float>> weights_;
};

}  // namespace xtrain::testing
