// Accuracy: top-1 and top-k against a naive count, ignore_label, the
// per-class top, classes on an inner axis, Caffe's tie rule, and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

using testing::error_of;

std::unique_ptr<Layer> make_accuracy(const std::string& extra) {
  LayerParameter param;
  read_proto_from_text_string("name: 'acc' type: 'Accuracy' " + extra, &param);
  return testing::create_layer(param);
}

// Hand-made scores for 4 samples x 3 classes (no ties):
//   sample 0: class 2 best, then 0        label 2 -> top-1 right
//   sample 1: class 0 best, then 1        label 1 -> top-1 wrong, top-2 right
//   sample 2: class 1 best, then 2        label 0 -> wrong at top-1 and top-2
//   sample 3: class 1 best, then 0        label 1 -> top-1 right
const float kScores[] = {0.3f, 0.1f, 0.6f,  //
                         0.5f, 0.4f, 0.1f,  //
                         0.1f, 0.7f, 0.2f,  //
                         0.2f, 0.9f, -1.f};
const float kLabels[] = {2, 1, 0, 1};

struct Fixture {
  Blob scores{std::vector<int>{4, 3}};
  Blob labels{std::vector<int>{4}};
  Blob accuracy;
  Blob per_class;
  Fixture() {
    std::copy_n(kScores, 12, scores.mutable_cpu_data());
    std::copy_n(kLabels, 4, labels.mutable_cpu_data());
  }
  float run(const std::string& extra, bool with_per_class = false) {
    auto layer = make_accuracy(extra);
    BlobVec top = {&accuracy};
    if (with_per_class) top.push_back(&per_class);
    layer->setup({&scores, &labels}, top);
    layer->forward({&scores, &labels}, top);
    return accuracy.cpu_data()[0];
  }
};

XTRAIN_DEVICE_TEST(AccuracyLayerTest, TopOneByHand) {
  Fixture f;
  EXPECT_FLOAT_EQ(f.run(""), 2.0f / 4.0f);
  EXPECT_EQ(f.accuracy.num_axes(), 0);
  EXPECT_EQ(f.accuracy.count(), 1u);
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, TopTwoByHand) {
  Fixture f;
  EXPECT_FLOAT_EQ(f.run("accuracy_param { top_k: 2 }"), 3.0f / 4.0f);
  EXPECT_FLOAT_EQ(f.run("accuracy_param { top_k: 3 }"), 1.0f);
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, IgnoreLabelSkipsSamples) {
  Fixture f;
  // Without the two label-1 samples: sample 0 right, sample 2 wrong.
  EXPECT_FLOAT_EQ(f.run("accuracy_param { ignore_label: 1 }"), 1.0f / 2.0f);
  for (int i = 0; i < 4; ++i) f.labels.mutable_cpu_data()[i] = 5;
  EXPECT_FLOAT_EQ(f.run("accuracy_param { ignore_label: 5 }"), 0.0f);
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, PerClassTop) {
  Fixture f;
  f.run("", true);
  ASSERT_EQ(f.per_class.shape(), std::vector<int>{3});
  EXPECT_FLOAT_EQ(f.per_class.cpu_data()[0], 0.0f);  // sample 2 wrong
  EXPECT_FLOAT_EQ(f.per_class.cpu_data()[1], 0.5f);  // sample 1 wrong, 3 right
  EXPECT_FLOAT_EQ(f.per_class.cpu_data()[2], 1.0f);  // sample 0 right
  f.run("accuracy_param { top_k: 2 ignore_label: 0 }", true);
  EXPECT_FLOAT_EQ(f.accuracy.cpu_data()[0], 1.0f);
  EXPECT_FLOAT_EQ(f.per_class.cpu_data()[0], 0.0f);  // never counted
  EXPECT_FLOAT_EQ(f.per_class.cpu_data()[1], 1.0f);
  EXPECT_FLOAT_EQ(f.per_class.cpu_data()[2], 1.0f);
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, TiesCountAgainstThePrediction) {
  // Caffe 1.0 counts every other class scoring >= the true one as better.
  Blob scores({2, 3});
  const float values[] = {0.5f, 0.5f, 0.0f,   // label 0 ties with class 1
                          1.0f, 1.0f, 1.0f};  // all equal, label 2
  std::copy_n(values, 6, scores.mutable_cpu_data());
  Blob labels(std::vector<int>{2});
  labels.mutable_cpu_data()[0] = 0;
  labels.mutable_cpu_data()[1] = 2;
  Blob accuracy;
  auto top1 = make_accuracy("");
  top1->setup({&scores, &labels}, {&accuracy});
  top1->forward({&scores, &labels}, {&accuracy});
  EXPECT_FLOAT_EQ(accuracy.cpu_data()[0], 0.0f);
  auto top2 = make_accuracy("accuracy_param { top_k: 2 }");
  top2->setup({&scores, &labels}, {&accuracy});
  top2->forward({&scores, &labels}, {&accuracy});
  EXPECT_FLOAT_EQ(accuracy.cpu_data()[0], 0.5f);
}

// Naive reference: sort the classes by score (ties: true class last) and see
// whether the label is among the first k.
float naive_accuracy(const Blob& scores, const Blob& labels, int axis, int k) {
  const std::size_t outer = scores.count(0, axis);
  const int classes = scores.shape(axis);
  const std::size_t inner = scores.count(axis + 1);
  int correct = 0;
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inner; ++i) {
      const int label = static_cast<int>(labels.cpu_data()[o * inner + i]);
      std::vector<std::pair<float, int>> ranked;
      for (int c = 0; c < classes; ++c) {
        ranked.push_back({scores.cpu_data()[(o * classes + c) * inner + i], c});
      }
      std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first > b.first;
        return a.second != label && b.second == label;
      });
      for (int r = 0; r < k; ++r) correct += ranked[r].second == label;
    }
  }
  return static_cast<float>(correct) / static_cast<float>(outer * inner);
}

// A diverged net's scores are nan: no prediction, so never correct (with >=
// alone, every comparison with nan was false and all-nan scored 1). A nan in
// another class counts against the true class, as a tie does.
XTRAIN_DEVICE_TEST(AccuracyLayerTest, NanScoresAreNeverCorrect) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Fixture f;
  std::fill_n(f.scores.mutable_cpu_data(), 12, nan);
  EXPECT_FLOAT_EQ(f.run(""), 0.0f);
  EXPECT_FLOAT_EQ(f.run("accuracy_param { top_k: 3 }"), 0.0f);
  Fixture g;  // sample 0 (label 2, right at top-1) with a nan in class 1
  g.scores.mutable_cpu_data()[1] = nan;
  EXPECT_FLOAT_EQ(g.run(""), 1.0f / 4.0f);
  EXPECT_FLOAT_EQ(g.run("accuracy_param { top_k: 2 }"), 3.0f / 4.0f);
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, ClassesOnAnInnerAxisMatchNaive) {
  // 3 x 5 x 2 x 2 scores, classes on axis 1: 12 labelled positions.
  Blob scores({3, 5, 2, 2});
  Blob labels({3, 2, 2});
  RandomStream random(41);
  random.uniform(scores.count(), 0.0f, 1.0f, scores.mutable_cpu_data());
  for (std::size_t i = 0; i < labels.count(); ++i) labels.mutable_cpu_data()[i] = random.below(5);
  for (int k : {1, 2, 4}) {
    Blob accuracy;
    auto layer = make_accuracy("accuracy_param { top_k: " + std::to_string(k) + " }");
    layer->setup({&scores, &labels}, {&accuracy});
    layer->forward({&scores, &labels}, {&accuracy});
    EXPECT_FLOAT_EQ(accuracy.cpu_data()[0], naive_accuracy(scores, labels, 1, k)) << "k=" << k;
  }
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, LabelOutOfRangeIsAnError) {
  Fixture f;
  f.labels.mutable_cpu_data()[2] = 3;
  const std::string message = error_of([&] { f.run(""); });
  EXPECT_NE(message.find("layer 'acc' (Accuracy)"), std::string::npos) << message;
  EXPECT_NE(message.find("label 3"), std::string::npos) << message;
  EXPECT_NE(message.find("3 classes"), std::string::npos) << message;
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, LabelCountMismatchIsAnError) {
  Fixture f;
  f.labels.reshape({5});
  const std::string message = error_of([&] { f.run(""); });
  EXPECT_NE(message.find("layer 'acc' (Accuracy)"), std::string::npos) << message;
  EXPECT_NE(message.find(f.labels.shape_string()), std::string::npos) << message;
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, TopKAboveClassCountIsAnError) {
  Fixture f;
  const std::string message = error_of([&] { f.run("accuracy_param { top_k: 4 }"); });
  EXPECT_NE(message.find("top_k"), std::string::npos) << message;
}

XTRAIN_DEVICE_TEST(AccuracyLayerTest, HasNoGradient) {
  Fixture f;
  auto layer = make_accuracy("");
  layer->setup({&f.scores, &f.labels}, {&f.accuracy});
  layer->forward({&f.scores, &f.labels}, {&f.accuracy});
  EXPECT_FALSE(layer->allow_force_backward(0));
  EXPECT_NO_THROW(layer->backward({&f.accuracy}, {false, false}, {&f.scores, &f.labels}));
  EXPECT_THROW(layer->backward({&f.accuracy}, {true, false}, {&f.scores, &f.labels}), Error);
}

}  // namespace
}  // namespace xtrain
