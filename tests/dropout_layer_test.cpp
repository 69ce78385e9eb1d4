// Dropout: in TRAIN each output is either 0 or x / (1 - ratio) with about
// `ratio` of them zeroed, backward reuses the forward's mask; in TEST the
// layer is the identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/philox.hpp"
#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"
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

// The Philox key of a layer's first forward after seed(seed): two 32-bit
// draws of its stream, high word first.
std::uint64_t first_forward_key(std::uint64_t seed) {
  RandomStream random(seed);
  const std::uint64_t high = random.engine()();
  const std::uint64_t low = random.engine()();
  return (high << 32) | low;
}

// The mask written out element by element from its definition in
// src/layers/dropout_mask.hpp, with no help from the layer's functor: the
// CPU loop and the CUDA kernel must both give these bits.
XTRAIN_DEVICE_TEST(DropoutLayerTest, MaskIsPhiloxOfElementBlockAndGlobalItem) {
  for (float ratio : {0.5f, 0.3f}) {
    // 21 elements per item (not a multiple of 4); shard 2 of 3 with 5 items
    // holds the global items 10..14.
    Blob bottom({5, 3, 7});
    std::fill_n(bottom.mutable_cpu_data(), bottom.count(), 1.0f);
    Blob top;
    auto layer =
        make_dropout("dropout_param { dropout_ratio: " + std::to_string(ratio) + " }", TRAIN);
    layer->set_data_shard(DataShard{2, 3});
    layer->setup({&bottom}, {&top});
    layer->seed(77);
    layer->forward({&bottom}, {&top});

    const Philox4x32Key key = philox_key(first_forward_key(77));
    const double keep = 1.0 - static_cast<double>(ratio);
    const std::uint64_t threshold = std::llround(keep * 4294967296.0);
    const float scale = static_cast<float>(1.0 / keep);
    std::size_t kept = 0;
    for (std::uint32_t j = 0; j < 5; ++j) {
      const std::uint32_t item = 10 + j;
      for (std::uint32_t e = 0; e < 21; ++e) {
        const Philox4x32Block w = philox4x32_10(Philox4x32Block{{e / 4, 0, item, 0}}, key);
        const bool expected = w.word[e % 4] < threshold;
        kept += expected;
        EXPECT_EQ(top.cpu_data()[j * 21 + e], expected ? scale : 0.0f)
            << "ratio " << ratio << " item " << item << " element " << e;
      }
    }
    EXPECT_GT(kept, 20u);
    EXPECT_LT(kept, 95u);
  }
}

// The mask of the current device (on a GPU: drawn by the CUDA kernel) has the
// bits of the CPU's, through forward and backward.
XTRAIN_DEVICE_TEST(DropoutLayerTest, MaskHasTheCpuBitsOnEveryDevice) {
  Blob bottom({6, 1000});
  fill_away_from_zero(bottom, 11);
  std::vector<Blob> tops(2);
  std::vector<Blob> bottoms(2);
  for (int run = 0; run < 2; ++run) {
    LayerParameter param;
    read_proto_from_text_string("name: 'drop' type: 'Dropout' dropout_param { dropout_ratio: 0.4 }",
                                &param);
    param.set_phase(TRAIN);
    std::unique_ptr<Layer> layer = LayerRegistry::global().create(param);
    layer->set_device(run == 0 ? Device::cpu() : testing::current_device());
    layer->set_data_shard(DataShard{1, 2});
    bottoms[run].reshape(bottom.shape());
    std::copy_n(bottom.cpu_data(), bottom.count(), bottoms[run].mutable_cpu_data());
    layer->setup({&bottoms[run]}, {&tops[run]});
    layer->seed(123);
    layer->forward({&bottoms[run]}, {&tops[run]});  // a first mask
    layer->forward({&bottoms[run]}, {&tops[run]});  // and the next
    std::fill_n(tops[run].mutable_cpu_diff(), tops[run].count(), 1.0f);
    layer->backward({&tops[run]}, {true}, {&bottoms[run]});
  }
  ASSERT_EQ(tops[0].count(), tops[1].count());
  EXPECT_EQ(std::memcmp(tops[0].cpu_data(), tops[1].cpu_data(), tops[0].count() * sizeof(float)),
            0);
  EXPECT_EQ(
      std::memcmp(bottoms[0].cpu_diff(), bottoms[1].cpu_diff(), bottoms[0].count() * sizeof(float)),
      0);
}

TEST(DropoutLayerTest, RejectsRatioOfOne) {
  Blob bottom({3});
  Blob top;
  auto layer = make_dropout("dropout_param { dropout_ratio: 1 }", TRAIN);
  testing::expect_setup_error(*layer, {&bottom}, {&top},
                              {"layer 'drop' (Dropout)", "dropout_ratio"});
}

}  // namespace
}  // namespace xtrain
