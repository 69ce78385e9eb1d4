// NeuronLayer: the shared base of the elementwise layers (ReLU, Sigmoid,
// TanH, Dropout, AbsVal, Power, Exp, Log, BNLL, Threshold, ELU, PReLU).
//
// A neuron layer maps one bottom x to one top y of the same shape,
// y_i = f(x_i) (PReLU: f depends on x_i's channel). It may run in place
// (top == bottom) unless its subclass says otherwise.
//
// Some gradients read x. In place, the forward pass overwrites x with y, so
// such a layer calls keep_input_if_in_place() at the start of forward and reads
// x back through kept_input_*() in backward: the bottom's data, or the copy
// taken before it was overwritten.
#pragma once

#include <algorithm>

#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {

class NeuronLayer : public Layer {
 public:
  using Layer::Layer;
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    top[0]->reshape_like(*bottom[0]);
  }

 protected:
  static bool in_place(const BlobVec& bottom, const BlobVec& top) { return top[0] == bottom[0]; }

  // For layers that cannot run in place (their gradient needs x and y apart).
  void check_not_in_place(const BlobVec& bottom, const BlobVec& top) const {
    XTRAIN_CHECK(!in_place(bottom, top), where(),
                 " cannot run in place; give its top a name different from its bottom '",
                 param_.bottom_size() > 0 ? param_.bottom(0) : std::string("?"), "'");
  }

  void keep_input_if_in_place(const BlobVec& bottom, const BlobVec& top) {
    if (!in_place(bottom, top)) return;
    kept_input_.reshape_like(*bottom[0]);
    std::copy_n(bottom[0]->cpu_data(), bottom[0]->count(), kept_input_.mutable_cpu_data());
  }
  const float* kept_input_cpu(const BlobVec& bottom, const BlobVec& top) const {
    return in_place(bottom, top) ? kept_input_.cpu_data() : bottom[0]->cpu_data();
  }

#ifdef XTRAIN_USE_CUDA
  void keep_input_if_in_place_gpu(const BlobVec& bottom, const BlobVec& top) {
    if (!in_place(bottom, top)) return;
    kept_input_.reshape_like(*bottom[0]);
    // On this thread's stream, before the forward kernel that overwrites x.
    math::gpu::copy(bottom[0]->count(), bottom[0]->gpu_data(), kept_input_.mutable_gpu_data());
  }
  const float* kept_input_gpu(const BlobVec& bottom, const BlobVec& top) const {
    return in_place(bottom, top) ? kept_input_.gpu_data() : bottom[0]->gpu_data();
  }
#endif

 private:
  Blob kept_input_;  // x, when the layer runs in place and its gradient reads x
};

}  // namespace xtrain
