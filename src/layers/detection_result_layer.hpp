// DetectionResultLayer: the base of the layers whose one top holds detections
// or their evaluation (DetectionOutput, YoloDetectionOutput,
// DetectionEvaluate). They have no gradient: backward refuses a bottom that
// asks for one (detection::refuse_gradient). They run on the host on either
// device: Layer's default GPU passes run the CPU ones.
#pragma once

#include <vector>

#include "layers/detection_blobs.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class DetectionResultLayer : public Layer {
 public:
  using Layer::Layer;
  int exact_num_top_blobs() const override { return 1; }

 protected:
  void backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec&) override {
    detection::refuse_gradient(where(), propagate_down);
  }
};

}  // namespace xtrain
