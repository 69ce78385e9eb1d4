// ViewLayer: the shared base of Flatten and Reshape, whose top is the
// bottom's values in another shape: a view that shares the bottom's data and
// diff, so that forward and backward have nothing to do. The subclass gives
// the top's shape. In place the view would be the bottom itself, so that is
// refused.
#pragma once

#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class ViewLayer : public Layer {
 public:
  using Layer::Layer;
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  // Subclasses that override it call it first.
  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) final {
    top[0]->reshape(view_shape(*bottom[0]));
    top[0]->share_data(*bottom[0]);
    top[0]->share_diff(*bottom[0]);
  }

 protected:
  // The top's shape for this bottom, checked against the layer's parameters.
  virtual std::vector<int> view_shape(const Blob& bottom) const = 0;

  void forward_cpu(const BlobVec&, const BlobVec&) override {}
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void forward_gpu(const BlobVec&, const BlobVec&) override {}
  void backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
};

}  // namespace xtrain
