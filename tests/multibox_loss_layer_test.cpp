// MultiBoxLoss: a two-prior example worked out by hand (matching, mining,
// SmoothL1 and softmax terms, normalization, gradients), the gradient of the
// location and confidence inputs against finite differences in several
// modes, and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::diff_of;
using testing::make_layer;
using testing::set_data;

// Priors p0 = the top-left quadrant, p1 = the bottom-right one, variance 1.
void set_two_priors(Blob& priors) {
  priors.reshape({1, 2, 8});
  set_data(priors, {0, 0, 0.5f, 0.5f, 0.5f, 0.5f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
}

// One box of class 1 on item 0, (0, 0, 0.4, 0.5): IoU 0.8 with p0, 0 with p1.
void set_one_box(Blob& truth) {
  truth.reshape({1, 1, 1, 8});
  set_data(truth, {0, 1, 0, 0, 0, 0.4f, 0.5f, 0});
}

std::string loss_layer(const std::string& settings) {
  return "name: 'mbox_loss' type: 'MultiBoxLoss' multibox_loss_param { num_classes: 2 " + settings +
         " }";
}

class MultiBoxLossHandExample : public ::testing::Test {
 protected:
  MultiBoxLossHandExample() : loc({1, 8}), conf({1, 4}) {
    set_two_priors(priors);
    set_one_box(truth);
    // p0's offsets against its target (0, 0, 0.4 - 0.5, 0) = (0, 0, -0.1, 0):
    // differences (0.1, 0, -0.2, 0.5); p1 is unmatched.
    set_data(loc, {0.1f, 0, -0.3f, 0.5f, 0.7f, 0.7f, 0.7f, 0.7f});
    // p0 scores (0, 1): -log(e / (1 + e)) = 0.313262 against class 1;
    // p1 scores (0.5, 0.2): -log(1 / (1 + e^-0.3)) = 0.554355 against background.
    set_data(conf, {0, 1, 0.5f, 0.2f});
  }

  float run(const std::string& settings) {
    layer = make_layer(loss_layer(settings));
    layer->setup(bottoms(), {&top});
    layer->forward(bottoms(), {&top});
    return data_of(top)[0];
  }
  BlobVec bottoms() { return {&loc, &conf, &priors, &truth}; }

  Blob loc, conf, priors, truth, top;
  std::unique_ptr<Layer> layer;
};

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, MinedNegativeAndMatchedPriorByHand) {
  // SmoothL1 0.5 (0.01 + 0 + 0.04 + 0.25) = 0.15; one match, so VALID
  // divides by 1; neg_pos_ratio 3 mines the one candidate, p1.
  EXPECT_NEAR(run(""), 0.15f + 0.313262f + 0.554355f, 1e-5f);
  layer->backward({&top}, {true, true, false, false}, bottoms());
  testing::expect_near_all(diff_of(loc), {0.1f, 0, -0.2f, 0.5f, 0, 0, 0, 0}, 1e-6f);
  // softmax - one-hot: p0 (0.268941, -0.268941), p1 (0.574443 - 1, 0.425557).
  testing::expect_near_all(diff_of(conf), {0.268941f, -0.268941f, -0.425557f, 0.425557f}, 1e-5f);
}

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, NoNegativesWeightsAndNormalizations) {
  EXPECT_NEAR(run("neg_pos_ratio: 0"), 0.15f + 0.313262f, 1e-5f);
  EXPECT_NEAR(run("neg_pos_ratio: 0 loc_weight: 2"), 2 * 0.15f + 0.313262f, 1e-5f);
  EXPECT_NEAR(run("loc_loss_type: L2 neg_pos_ratio: 0"), 0.15f + 0.313262f, 1e-5f);
  // mining_type NONE: every prior in the confidence loss; FULL divides by
  // 1 item x 2 priors.
  layer = make_layer(loss_layer("mining_type: NONE") + " loss_param { normalization: FULL }");
  layer->setup(bottoms(), {&top});
  layer->forward(bottoms(), {&top});
  EXPECT_NEAR(data_of(top)[0], (0.15f + 0.313262f + 0.554355f) / 2, 1e-5f);
}

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, HardExampleMiningKeepsTheLargestLosses) {
  // Per-prior losses: p0 0.15 + 0.313262 (matched), p1 0.554355. One sample
  // keeps p1 only: p0 is unmatched, so no location term and nothing to
  // divide by (the normalizer stays 1).
  EXPECT_NEAR(run("mining_type: HARD_EXAMPLE sample_size: 1"), 0.554355f, 1e-5f);
  EXPECT_NEAR(run("mining_type: HARD_EXAMPLE sample_size: 2"), 0.15f + 0.313262f + 0.554355f,
              1e-5f);
}

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, MatchingDecodedPredictions) {
  // p0 decodes to (0.1, 0, 0.2, 1), IoU 0.2 with the box, still its best
  // match; p1 decodes far off. The targets are still coded against p0.
  EXPECT_NEAR(run("use_prior_for_matching: false"), 0.15f + 0.313262f + 0.554355f, 1e-5f);
}

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, PropagateDownFalseLeavesATermOutAsSsdDoes) {
  layer = make_layer(loss_layer("") +
                     " propagate_down: false propagate_down: true propagate_down: false "
                     "propagate_down: false");
  layer->setup(bottoms(), {&top});
  layer->forward(bottoms(), {&top});
  EXPECT_NEAR(data_of(top)[0], 0.313262f + 0.554355f, 1e-5f);
}

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, ImagesWithoutBoxesLearnOnlyBackground) {
  // Item 1 has no box: without mining all its priors are background.
  loc.reshape({2, 8});
  conf.reshape({2, 4});
  set_data(loc, {0.1f, 0, -0.3f, 0.5f, 0.7f, 0.7f, 0.7f, 0.7f, 0, 0, 0, 0, 0, 0, 0, 0});
  set_data(conf, {0, 1, 0.5f, 0.2f, 0, 0, 0, 0});
  EXPECT_NEAR(run("mining_type: NONE"), 0.15f + 0.313262f + 0.554355f + 2 * std::log(2.0f), 1e-5f);
}

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, LogisticConfidenceAgainstOneHotTargets) {
  // Sigmoid cross-entropy summed over the classes: p0 targets (0, 1), p1
  // (the mined negative) targets (1, 0).
  const auto bce = [](float x, float t) { return std::log(1 + std::exp(x)) - x * t; };
  const float expected = 0.15f + bce(0, 0) + bce(1, 1) + bce(0.5f, 1) + bce(0.2f, 0);
  EXPECT_NEAR(run("conf_loss_type: LOGISTIC"), expected, 1e-5f);
}

struct GradientCase {
  const char* name;
  std::string settings;
};

// 2 items, 6 priors of 3 classes; item 0 has two boxes, item 1 one.
XTRAIN_DEVICE_TEST(MultiBoxLossLayerTest, LocationAndConfidenceGradients) {
  const std::vector<GradientCase> cases = {
      {"default", "num_classes: 3"},
      {"all negatives mined, center size",
       "num_classes: 3 neg_pos_ratio: 10 code_type: CENTER_SIZE"},
      {"no mining, logistic, L2",
       "num_classes: 3 mining_type: NONE conf_loss_type: LOGISTIC "
       "loc_loss_type: L2"},
      {"per-class locations", "num_classes: 3 mining_type: NONE share_location: false"},
      {"bipartite, corner size, variance in target",
       "num_classes: 3 match_type: BIPARTITE code_type: CORNER_SIZE encode_variance_in_target: "
       "true neg_pos_ratio: 10"},
  };
  for (const GradientCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int loc_classes = c.settings.find("share_location: false") != std::string::npos ? 3 : 1;
    Blob loc({2, 6 * loc_classes * 4});
    Blob conf({2, 6 * 3});
    Blob priors({1, 2, 24});
    Blob truth({1, 1, 3, 8});
    // Small offsets keep SmoothL1 away from its kink at |d| = 1.
    testing::fill_uniform(loc, 11, -0.3f, 0.3f);
    testing::fill_uniform(conf, 12, -2, 2);
    set_data(priors, {0,    0,    0.5f, 0.5f, 0.5f, 0,    1,    0.5f, 0,    0.5f, 0.5f, 1,
                      0.5f, 0.5f, 1,    1,    0.2f, 0.2f, 0.8f, 0.8f, 0.1f, 0.1f, 0.6f, 0.7f,
                      0.1f, 0.1f, 0.2f, 0.2f, 0.1f, 0.1f, 0.2f, 0.2f, 0.1f, 0.1f, 0.2f, 0.2f,
                      0.1f, 0.1f, 0.2f, 0.2f, 0.1f, 0.1f, 0.2f, 0.2f, 0.1f, 0.1f, 0.2f, 0.2f});
    set_data(truth, {0, 1, 0, 0.05f, 0.05f, 0.45f, 0.5f,  0,  //
                     0, 2, 0, 0.55f, 0.5f,  0.95f, 0.95f, 0,  //
                     1, 2, 0, 0.15f, 0.2f,  0.7f,  0.75f, 0});
    Blob top;
    auto layer = make_layer("name: 'mbox_loss' type: 'MultiBoxLoss' multibox_loss_param { " +
                            c.settings + " }");
    layer->setup({&loc, &conf, &priors, &truth}, {&top});
    testing::GradientCheckOptions options;
    options.bottoms_to_check = {0, 1};
    options.step = 1e-3f;
    testing::GradientChecker(options).check(*layer, {&loc, &conf, &priors, &truth}, {&top});
  }
}

XTRAIN_DEVICE_TEST_F(MultiBoxLossHandExample, BadInputsAreErrors) {
  layer = make_layer(loss_layer(""));
  Blob wrong({1, 12});
  testing::expect_setup_error(*layer, {&wrong, &conf, &priors, &truth}, {&top},
                              {"'mbox_loss'", "2 priors need 8"});
  layer = make_layer(loss_layer(""));
  layer->setup(bottoms(), {&top});
  set_data(truth, {0, 0, 0, 0, 0, 0.4f, 0.5f, 0});
  testing::expect_error([&] { layer->forward(bottoms(), {&top}); }, {"background label 0"});
  layer = make_layer(loss_layer("share_location: false"));
  testing::expect_setup_error(*layer, bottoms(), {&top}, {"share_location"});
  layer = make_layer(loss_layer("do_neg_mining: false"));
  testing::expect_setup_error(*layer, bottoms(), {&top}, {"do_neg_mining"});
}

}  // namespace
}  // namespace xtrain
