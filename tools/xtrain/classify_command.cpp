// xtrain classify: label image files with a trained net, printing Caffe's
// examples/cpp_classification lines:
//   ---------- Prediction for shoe.png ----------
//   0.9123 - "Ankle boot"
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/classifier.hpp"
#include "xtrain/error.hpp"

DEFINE_string(mean, "",
              "classify: a mean image (.binaryproto, from compute_mean) of the net's input shape "
              "to subtract from each image");
DEFINE_string(mean_values, "",
              "classify: per-channel means to subtract instead, comma-separated (B,G,R for "
              "colour, e.g. 104,117,123), or one value for all channels");
DEFINE_double(scale, 1,
              "classify: multiply each pixel by this after subtracting the mean, as the "
              "training's transform_param scale (LeNet: 0.00390625)");
DEFINE_string(labels, "", "classify: class names, one per line; empty: print class indices");
DEFINE_int32(top_k, 5, "classify: how many of the most probable classes to print per image");

namespace xtrain::cli {
namespace {

std::vector<float> parse_mean_values(const std::string& text) {
  std::vector<float> values;
  for (const std::string& part : split_commas(text)) {
    std::size_t used = 0;
    float value = 0;
    try {
      value = std::stof(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    XTRAIN_CHECK(used == part.size(), "--mean_values=", text, ": '", part,
                 "' is not a number (give e.g. --mean_values=104,117,123)");
    values.push_back(value);
  }
  return values;
}

}  // namespace

int classify_command(const std::vector<std::string>& images) {
  XTRAIN_CHECK(!FLAGS_model.empty(), "xtrain classify needs --model=DEPLOY.prototxt");
  XTRAIN_CHECK(!FLAGS_weights.empty(), "xtrain classify needs --weights=MODEL.caffemodel");
  XTRAIN_CHECK(!images.empty(),
               "xtrain classify needs image files after the flags: xtrain classify --model=... "
               "--weights=... IMAGE...");
  XTRAIN_CHECK(FLAGS_top_k > 0, "--top_k must be positive, got ", FLAGS_top_k);
  configure_compute();
  ClassifierOptions options;
  options.mean_file = FLAGS_mean;
  options.mean_values = parse_mean_values(FLAGS_mean_values);
  options.scale = static_cast<float>(FLAGS_scale);
  options.labels_file = FLAGS_labels;
  options.device = choose_device(FLAGS_gpu, false, 0);
  options.allow_missing_weights = FLAGS_allow_missing_weights;
  Classifier classifier(FLAGS_model, FLAGS_weights, options);

  const std::vector<std::vector<Prediction>> results = classifier.classify(images, FLAGS_top_k);
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::printf("---------- Prediction for %s ----------\n", images[i].c_str());
    for (const Prediction& prediction : results[i]) {
      std::printf("%.4f - \"%s\"\n", prediction.probability, prediction.label.c_str());
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace xtrain::cli
