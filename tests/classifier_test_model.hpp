// A tiny classifier with weights set by hand, and PNGs to feed it, for the
// tests of xtrain::Classifier and `xtrain classify`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tool_runner.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {

// C x 2 x 2 images in, 3 classes out: logits = W x with W picking single
// input values (rows below), then a softmax.
inline std::string deploy_text(int channels, int batch = 1) {
  return "name: \"tiny\"\n"
         "layer { name: \"data\" type: \"Input\" top: \"data\"\n"
         "        input_param { shape { dim: " +
         std::to_string(batch) + " dim: " + std::to_string(channels) +
         " dim: 2 dim: 2 } } }\n"
         "layer { name: \"ip\" type: \"InnerProduct\" bottom: \"data\" top: \"ip\"\n"
         "        inner_product_param { num_output: 3 } }\n"
         "layer { name: \"prob\" type: \"Softmax\" bottom: \"ip\" top: \"prob\" }\n";
}

// Writes the deploy and weights where logit k = input[picks[k]] (bias 0).
struct TinyModel {
  std::string deploy;
  std::string weights;
};

inline TinyModel write_tiny_model(const TempDir& dir, int channels, const std::vector<int>& picks,
                                  int batch = 1) {
  TinyModel model;
  model.deploy = dir.write("deploy.prototxt", deploy_text(channels, batch));
  NetOptions options;
  options.verbose = false;
  Net net(model.deploy, TEST, 0, {}, options);
  Blob& weight = *net.layer_by_name("ip")->blobs()[0];
  Blob& bias = *net.layer_by_name("ip")->blobs()[1];
  const int inputs = channels * 4;
  float* w = weight.mutable_cpu_data();
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < inputs; ++i) w[k * inputs + i] = i == picks[k] ? 1.0f : 0.0f;
  }
  for (int k = 0; k < 3; ++k) bias.mutable_cpu_data()[k] = 0;
  NetParameter trained;
  net.to_proto(&trained);
  model.weights = dir.file("tiny.caffemodel");
  write_proto_to_binary_file(trained, model.weights);
  return model;
}

// A PNG of `pixels` (planar, B, G, R for colour), written by the image codec.
inline std::string write_png(const TempDir& dir, const std::string& name, int channels, int height,
                             int width, const std::vector<std::uint8_t>& pixels) {
  Image image;
  image.channels = channels;
  image.height = height;
  image.width = width;
  image.pixels = pixels;
  return dir.write(name, encode_image(image, "png"));
}

}  // namespace xtrain::testing
