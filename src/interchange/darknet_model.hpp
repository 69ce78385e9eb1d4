// A Darknet cfg as xtrain layers, before they become a deploy or a train net.
//
// Each section becomes the layers that compute what Darknet computes
// (docs/detection.md, "Darknet models"):
//   [convolutional]  Convolution (bias_term only without batch_normalize),
//                    BatchNorm + Scale (bias) with batch_normalize, then the
//                    activation: leaky = ReLU(negative_slope 0.1), relu,
//                    logistic = Sigmoid, tanh = TanH, linear = nothing
//   [maxpool]        Pooling MAX, with a Crop when Caffe's rounding keeps
//                    other windows than Darknet's (darknet_maxpool.hpp)
//   [avgpool]        Pooling AVE over the whole map
//   [route]          Concat of the layers named (one layer: its blob, no layer)
//   [shortcut]       Eltwise SUM of the previous layer and `from`, then the activation
//   [upsample]       Upsample (nearest, scale = stride)
//   [yolo]           nothing here: a head (DarknetHead) the nets turn into
//                    YoloLoss or YoloDetectionOutput
//   [softmax]        Softmax
// Layer i's layers are named after its section and number ("conv3",
// "conv3_bn", "conv3_scale", "conv3_leaky"; "maxpool5"); they read the blob
// "data" for the input.
#pragma once

#include <string>
#include <vector>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::interchange {

// A [convolutional] section: the layers that hold its learned values, and
// the sizes its values in a .weights file have.
struct DarknetConvolution {
  int layer = 0;            // Darknet's layer number
  int line = 0;             // of its section in the cfg
  std::string convolution;  // layer names
  std::string batch_norm;   // empty without batch_normalize
  std::string scale;
  int filters = 0;
  int channels = 0;  // of its input
  int size = 1;
  int groups = 1;
  bool batch_normalize = false;
  std::size_t weight_count() const {
    return static_cast<std::size_t>(filters) * (channels / groups) * size * size;
  }
  // Biases, BN's scales, means and variances, and the weights: its floats
  // in a .weights file.
  std::size_t float_count() const {
    return static_cast<std::size_t>(filters) * (batch_normalize ? 4 : 1) + weight_count();
  }
};

// A [yolo] section: the predictions it reads and its settings.
struct DarknetHead {
  int layer = 0;
  int line = 0;
  std::string predictions;  // the blob of the layer before it
  int height = 0;
  int width = 0;
  int classes = 0;
  std::vector<float> anchors;  // every anchor of the net: w, h pairs
  std::vector<int> mask;       // the anchors this head predicts
  float ignore_thresh = 0.5f;
  float truth_thresh = 1.0f;
  float jitter = 0.2f;
};

struct DarknetModel {
  std::string source;  // the cfg's path
  // [net]
  int channels = 0;
  int height = 0;
  int width = 0;
  int batch = 1;
  int subdivisions = 1;
  // The layers from the blob "data" on, without input, loss or output layers.
  NetParameter layers;
  std::vector<DarknetConvolution> convolutions;  // in cfg order
  std::vector<DarknetHead> heads;                // in cfg order
  std::string output;                            // the last layer's blob
  std::vector<std::string> notes;
};

// Throws xtrain::Error naming the file, line and section (darknet_cfg.hpp)
// of what is not converted, and of references and sizes that do not fit.
DarknetModel convert_darknet_cfg(const std::string& text, const std::string& source);
DarknetModel read_darknet_cfg(const std::string& path);

}  // namespace xtrain::interchange
