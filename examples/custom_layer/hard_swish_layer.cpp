#include "hard_swish_layer.hpp"

#include <algorithm>

#include <xtrain/error.hpp>

void HardSwishLayer::layer_setup(const xtrain::BlobVec& bottom, const xtrain::BlobVec& top) {
  XTRAIN_CHECK(top[0] != bottom[0], "layer '", name(),
               "' (HardSwish) cannot run in place: give its top another name");
}

void HardSwishLayer::forward_cpu(const xtrain::BlobVec& bottom, const xtrain::BlobVec& top) {
  const float* x = bottom[0]->cpu_data();
  float* y = top[0]->mutable_cpu_data();
  for (std::size_t i = 0; i < bottom[0]->count(); ++i) {
    y[i] = x[i] * std::clamp(x[i] + 3.0f, 0.0f, 6.0f) / 6.0f;
  }
}

void HardSwishLayer::backward_cpu(const xtrain::BlobVec& top,
                                  const std::vector<bool>& propagate_down,
                                  const xtrain::BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const float* x = bottom[0]->cpu_data();
  const float* dy = top[0]->cpu_diff();
  float* dx = bottom[0]->mutable_cpu_diff();
  for (std::size_t i = 0; i < bottom[0]->count(); ++i) {
    const float slope = x[i] <= -3.0f ? 0.0f : x[i] >= 3.0f ? 1.0f : (2.0f * x[i] + 3.0f) / 6.0f;
    dx[i] = dy[i] * slope;
  }
}

void register_hard_swish_layer() {
  xtrain::add_layer<HardSwishLayer>(xtrain::LayerRegistry::global(), "HardSwish");
}
