// AnyDeviceLayer<Base>: a layer whose forward and backward are one body for
// both devices, written once as forward_on and backward_on -- functors that
// ops::apply_on runs where the layer's device is, or layers inside it that
// run on that device themselves. The CPU and GPU entry points both call them.
#pragma once

#include <vector>

#include "xtrain/layer.hpp"

namespace xtrain {

template <typename Base>
class AnyDeviceLayer : public Base {
 public:
  using Base::Base;

 protected:
  virtual void forward_on(const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                           const BlobVec& bottom) = 0;

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) final { forward_on(bottom, top); }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) final {
    backward_on(top, propagate_down, bottom);
  }
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) final { forward_on(bottom, top); }
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) final {
    backward_on(top, propagate_down, bottom);
  }
};

}  // namespace xtrain
