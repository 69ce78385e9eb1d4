// Classifier: a trained net that labels image files, as Caffe's
// examples/cpp_classification does.
//
// The net is a deploy prototxt whose one Input layer gives the image shape
// N x C x H x W (C = 1: grey images, C = 3: colour in OpenCV's B, G, R
// order, as Caffe trains on), and the net's last output is one score per
// class per image (a Softmax `prob`: probabilities). Each image is read,
// converted to C channels, resized to H x W (bilinear, in 8 bits, as
// cv::resize does for Caffe), and its pixels become
//
//   input[c][h][w] = (pixel[c][h][w] - mean[c][h][w]) * scale
//
// the order of Caffe's DataTransformer, so a net trained with
// `transform_param { scale: S mean_file: M }` sees at deploy time the values
// it saw in training when given the same S and M. (LeNet trained with
// scale 0.00390625 and no mean needs scale = 0.00390625 here.)
//
// One Classifier runs one net: use it from one thread at a time (or one
// Classifier per thread).
//
// Every user error (missing or damaged file, a mean or label file that does
// not fit the net) throws xtrain::Error naming the file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "xtrain/device.hpp"
#include "xtrain/export.hpp"
#include "xtrain/image_input_options.hpp"

namespace xtrain {

class Net;
class ClassifierInput;

// The mean, scale, device and allow_missing_weights of every image net
// (xtrain/image_input_options.hpp), and:
struct XTRAIN_API ClassifierOptions : ImageInputOptions {
  // Class names, one per line (line i names class i); their number must be
  // the net's number of classes. Empty: classes are named by their index.
  std::string labels_file;
  // Images per forward pass; 0: the batch size of the deploy's Input layer.
  int batch_size = 0;
};

struct XTRAIN_API Prediction {
  int index = 0;          // the class: position in the net's output
  float probability = 0;  // its score in the net's last output
  std::string label;      // its line of the labels file, or the index as text
};

class XTRAIN_API Classifier {
 public:
  // Builds the net of `deploy_prototxt` (TEST phase) and loads `weights`
  // (.caffemodel). Throws xtrain::Error if a file is missing or does not fit.
  Classifier(const std::string& deploy_prototxt, const std::string& weights,
             const ClassifierOptions& options = {});
  ~Classifier();
  Classifier(const Classifier&) = delete;
  Classifier& operator=(const Classifier&) = delete;

  // The `top_k` most probable classes of each image, most probable first
  // (ties: the lower index first); fewer when the net has fewer classes.
  std::vector<std::vector<Prediction>> classify(const std::vector<std::string>& image_paths,
                                                int top_k = 5);
  std::vector<Prediction> classify(const std::string& image_path, int top_k = 5);

  int num_classes() const { return num_classes_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // The net; after classify() its input blob holds the last batch's
  // preprocessed pixels and its last output their scores.
  const Net& net() const { return *net_; }

 private:
  std::vector<std::vector<Prediction>> classify_batch(const std::string* paths, int count,
                                                      int top_k);

  std::unique_ptr<Net> net_;
  std::unique_ptr<ClassifierInput> input_;
  int batch_size_ = 1;
  int num_classes_ = 0;
  std::vector<std::string> labels_;
};

// The lines of a labels file (a trailing '\r' removed). Throws xtrain::Error
// naming the file if it cannot be read or is empty.
XTRAIN_API std::vector<std::string> read_label_file(const std::string& path);

}  // namespace xtrain
