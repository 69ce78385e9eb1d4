// HardSwish, a layer this application adds to xtrain (MobileNetV3's
// activation, which xtrain does not ship):
//   y = x * min(max(x + 3, 0), 6) / 6
//   dy/dx = 0 for x <= -3, 1 for x >= 3, (2x + 3) / 6 between
// The gradient needs x, which y does not give back, so the layer refuses to
// run in place.
#pragma once

#include <xtrain/layer.hpp>
#include <xtrain/layer_registry.hpp>

class HardSwishLayer : public xtrain::Layer {
 public:
  using xtrain::Layer::Layer;
  const char* type() const override { return "HardSwish"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const xtrain::BlobVec& bottom, const xtrain::BlobVec& top) override;
  void reshape(const xtrain::BlobVec& bottom, const xtrain::BlobVec& top) override {
    top[0]->reshape_like(*bottom[0]);
  }

 protected:
  // CPU only: a GPU net runs these on the host copies (Layer's default).
  void forward_cpu(const xtrain::BlobVec& bottom, const xtrain::BlobVec& top) override;
  void backward_cpu(const xtrain::BlobVec& top, const std::vector<bool>& propagate_down,
                    const xtrain::BlobVec& bottom) override;
};

// Makes "HardSwish" a type prototxt files can name, in this process.
void register_hard_swish_layer();
