// classify_images: label image files with a trained Caffe/xtrain model.
//   classify_images [--scale=S] DEPLOY.prototxt WEIGHTS.caffemodel LABELS.txt IMAGE...
// prints one line per image: PATH <tab> LABEL <tab> PROBABILITY, and the
// runners-up indented below it.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "xtrain/classifier.hpp"
#include "xtrain/error.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  xtrain::ClassifierOptions options;
  // The scale the net was trained with (transform_param's scale); LeNet on
  // Fashion-MNIST saw pixels times 1/256.
  if (!args.empty() && args.front().rfind("--scale=", 0) == 0) {
    options.scale = std::strtof(args.front().c_str() + 8, nullptr);
    args.erase(args.begin());
  }
  if (args.size() < 4) {
    std::fprintf(stderr,
                 "usage: classify_images [--scale=S] DEPLOY.prototxt WEIGHTS.caffemodel "
                 "LABELS.txt IMAGE...\n");
    return 2;
  }
  options.labels_file = args[2];
  const std::vector<std::string> images(args.begin() + 3, args.end());

  try {
    xtrain::Classifier classifier(args[0], args[1], options);
    const auto results = classifier.classify(images, /*top_k=*/3);
    for (std::size_t i = 0; i < images.size(); ++i) {
      const xtrain::Prediction& best = results[i].front();
      std::printf("%s\t%s\t%.4f\n", images[i].c_str(), best.label.c_str(), best.probability);
      for (std::size_t k = 1; k < results[i].size(); ++k) {
        std::printf("    %s\t%.4f\n", results[i][k].label.c_str(), results[i][k].probability);
      }
    }
  } catch (const xtrain::Error& error) {
    // A bad file is an exception we can report (or recover from): the
    // library never exits the program.
    std::fprintf(stderr, "classify_images: %s\n", error.what());
    return 1;
  }
  return 0;
}
