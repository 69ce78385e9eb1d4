// xtrain::Classifier on tiny nets with weights set by hand, so every input
// value and probability can be worked out on paper.
#include "xtrain/classifier.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "classifier_test_model.hpp"
#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

std::vector<float> softmax(const std::vector<float>& logits) {
  double sum = 0;
  for (float logit : logits) sum += std::exp(logit);
  std::vector<float> probabilities;
  for (float logit : logits) probabilities.push_back(static_cast<float>(std::exp(logit) / sum));
  return probabilities;
}

std::vector<float> net_input(const Classifier& classifier) {
  const Blob& input = *classifier.net().input_blobs().front();
  return std::vector<float>(input.cpu_data(), input.cpu_data() + input.count());
}

// A grey 4x4 image whose 2x2 blocks average to 25, 60, 10 and 100 (sums
// divisible by 4, so the 8-bit resize rounds nothing).
std::vector<std::uint8_t> grey_4x4() {
  return {10, 20, 50,  70,   //
          30, 40, 60,  60,   //
          0,  20, 90,  110,  //
          10, 10, 100, 100};
}

TEST(Classifier, ResizesSubtractsMeanScalesAndGivesSoftmaxProbabilities) {
  TempDir dir("classifier");
  // logits = the resized pixels at (0,0), (0,1) and (1,1).
  const TinyModel model = write_tiny_model(dir, 1, {0, 1, 3});
  const std::string image = write_png(dir, "grey.png", 1, 4, 4, grey_4x4());
  ClassifierOptions options;
  options.mean_values = {20};
  options.scale = 0.05f;
  Classifier classifier(model.deploy, model.weights, options);
  EXPECT_EQ(classifier.num_classes(), 3);

  const std::vector<Prediction> top = classifier.classify(image, 5);
  // Resized: 25 60 / 10 100; minus 20, times 0.05: 0.25 2 / -0.5 4.
  const std::vector<float> expected_input = {0.25f, 2.0f, -0.5f, 4.0f};
  const std::vector<float> input = net_input(classifier);
  ASSERT_EQ(input.size(), expected_input.size());
  for (std::size_t i = 0; i < input.size(); ++i) EXPECT_FLOAT_EQ(input[i], expected_input[i]);

  const std::vector<float> probabilities = softmax({0.25f, 2.0f, 4.0f});
  ASSERT_EQ(top.size(), 3u);  // top_k 5 of 3 classes
  EXPECT_EQ(top[0].index, 2);
  EXPECT_EQ(top[1].index, 1);
  EXPECT_EQ(top[2].index, 0);
  for (const Prediction& prediction : top) {
    EXPECT_NEAR(prediction.probability, probabilities[prediction.index], 1e-6);
    EXPECT_EQ(prediction.label, std::to_string(prediction.index));
  }
}

TEST(Classifier, ColourImagesArePlanarBgrAndMeanFileIsSubtractedPerPixel) {
  TempDir dir("classifier");
  // 3 x 2 x 2 input: logits = B(0,0), G(0,1), R(1,1).
  const TinyModel model = write_tiny_model(dir, 3, {0, 4 + 1, 8 + 3});
  const std::vector<std::uint8_t> planar_bgr = {10, 20,  30,  40,    // B
                                                50, 60,  70,  80,    // G
                                                90, 100, 110, 120};  // R
  const std::string image = write_png(dir, "colour.png", 3, 2, 2, planar_bgr);
  BlobProto mean;
  for (int dim : {1, 3, 2, 2}) mean.mutable_shape()->add_dim(dim);
  for (int i = 0; i < 12; ++i) mean.add_data(static_cast<float>(i));
  const std::string mean_file = dir.file("mean.binaryproto");
  write_proto_to_binary_file(mean, mean_file);
  ClassifierOptions options;
  options.mean_file = mean_file;
  options.scale = 0.5f;
  Classifier classifier(model.deploy, model.weights, options);

  const std::vector<Prediction> top = classifier.classify(image, 1);
  const std::vector<float> input = net_input(classifier);
  ASSERT_EQ(input.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(input[i], (planar_bgr[i] - i) * 0.5f) << i;
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].index, 2);  // R(1,1): (120 - 11) / 2
  EXPECT_NEAR(top[0].probability, softmax({5.0f, 27.5f, 54.5f})[2], 1e-6);
}

TEST(Classifier, BatchesGiveTheSameAnswersAsSingleImagesAndUseLabels) {
  TempDir dir("classifier");
  const TinyModel model = write_tiny_model(dir, 1, {0, 1, 2}, /*batch=*/1);
  std::vector<std::string> images;
  // Image i is brightest at pixel i % 3, so its top class is i % 3.
  for (int i = 0; i < 5; ++i) {
    std::vector<std::uint8_t> pixels = {10, 20, 30, 40};
    pixels[i % 3] = static_cast<std::uint8_t>(200 + i);
    images.push_back(write_png(dir, "image" + std::to_string(i) + ".png", 1, 2, 2, pixels));
  }
  ClassifierOptions options;
  options.scale = 0.01f;
  options.labels_file = dir.write("labels.txt", "zero\r\none\r\ntwo\r\n");
  options.batch_size = 2;  // batches of 2, 2 and 1
  Classifier batched(model.deploy, model.weights, options);
  const std::vector<std::vector<Prediction>> results = batched.classify(images, 2);
  ASSERT_EQ(results.size(), images.size());
  options.batch_size = 0;  // the deploy's 1
  Classifier single(model.deploy, model.weights, options);
  const std::vector<std::string> names = {"zero", "one", "two"};
  for (std::size_t i = 0; i < images.size(); ++i) {
    const std::vector<Prediction> alone = single.classify(images[i], 2);
    ASSERT_EQ(results[i].size(), 2u);
    EXPECT_EQ(results[i][0].index, static_cast<int>(i % 3)) << images[i];
    EXPECT_EQ(results[i][0].label, names[i % 3]);
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(results[i][k].index, alone[k].index);
      EXPECT_FLOAT_EQ(results[i][k].probability, alone[k].probability);
    }
  }
}

TEST(Classifier, LabelFileOfTheWrongLengthNamesTheFileAndBothCounts) {
  TempDir dir("classifier");
  const TinyModel model = write_tiny_model(dir, 1, {0, 1, 2});
  ClassifierOptions options;
  options.labels_file = dir.write("labels.txt", "zero\none\n");
  const std::string message = error_of([&] { Classifier(model.deploy, model.weights, options); });
  EXPECT_CONTAINS(message, options.labels_file);
  EXPECT_CONTAINS(message, "2 lines");
  EXPECT_CONTAINS(message, "3 classes");
  options.labels_file = dir.write("long.txt", "zero\none\ntwo\nthree\n");
  EXPECT_CONTAINS(error_of([&] { Classifier(model.deploy, model.weights, options); }),
                  "has 4 lines");
}

TEST(Classifier, UnreadableImagesAreErrorsNamingTheFile) {
  TempDir dir("classifier");
  const TinyModel model = write_tiny_model(dir, 1, {0, 1, 2});
  Classifier classifier(model.deploy, model.weights);
  const std::string damaged = dir.write("damaged.png", "not an image at all");
  EXPECT_CONTAINS(error_of([&] { classifier.classify(damaged); }), damaged);
  const std::string missing = dir.file("missing.png");
  EXPECT_CONTAINS(error_of([&] { classifier.classify(missing); }), missing);
  // The classifier still works afterwards.
  const std::string good = write_png(dir, "good.png", 1, 2, 2, {1, 2, 3, 4});
  EXPECT_EQ(classifier.classify(good, 1).size(), 1u);
}

TEST(Classifier, MeanOfAnotherShapeNamesTheFileAndSuggestsChannelMeans) {
  TempDir dir("classifier");
  const TinyModel model = write_tiny_model(dir, 1, {0, 1, 2});
  BlobProto mean;
  for (int dim : {1, 1, 3, 3}) mean.mutable_shape()->add_dim(dim);
  for (int i = 0; i < 9; ++i) mean.add_data(static_cast<float>(i));  // average 4
  ClassifierOptions options;
  options.mean_file = dir.file("mean.binaryproto");
  write_proto_to_binary_file(mean, options.mean_file);
  const std::string message = error_of([&] { Classifier(model.deploy, model.weights, options); });
  EXPECT_CONTAINS(message, options.mean_file);
  EXPECT_CONTAINS(message, "(1, 1, 3, 3)");
  EXPECT_CONTAINS(message, "mean values 4");

  ClassifierOptions values;
  values.mean_values = {1, 2};  // two values for one channel
  EXPECT_CONTAINS(error_of([&] { Classifier(model.deploy, model.weights, values); }),
                  "one per channel (1), not 2");
}

// --scale=1e39 (inf as a float) or nan made every probability nan.
TEST(Classifier, AScaleOrMeanValueThatIsNoNumberIsAnError) {
  TempDir dir("classifier");
  const TinyModel model = write_tiny_model(dir, 1, {0, 1, 2});
  ClassifierOptions options;
  options.scale = std::numeric_limits<float>::infinity();
  EXPECT_CONTAINS(error_of([&] { Classifier(model.deploy, model.weights, options); }),
                  "the scale inf is not a finite number");
  options.scale = 1;
  options.mean_values = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_CONTAINS(error_of([&] { Classifier(model.deploy, model.weights, options); }),
                  "the mean value nan is not a finite number");
}

TEST(Classifier, MissingWeightsOrInputShapeAreErrors) {
  TempDir dir("classifier");
  const TinyModel model = write_tiny_model(dir, 1, {0, 1, 2});
  const std::string missing = dir.file("none.caffemodel");
  EXPECT_CONTAINS(error_of([&] { Classifier(model.deploy, missing); }), missing);
  const std::string two_channels = dir.write("two.prototxt", deploy_text(2));
  EXPECT_CONTAINS(error_of([&] { Classifier(two_channels, model.weights); }), "2 channels");
}

}  // namespace
}  // namespace xtrain::testing
