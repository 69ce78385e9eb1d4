// Dropout: in TRAIN each output is either 0 or x / (1 - ratio) with about
// `ratio` of them zeroed, backward reuses the forward's mask; in TEST the
// layer is the identity.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

std::unique_ptr<Layer> make_dropout(const std::string& extra, Phase phase) {
  LayerParameter param;
  read_proto_from_text_string("name: 'drop' type: 'Dropout' " + extra, &param);
  param.set_phase(phase);
  return testing::create_layer(param);
}

void fill_away_from_zero(Blob& blob, std::uint64_t seed) {
  RandomStream random(seed);
  random.uniform(blob.count(), 0.5f, 2.0f, blob.mutable_cpu_data());
}

XTRAIN_DEVICE_TEST(DropoutLayerTest, TrainZeroesAboutRatioAndScalesTheRest) {
  for (float ratio : {0.5f, 0.2f, 0.8f}) {
    Blob bottom({10, 20, 10});
    Blob top;
    fill_away_from_zero(bottom, 3);
    auto layer =
        make_dropout("dropout_param { dropout_ratio: " + std::to_string(ratio) + " }", TRAIN);
    layer->setup({&bottom}, {&top});
    layer->forward({&bottom}, {&top});
    const float scale = 1.0f / (1.0f - ratio);
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < bottom.count(); ++i) {
      const float y = top.cpu_data()[i];
      if (y == 0) {
        ++dropped;
      } else {
        EXPECT_FLOAT_EQ(y, bottom.cpu_data()[i] * scale) << i;
      }
    }
    const double fraction = static_cast<double>(dropped) / bottom.count();
    // 2000 Bernoulli draws: the standard deviation is at most ~0.011.
    EXPECT_NEAR(fraction, ratio, 0.05) << "ratio " << ratio;
  }
}

XTRAIN_DEVICE_TEST(DropoutLayerTest, TrainBackwardUsesTheForwardMask) {
  Blob bottom({4, 50});
  Blob top;
  fill_away_from_zero(bottom, 4);
  auto layer = make_dropout("", TRAIN);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  for (std::size_t i = 0; i < top.count(); ++i) top.mutable_cpu_diff()[i] = 1.0f + i;
  layer->backward({&top}, {true}, {&bottom});
  for (std::size_t i = 0; i < bottom.count(); ++i) {
    const bool kept = top.cpu_data()[i] != 0;
    EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], kept ? 2.0f * (1.0f + i) : 0.0f) << i;
  }
}

XTRAIN_DEVICE_TEST(DropoutLayerTest, SameSeedSameMaskNewDrawEachForward) {
  Blob bottom({1000});
  fill_away_from_zero(bottom, 5);
  Blob first, second, third;
  auto layer = make_dropout("", TRAIN);
  layer->setup({&bottom}, {&first});
  layer->seed(99);
  layer->forward({&bottom}, {&first});
  layer->forward({&bottom}, {&third});
  layer->seed(99);
  layer->forward({&bottom}, {&second});
  std::size_t differ = 0;
  for (std::size_t i = 0; i < bottom.count(); ++i) {
    EXPECT_EQ(first.cpu_data()[i], second.cpu_data()[i]);
    differ += first.cpu_data()[i] != third.cpu_data()[i];
  }
  EXPECT_GT(differ, 100u);
}

XTRAIN_DEVICE_TEST(DropoutLayerTest, TestPhaseIsIdentity) {
  Blob bottom({3, 4, 5});
  Blob top;
  fill_away_from_zero(bottom, 6);
  auto layer = make_dropout("dropout_param { dropout_ratio: 0.7 }", TEST);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  for (std::size_t i = 0; i < bottom.count(); ++i) {
    EXPECT_EQ(top.cpu_data()[i], bottom.cpu_data()[i]);
    top.mutable_cpu_diff()[i] = 0.5f * i;
  }
  layer->backward({&top}, {true}, {&bottom});
  for (std::size_t i = 0; i < bottom.count(); ++i) EXPECT_EQ(bottom.cpu_diff()[i], 0.5f * i);
}

XTRAIN_DEVICE_TEST(DropoutLayerTest, InPlaceTrain) {
  Blob original({200});
  fill_away_from_zero(original, 7);
  Blob blob({200});
  std::copy_n(original.cpu_data(), 200, blob.mutable_cpu_data());
  auto layer = make_dropout("", TRAIN);
  layer->setup({&blob}, {&blob});
  layer->forward({&blob}, {&blob});
  for (std::size_t i = 0; i < 200; ++i) {
    const float y = blob.cpu_data()[i];
    if (y != 0) {
      EXPECT_FLOAT_EQ(y, 2.0f * original.cpu_data()[i]);
    }
    blob.mutable_cpu_diff()[i] = 1.0f;
  }
  layer->backward({&blob}, {true}, {&blob});
  for (std::size_t i = 0; i < 200; ++i) {
    EXPECT_EQ(blob.cpu_diff()[i], blob.cpu_data()[i] == 0 ? 0.0f : 2.0f);
  }
}

XTRAIN_DEVICE_TEST(DropoutLayerTest, TrainGradient) {
  Blob bottom({2, 3, 4});
  Blob top;
  RandomStream random(8);
  random.uniform(bottom.count(), -1.0f, 1.0f, bottom.mutable_cpu_data());
  auto layer = make_dropout("dropout_param { dropout_ratio: 0.3 }", TRAIN);
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(DropoutLayerTest, TestGradient) {
  Blob bottom({2, 3, 4});
  Blob top;
  RandomStream random(9);
  random.uniform(bottom.count(), -1.0f, 1.0f, bottom.mutable_cpu_data());
  auto layer = make_dropout("", TEST);
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

TEST(DropoutLayerTest, RejectsRatioOfOne) {
  Blob bottom({3});
  Blob top;
  auto layer = make_dropout("dropout_param { dropout_ratio: 1 }", TRAIN);
  try {
    layer->setup({&bottom}, {&top});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'drop' (Dropout)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dropout_ratio"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xtrain
