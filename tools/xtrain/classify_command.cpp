// xtrain classify: label image files with a trained net, printing Caffe's
// examples/cpp_classification lines:
//   ---------- Prediction for shoe.png ----------
//   0.9123 - "Ankle boot"
#include <cstdio>
#include <string>
#include <vector>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/classifier.hpp"
#include "xtrain/error.hpp"

DEFINE_string(labels, "", "classify: class names, one per line; empty: print class indices");
DEFINE_int32(top_k, 5, "classify: how many of the most probable classes to print per image");

namespace xtrain::cli {

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
