// DummyData: shapes from `shape` or the legacy fields, one filler for all or
// one per top, Caffe's refill rule (constant tops are filled once at setup,
// the others on every forward), the Philox refills (the same bits on every
// device), and the parameter errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/box_muller.hpp"
#include "core/philox.hpp"
#include "core/random_fill.hpp"
#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

using namespace testing;

// A DummyData layer 'dummy' with `settings` as its dummy_data_param.
std::unique_ptr<Layer> dummy_data(const std::string& settings) {
  return make_layer("name: 'dummy' type: 'DummyData' dummy_data_param { " + settings + " }");
}

TEST(DummyDataLayerTest, ZerosInTheGivenShapes) {
  Blob a, b;
  auto layer = dummy_data("shape { dim: 2 dim: 3 } shape { dim: 4 }");
  layer->setup({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(b.shape(), (std::vector<int>{4}));
  EXPECT_EQ(data_of(a), std::vector<float>(6, 0.0f));
  EXPECT_EQ(data_of(b), std::vector<float>(4, 0.0f));
}

TEST(DummyDataLayerTest, LegacyShapeFieldsGiveOnceOrPerTop) {
  Blob a, b;
  auto layer = dummy_data(
      "num: 5 num: 6 channels: 2 height: 3 width: 1 width: 4 data_filler { type: 'constant' value: "
      "7 }");
  layer->setup({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{5, 2, 3, 1}));
  EXPECT_EQ(b.shape(), (std::vector<int>{6, 2, 3, 4}));
  EXPECT_EQ(data_of(a), std::vector<float>(a.count(), 7.0f));
  EXPECT_EQ(data_of(b), std::vector<float>(b.count(), 7.0f));
}

TEST(DummyDataLayerTest, ConstantTopsAreFilledOnceOthersOnEveryForward) {
  Blob constant, random;
  auto layer = dummy_data(
      "shape { dim: 10 } data_filler { type: 'constant' value: 3 } data_filler { type: 'gaussian' "
      "std: 1 }");
  layer->setup({}, {&constant, &random});
  EXPECT_EQ(data_of(constant), std::vector<float>(10, 3.0f));

  // A later layer may change a constant top in place: it stays changed.
  constant.mutable_cpu_data()[0] = -1;
  layer->forward({}, {&constant, &random});
  EXPECT_EQ(constant.cpu_data()[0], -1.0f);
  const std::vector<float> first = data_of(random);
  EXPECT_NE(first, std::vector<float>(10, 0.0f));
  layer->forward({}, {&constant, &random});
  EXPECT_NE(data_of(random), first);
}

TEST(DummyDataLayerTest, OneNonConstantFillerRefillsEveryTop) {
  Blob a, b;
  auto layer = dummy_data("shape { dim: 3 dim: 4 } data_filler { type: 'uniform' min: 1 max: 2 }");
  layer->setup({}, {&a, &b});
  layer->forward({}, {&a, &b});
  const std::vector<float> first_a = data_of(a);
  for (float v : first_a) {
    EXPECT_GE(v, 1.0f);
    EXPECT_LE(v, 2.0f);
  }
  layer->forward({}, {&a, &b});
  EXPECT_NE(data_of(a), first_a);
  EXPECT_NE(data_of(b), data_of(a));
}

// The Philox key of a layer's first forward after seed(seed).
std::uint64_t first_forward_key(std::uint64_t seed) {
  RandomStream random(seed);
  const std::uint64_t high = random.engine()();
  const std::uint64_t low = random.engine()();
  return (high << 32) | low;
}

// The refills written out from their definition in src/core/random_fill.hpp,
// element by element, without the layer's functor: top t is Philox stream t.
XTRAIN_DEVICE_TEST(DummyDataLayerTest, RefillsAreDirectPhiloxDraws) {
  Blob uniform, normal;
  auto layer = dummy_data(
      "shape { dim: 3 dim: 5 } shape { dim: 2 dim: 7 } data_filler { type: 'uniform' min: -2 max: "
      "3 } data_filler { type: 'gaussian' mean: 1 std: 0.5 }");
  layer->setup({}, {&uniform, &normal});
  layer->seed(5);
  layer->forward({}, {&uniform, &normal});
  const Philox4x32Key key = philox_key(first_forward_key(5));
  for (std::uint32_t i = 0; i < 15; ++i) {
    const Philox4x32Block w = philox4x32_10(Philox4x32Block{{i / 4, 0, 0, 0}}, key);
    EXPECT_EQ(uniform.cpu_data()[i], std::fma(5.0f, uniform_from_bits(w.word[i % 4]), -2.0f)) << i;
  }
  for (std::uint32_t i = 0; i < 14; ++i) {
    const Philox4x32Block w = philox4x32_10(Philox4x32Block{{i / 4, 0, 1, 0}}, key);
    const std::uint32_t pair = (i % 4) / 2;
    const NormalPair z = box_muller(w.word[2 * pair], w.word[2 * pair + 1]);
    EXPECT_EQ(normal.cpu_data()[i], std::fma(0.5f, i % 2 == 0 ? z.first : z.second, 1.0f)) << i;
  }
}

// Every filler DummyData refills, on the current device (on a GPU: the Philox
// kernel and the host fillers) and on the CPU, from one seed: the same bits.
XTRAIN_DEVICE_TEST(DummyDataLayerTest, RefillsHaveTheCpuBitsOnEveryDevice) {
  const std::string prototxt =
      "name: 'dummy' type: 'DummyData' dummy_data_param { "
      "shape { dim: 4 dim: 3 dim: 5 dim: 5 } "
      "data_filler { type: 'gaussian' std: 2 mean: -1 } data_filler { type: 'uniform' } "
      "data_filler { type: 'xavier' } data_filler { type: 'msra' } "
      "data_filler { type: 'positive_unitball' } data_filler { type: 'constant' value: 2 } }";
  std::vector<std::vector<float>> values[2];
  for (int run = 0; run < 2; ++run) {
    std::unique_ptr<Layer> layer =
        LayerRegistry::global().create(testing::layer_param_from(prototxt));
    layer->set_device(run == 0 ? Device::cpu() : testing::current_device());
    std::vector<Blob> tops(6);
    BlobVec top;
    for (Blob& blob : tops) top.push_back(&blob);
    layer->setup({}, top);
    layer->seed(31);
    for (int forward = 0; forward < 2; ++forward) {
      layer->forward({}, top);
      for (const Blob& blob : tops) values[run].push_back(data_of(blob));
    }
  }
  ASSERT_EQ(values[0].size(), values[1].size());
  for (std::size_t t = 0; t < values[0].size(); ++t) {
    ASSERT_EQ(values[0][t].size(), values[1][t].size());
    EXPECT_EQ(
        std::memcmp(values[0][t].data(), values[1][t].data(), values[0][t].size() * sizeof(float)),
        0)
        << "top " << t % 6 << " of forward " << t / 6;
  }
}

TEST(DummyDataLayerTest, FillersMapToTheirPerElementDistributions) {
  Blob weights({4, 6});
  const auto distribution = [&](const std::string& text) {
    return per_element_distribution(
        testing::layer_param_from("name: 'd' type: 'DummyData' dummy_data_param { "
                                  "data_filler { " +
                                  text + " } }")
            .dummy_data_param()
            .data_filler(0),
        weights);
  };
  const std::optional<RandomDistribution> uniform = distribution("type: 'uniform' min: -1 max: 3");
  ASSERT_TRUE(uniform);
  EXPECT_EQ(uniform->kind, RandomDrawKind::kUniform);
  EXPECT_EQ(uniform->scale, 4.0f);
  EXPECT_EQ(uniform->offset, -1.0f);
  const std::optional<RandomDistribution> gaussian =
      distribution("type: 'gaussian' mean: 2 std: 3");
  ASSERT_TRUE(gaussian);
  EXPECT_EQ(gaussian->kind, RandomDrawKind::kNormal);
  EXPECT_EQ(gaussian->scale, 3.0f);
  EXPECT_EQ(gaussian->offset, 2.0f);
  // fan_in = 6: xavier U(-sqrt(3/6), sqrt(3/6)), msra N(0, sqrt(2/6)).
  const std::optional<RandomDistribution> xavier = distribution("type: 'xavier'");
  ASSERT_TRUE(xavier);
  EXPECT_EQ(xavier->kind, RandomDrawKind::kUniform);
  EXPECT_FLOAT_EQ(xavier->offset, -std::sqrt(0.5f));
  EXPECT_FLOAT_EQ(xavier->scale, 2 * std::sqrt(0.5f));
  const std::optional<RandomDistribution> msra = distribution("type: 'msra'");
  ASSERT_TRUE(msra);
  EXPECT_EQ(msra->kind, RandomDrawKind::kNormal);
  EXPECT_FLOAT_EQ(msra->scale, std::sqrt(2.0f / 6.0f));
  EXPECT_EQ(msra->offset, 0.0f);
  // Not independent draws per element: left to the host fillers.
  EXPECT_FALSE(distribution("type: 'gaussian' sparse: 2"));
  EXPECT_FALSE(distribution("type: 'positive_unitball'"));
  EXPECT_FALSE(distribution("type: 'bilinear'"));
  EXPECT_FALSE(distribution("type: 'constant' value: 1"));
  expect_error([&] { distribution("type: 'uniform' min: 2 max: 1"); }, {"min <= max"});
  expect_error([&] { distribution("type: 'gaussian' std: 0"); }, {"std > 0"});
}

TEST(DummyDataLayerTest, GaussianRefillHasTheMeanAndStd) {
  Blob blob;
  auto layer =
      dummy_data("shape { dim: 1000 dim: 100 } data_filler { type: 'gaussian' mean: 3 std: 2 }");
  layer->setup({}, {&blob});
  layer->forward({}, {&blob});
  double sum = 0, squares = 0;
  for (float v : data_of(blob)) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  const double mean = sum / blob.count();
  // Standard errors 0.0063 and ~0.009 for 10^5 draws.
  EXPECT_NEAR(mean, 3.0, 0.03);
  EXPECT_NEAR(std::sqrt(squares / blob.count() - mean * mean), 2.0, 0.03);
}

TEST(DummyDataLayerTest, PositiveUnitballIsRefilledOnTheHostRowByRow) {
  Blob blob;
  auto layer = dummy_data("shape { dim: 3 dim: 8 } data_filler { type: 'positive_unitball' }");
  layer->setup({}, {&blob});
  layer->forward({}, {&blob});
  const std::vector<float> first = data_of(blob);
  for (int row = 0; row < 3; ++row) {
    EXPECT_NEAR(std::accumulate(first.begin() + row * 8, first.begin() + row * 8 + 8, 0.0), 1.0,
                1e-5);
  }
  layer->forward({}, {&blob});
  EXPECT_NE(data_of(blob), first);
}

TEST(DummyDataLayerTest, ParameterErrors) {
  struct BadSettings {
    std::string settings;
    int tops;
    std::vector<std::string> message_parts;
  };
  const BadSettings cases[] = {
      {"shape { dim: 1 } data_filler { } data_filler { }", 3, {"2 data_filler", "3 tops"}},
      {"shape { dim: 1 } shape { dim: 2 }", 3, {"2 'shape'", "3 tops"}},
      {"shape { dim: 1 } num: 1 channels: 1 height: 1 width: 1", 1, {"both shape"}},
      {"num: 1 channels: 1 height: 1", 1, {"'width'"}},
      {"shape { dim: 1 } data_filler { type: 'no_such_filler' }",
       1,
       {"data_filler", "no_such_filler"}},
  };
  for (const BadSettings& bad : cases) {
    SCOPED_TRACE(bad.settings);
    Blob a, b, c;
    const BlobVec tops = bad.tops == 3 ? BlobVec{&a, &b, &c} : BlobVec{&a};
    auto layer = dummy_data(bad.settings);
    std::vector<std::string> message_parts = bad.message_parts;
    message_parts.push_back("layer 'dummy' (DummyData)");
    expect_setup_error(*layer, {}, tops, message_parts);
  }
}

}  // namespace
}  // namespace xtrain
