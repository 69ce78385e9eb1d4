#include "xtrain/classifier.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>

#include "inference/classifier_input.hpp"
#include "inference/image_deploy_net.hpp"
#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

std::vector<Prediction> top_predictions(const float* scores, int num_classes, int top_k,
                                        const std::vector<std::string>& labels) {
  std::vector<int> order(static_cast<std::size_t>(num_classes));
  std::iota(order.begin(), order.end(), 0);
  const int kept = std::min(top_k, num_classes);
  // Highest score first; equal scores keep the lower index first.
  std::partial_sort(order.begin(), order.begin() + kept, order.end(), [&](int a, int b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  });
  std::vector<Prediction> predictions;
  for (int i = 0; i < kept; ++i) {
    const int index = order[static_cast<std::size_t>(i)];
    predictions.push_back(
        {index, scores[index], labels.empty() ? std::to_string(index) : labels[index]});
  }
  return predictions;
}

}  // namespace

std::vector<std::string> read_label_file(const std::string& path) {
  std::ifstream file = open_input_file(path, "the labels file");
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(file, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  XTRAIN_CHECK(!file.bad(), "cannot read labels file '", path, "'");
  XTRAIN_CHECK(!labels.empty(), "labels file '", path,
               "' is empty; it needs one class name per line");
  return labels;
}

Classifier::Classifier(const std::string& deploy_prototxt, const std::string& weights,
                       const ClassifierOptions& options) {
  net_ = open_image_deploy_net(deploy_prototxt, options.device, "a classifier");
  const Blob& input = *net_->input_blobs().front();
  XTRAIN_CHECK(!net_->output_blobs().empty(), "net '", deploy_prototxt,
               "' has no output (every top is consumed); a classifier reads the last output, "
               "e.g. a Softmax 'prob'");
  XTRAIN_CHECK(options.batch_size >= 0, "batch size ", options.batch_size,
               ": give a positive number, or 0 for the deploy's");
  batch_size_ = options.batch_size > 0 ? options.batch_size : std::max(1, input.num());
  input_ =
      std::make_unique<ClassifierInput>(input.channels(), input.height(), input.width(), options);

  const Blob& output = *net_->output_blobs().back();
  XTRAIN_CHECK(output.num_axes() >= 1 && output.shape(0) == input.num() && input.num() > 0, "net '",
               deploy_prototxt, "': its last output has shape ", output.shape_string(),
               ", not one row of class scores per input image (", input.num(), ")");
  num_classes_ = static_cast<int>(output.count(1));
  load_deploy_weights(*net_, weights, options.allow_missing_weights);
  if (!options.labels_file.empty()) {
    labels_ = read_label_file(options.labels_file);
    XTRAIN_CHECK(static_cast<int>(labels_.size()) == num_classes_, "labels file '",
                 options.labels_file, "' has ", labels_.size(), " lines, but the net '",
                 deploy_prototxt, "' scores ", num_classes_,
                 " classes; give one class name per line, in the order of the net's outputs");
  }
}

Classifier::~Classifier() = default;

std::vector<std::vector<Prediction>> Classifier::classify(
    const std::vector<std::string>& image_paths, int top_k) {
  XTRAIN_CHECK(top_k > 0, "top_k must be positive, got ", top_k);
  std::vector<std::vector<Prediction>> results;
  for (std::size_t start = 0; start < image_paths.size(); start += batch_size_) {
    const int count =
        static_cast<int>(std::min<std::size_t>(batch_size_, image_paths.size() - start));
    for (auto& predictions : classify_batch(image_paths.data() + start, count, top_k)) {
      results.push_back(std::move(predictions));
    }
  }
  return results;
}

std::vector<Prediction> Classifier::classify(const std::string& image_path, int top_k) {
  return classify(std::vector<std::string>{image_path}, top_k).front();
}

std::vector<std::vector<Prediction>> Classifier::classify_batch(const std::string* paths, int count,
                                                                int top_k) {
  Blob& input = *net_->input_blobs().front();
  if (input.num() != count) {
    input.reshape({count, input.channels(), input.height(), input.width()});
    net_->reshape();
  }
  float* values = input.mutable_cpu_data();
  for (int i = 0; i < count; ++i) input_->fill(paths[i], values + i * input_->count());
  net_->forward();

  const Blob& output = *net_->output_blobs().back();
  XTRAIN_ASSERT(output.shape(0) == count && static_cast<int>(output.count(1)) == num_classes_,
                "output ", output.shape_string(), " for ", count, " images of ", num_classes_,
                " classes");
  const float* scores = output.cpu_data();
  std::vector<std::vector<Prediction>> results;
  for (int i = 0; i < count; ++i) {
    results.push_back(top_predictions(scores + i * num_classes_, num_classes_, top_k, labels_));
  }
  return results;
}

}  // namespace xtrain
