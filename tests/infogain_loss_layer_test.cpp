// InfogainLoss (Caffe 1.0's form, with the softmax inside): the loss and
// gradient by hand, against a naive reference for every normalization mode
// with ignore_label and another class axis, H = identity equals
// SoftmaxWithLoss, H from a .binaryproto file or a third bottom, the
// probability top, finite-difference gradients, and the user errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "loss_layer_test_helpers.hpp"

namespace fs = std::filesystem;

namespace xtrain {
namespace {

using namespace testing;

// Writes H (rows x cols) as a binary BlobProto and removes it afterwards.
class MatrixFile {
 public:
  MatrixFile(const std::string& name, const std::vector<int>& shape,
             const std::vector<float>& values)
      : path_((fs::temp_directory_path() /
               ("xtrain_infogain_" + std::to_string(::getpid()) + "_" + name + ".binaryproto"))
                  .string()) {
    Blob matrix(shape);
    fill_values(matrix, values);
    BlobProto proto;
    matrix.to_proto(&proto);
    write_proto_to_binary_file(proto, path_);
  }
  ~MatrixFile() { fs::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

XTRAIN_DEVICE_TEST(InfogainLossLayer, ByHand) {
  // One sample, scores (0, ln 3): p = (1/4, 3/4). H = [[1, 0.5], [0.2, 2]],
  // label 1:  loss = -(0.2 ln(1/4) + 2 ln(3/4)),
  //           dE/dx = p * (0.2 + 2) - H[1] = (0.55 - 0.2, 1.65 - 2) = (0.35, -0.35).
  Blob scores({1, 2}), labels({1}), infogain({2, 2}), loss;
  fill_values(scores, {0.0f, std::log(3.0f)});
  fill_values(labels, {1});
  fill_values(infogain, {1, 0.5f, 0.2f, 2});
  auto layer = make_loss_layer("InfogainLoss");
  const BlobVec bottom = {&scores, &labels, &infogain};
  layer->setup(bottom, {&loss});
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);
  layer->forward(bottom, {&loss});
  EXPECT_NEAR(loss.cpu_data()[0], -(0.2 * std::log(0.25) + 2 * std::log(0.75)), 1e-6);
  layer->backward({&loss}, {true, false, false}, bottom);
  EXPECT_NEAR(scores.cpu_diff()[0], 0.35, 1e-6);
  EXPECT_NEAR(scores.cpu_diff()[1], -0.35, 1e-6);
}

// Scores N = 3 x K = 4 x 1 x 2 (six labelled positions), H with distinct rows.
constexpr int kNum = 3;
constexpr int kClasses = 4;
constexpr int kInner = 2;
const std::vector<float> kLabels = {0, 1, 3, 2, 1, 0};

std::vector<float> infogain_values() {
  std::vector<float> h(kClasses * kClasses);
  for (int r = 0; r < kClasses; ++r)
    for (int c = 0; c < kClasses; ++c)
      h[r * kClasses + c] = r == c ? 1.0f + 0.5f * r : 0.1f * (r + 2 * c);
  return h;
}

struct Fixture {
  Blob scores{std::vector<int>{kNum, kClasses, 1, kInner}};
  Blob labels{std::vector<int>{kNum, 1, 1, kInner}};
  Blob infogain{std::vector<int>{1, 1, kClasses, kClasses}};
  Blob loss;
  Fixture() {
    fill_uniform(scores, -2, 2, 41);
    fill_values(labels, kLabels);
    fill_values(infogain, infogain_values());
  }
  BlobVec bottom() { return {&scores, &labels, &infogain}; }
  BlobVec top() { return {&loss}; }
};

// -sum over positions whose label is not `ignore` of sum_k H[l, k] log p_k.
double reference_sum(const Blob& scores, int ignore, int* valid) {
  const std::vector<float> h = infogain_values();
  double sum = 0;
  *valid = 0;
  for (int n = 0; n < kNum; ++n) {
    for (int i = 0; i < kInner; ++i) {
      const int label = static_cast<int>(kLabels[n * kInner + i]);
      if (label == ignore) continue;
      double z = 0;
      for (int k = 0; k < kClasses; ++k)
        z += std::exp(double(scores.cpu_data()[(n * kClasses + k) * kInner + i]));
      for (int k = 0; k < kClasses; ++k) {
        const double p = std::exp(double(scores.cpu_data()[(n * kClasses + k) * kInner + i])) / z;
        sum -= h[label * kClasses + k] * std::log(p);
      }
      ++*valid;
    }
  }
  return sum;
}

class InfogainNormalizationTest : public testing::DeviceTestWithParam<NormalizationCase> {};

TEST_P(InfogainNormalizationTest, LossMatchesTheReference) {
  Fixture f;
  auto layer = make_loss_layer("InfogainLoss", GetParam().loss_param);
  layer->setup(f.bottom(), f.top());
  layer->forward(f.bottom(), f.top());
  int valid = 0;
  const double expected =
      reference_sum(f.scores, GetParam().ignore, &valid) / GetParam().normalizer(valid);
  EXPECT_NEAR(f.loss.cpu_data()[0], expected, 1e-5 * std::max(1.0, expected));
}

TEST_P(InfogainNormalizationTest, GradientMatchesFiniteDifferences) {
  Fixture f;
  auto layer = make_loss_layer("InfogainLoss", GetParam().loss_param);
  layer->setup(f.bottom(), f.top());
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, f.bottom(), f.top());
}

double six(int) { return 6; }
double three(int) { return 3; }

XTRAIN_INSTANTIATE_ON_DEVICES(
    InfogainNormalizationTest,
    ::testing::Values(
        NormalizationCase{"DefaultIsValid", "", -100, valid_count},
        NormalizationCase{"ValidIgnoring", "loss_param { ignore_label: 1 }", 1, valid_count},
        NormalizationCase{"Full", "loss_param { normalization: FULL ignore_label: 0 }", 0, six},
        NormalizationCase{"BatchSize", "loss_param { normalization: BATCH_SIZE ignore_label: 3 }",
                          3, three},
        NormalizationCase{"None", "loss_param { normalization: NONE }", -100, one}),
    [](const ::testing::TestParamInfo<NormalizationCase>& param_info) {
      return std::string(param_info.param.name);
    });

XTRAIN_DEVICE_TEST(InfogainLossLayer, IdentityMatrixIsSoftmaxWithLoss) {
  Fixture f;
  std::vector<float> identity(kClasses * kClasses, 0.0f);
  for (int k = 0; k < kClasses; ++k) identity[k * kClasses + k] = 1;
  fill_values(f.infogain, identity);
  auto infogain = make_loss_layer("InfogainLoss");
  infogain->setup(f.bottom(), f.top());
  infogain->forward(f.bottom(), f.top());
  infogain->backward(f.top(), {true, false, false}, f.bottom());
  const std::vector<float> infogain_diff(f.scores.cpu_diff(),
                                         f.scores.cpu_diff() + f.scores.count());

  Blob softmax_loss;
  auto softmax = make_loss_layer("SoftmaxWithLoss");
  softmax->setup({&f.scores, &f.labels}, {&softmax_loss});
  softmax->forward({&f.scores, &f.labels}, {&softmax_loss});
  softmax->backward({&softmax_loss}, {true, false}, {&f.scores, &f.labels});
  EXPECT_NEAR(f.loss.cpu_data()[0], softmax_loss.cpu_data()[0], 1e-6);
  for (std::size_t j = 0; j < f.scores.count(); ++j) {
    EXPECT_NEAR(infogain_diff[j], f.scores.cpu_diff()[j], 1e-6) << j;
  }
}

XTRAIN_DEVICE_TEST(InfogainLossLayer, MatrixFromSourceFileEqualsMatrixBottom) {
  MatrixFile file("source", {1, 1, kClasses, kClasses}, infogain_values());
  Fixture f;
  auto from_bottom = make_loss_layer("InfogainLoss");
  from_bottom->setup(f.bottom(), f.top());
  from_bottom->forward(f.bottom(), f.top());
  const float expected = f.loss.cpu_data()[0];

  Blob loss, probability;
  auto from_file =
      make_loss_layer("InfogainLoss", "infogain_loss_param { source: '" + file.path() + "' }");
  const BlobVec bottom = {&f.scores, &f.labels};
  from_file->setup(bottom, {&loss, &probability});
  // The probability top is not a loss.
  EXPECT_FLOAT_EQ(from_file->loss(0), 1.0f);
  EXPECT_FLOAT_EQ(from_file->loss(1), 0.0f);
  from_file->forward(bottom, {&loss, &probability});
  EXPECT_FLOAT_EQ(loss.cpu_data()[0], expected);
  // The second top holds softmax(scores) over the class axis.
  ASSERT_EQ(probability.shape(), f.scores.shape());
  for (int i = 0; i < kInner; ++i) {
    double sum = 0;
    for (int k = 0; k < kClasses; ++k)
      sum += probability.cpu_data()[(1 * kClasses + k) * kInner + i];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }

  // The probability top gets no gradient (as in Caffe), so check the loss alone.
  Blob single_loss;
  auto single_top =
      make_loss_layer("InfogainLoss", "infogain_loss_param { source: '" + file.path() + "' }");
  single_top->setup(bottom, {&single_loss});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*single_top, bottom, {&single_loss});
}

XTRAIN_DEVICE_TEST(InfogainLossLayer, ClassesOnAnotherAxis) {
  // Scores 2 x 3 x K=4 with infogain_loss_param.axis 2: six positions.
  Blob scores({2, 3, kClasses}), labels({2, 3}), infogain({kClasses, kClasses}), loss;
  fill_uniform(scores, -2, 2, 43);
  fill_values(labels, kLabels);
  fill_values(infogain, infogain_values());
  auto layer = make_loss_layer("InfogainLoss", "infogain_loss_param { axis: -1 }");
  const BlobVec bottom = {&scores, &labels, &infogain};
  layer->setup(bottom, {&loss});
  layer->forward(bottom, {&loss});
  const std::vector<float> h = infogain_values();
  double sum = 0;
  for (int position = 0; position < 6; ++position) {
    const float* x = scores.cpu_data() + position * kClasses;
    double z = 0;
    for (int k = 0; k < kClasses; ++k) z += std::exp(double(x[k]));
    const int label = static_cast<int>(kLabels[position]);
    for (int k = 0; k < kClasses; ++k) sum -= h[label * kClasses + k] * (x[k] - std::log(z));
  }
  EXPECT_NEAR(loss.cpu_data()[0], sum / 6, 1e-5);
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, bottom, {&loss});
}

TEST(InfogainLossLayer, MatrixErrorsNameTheFileAndShapes) {
  Fixture f;
  const BlobVec two = {&f.scores, &f.labels};
  auto no_source = make_loss_layer("InfogainLoss");
  expect_error([&] { no_source->setup(two, f.top()); },
               {"layer 'loss' (InfogainLoss): no infogain matrix H: set "
                "infogain_loss_param.source"});

  const std::string missing_path = "/nonexistent/dir/H.binaryproto";
  auto missing =
      make_loss_layer("InfogainLoss", "infogain_loss_param { source: '" + missing_path + "' }");
  const std::string missing_error = error_of([&] { missing->setup(two, f.top()); });
  EXPECT_TRUE(contains(missing_error,
                       "layer 'loss' (InfogainLoss): cannot read the infogain "
                       "matrix H from infogain_loss_param.source '" +
                           missing_path + "'"))
      << missing_error;

  MatrixFile small("small", {3, 3}, std::vector<float>(9, 1.0f));
  auto wrong =
      make_loss_layer("InfogainLoss", "infogain_loss_param { source: '" + small.path() + "' }");
  const std::string size_error = error_of([&] { wrong->setup(two, f.top()); });
  EXPECT_TRUE(
      contains(size_error, "the infogain matrix H from '" + small.path() + "' has shape 3 3 (9)"))
      << size_error;
  EXPECT_TRUE(contains(size_error, "so H must be 4 x 4 (16 values)")) << size_error;

  Blob bad_bottom({5, 5});
  auto bad = make_loss_layer("InfogainLoss", "bottom: 'score' bottom: 'label' bottom: 'H'");
  expect_error(
      [&] {
        bad->setup({&f.scores, &f.labels, &bad_bottom}, f.top());
      },
      {"the infogain matrix H from 'H' (bottom 2) has shape 5 5"});
}

XTRAIN_DEVICE_TEST(InfogainLossLayer, OtherUserErrors) {
  Fixture f;
  auto legacy = make_loss_layer("InfogainLoss", "loss_param { normalize: true }");
  expect_error([&] { legacy->setup(f.bottom(), f.top()); },
               {"loss_param.normalize is not supported by InfogainLoss"});

  f.labels.mutable_cpu_data()[2] = 4;
  auto layer = make_loss_layer("InfogainLoss");
  layer->setup(f.bottom(), f.top());
  expect_error([&] { layer->forward(f.bottom(), f.top()); },
               {"label 4 at position 2 is out of range"});

  Fixture g;
  auto no_gradient = make_loss_layer("InfogainLoss");
  no_gradient->setup(g.bottom(), g.top());
  no_gradient->forward(g.bottom(), g.top());
  expect_error(
      [&] {
        no_gradient->backward(g.top(), {true, false, true}, g.bottom());
      },
      {"cannot backpropagate to its infogain matrix bottom 2"});
  EXPECT_FALSE(no_gradient->allow_force_backward(2));

  Blob few_labels({kNum, 1});
  auto short_labels = make_loss_layer("InfogainLoss");
  expect_error(
      [&] {
        short_labels->setup({&g.scores, &few_labels, &g.infogain}, g.top());
      },
      {"must hold one label per score position: 6 values"});
}

}  // namespace
}  // namespace xtrain
