// xtrain classify: label image files with a trained net, printing Caffe's
// examples/cpp_classification lines:
//   ---------- Prediction for shoe.png ----------
//   0.9123 - "Ankle boot"
#include <cstdio>
#include <string>
#include <vector>

#include "flags.hpp"
#include "image_command.hpp"
#include "xtrain/classifier.hpp"
#include "xtrain/error.hpp"

DEFINE_string(labels, "", "classify: class names, one per line; empty: print class indices");
DEFINE_int32(top_k, 5, "classify: how many of the most probable classes to print per image");

namespace xtrain::cli {

int classify_command(const std::vector<std::string>& images) {
  require_image_command_inputs("classify", images);
  XTRAIN_CHECK(FLAGS_top_k > 0, "--top_k must be positive, got ", FLAGS_top_k);
  configure_compute();
  ClassifierOptions options;
  read_image_input_flags(&options);
  options.labels_file = FLAGS_labels;
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
