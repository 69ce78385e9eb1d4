// Fillers: each one's values checked against its definition (exactly where
// the definition is exact, by moments over many draws where it is random).
#include "xtrain/filler.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "proto_text.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

FillerParameter filler(const std::string& text) { return testing::parse<FillerParameter>(text); }

struct Moments {
  double mean = 0;
  double stddev = 0;
  float min = 1e30f;
  float max = -1e30f;
};

Moments moments(const Blob& blob) {
  Moments m;
  const float* data = blob.cpu_data();
  double sum = 0;
  double sum_sq = 0;
  for (std::size_t i = 0; i < blob.count(); ++i) {
    sum += data[i];
    sum_sq += static_cast<double>(data[i]) * data[i];
    m.min = std::min(m.min, data[i]);
    m.max = std::max(m.max, data[i]);
  }
  m.mean = sum / blob.count();
  m.stddev = std::sqrt(sum_sq / blob.count() - m.mean * m.mean);
  return m;
}

TEST(Filler, ConstantIsTheValue) {
  Blob blob({2, 3, 4});
  RandomStream random(1);
  make_filler(filler("type: 'constant' value: 2.5"))->fill(blob, random);
  for (std::size_t i = 0; i < blob.count(); ++i) EXPECT_EQ(blob.cpu_data()[i], 2.5f);
}

TEST(Filler, UniformStaysInRangeWithTheRightMean) {
  Blob blob({100, 100});
  RandomStream random(1);
  make_filler(filler("type: 'uniform' min: -1 max: 3"))->fill(blob, random);
  const Moments m = moments(blob);
  EXPECT_GE(m.min, -1.0f);
  EXPECT_LE(m.max, 3.0f);
  EXPECT_NEAR(m.mean, 1.0, 0.05);
  EXPECT_NEAR(m.stddev, 4.0 / std::sqrt(12.0), 0.05);
}

TEST(Filler, GaussianHasItsMeanAndStd) {
  Blob blob({100, 100});
  RandomStream random(1);
  make_filler(filler("type: 'gaussian' mean: 1 std: 0.5"))->fill(blob, random);
  const Moments m = moments(blob);
  EXPECT_NEAR(m.mean, 1.0, 0.02);
  EXPECT_NEAR(m.stddev, 0.5, 0.02);
}

TEST(Filler, SparseGaussianKeepsSparseOverOutputsOfTheWeights) {
  // 200 outputs, sparse 20: each weight is kept with probability 0.1.
  Blob blob({200, 100});
  RandomStream random(1);
  make_filler(filler("type: 'gaussian' std: 1 sparse: 20"))->fill(blob, random);
  std::size_t non_zero = 0;
  for (std::size_t i = 0; i < blob.count(); ++i) non_zero += blob.cpu_data()[i] != 0.0f;
  EXPECT_NEAR(static_cast<double>(non_zero) / blob.count(), 0.1, 0.01);
}

TEST(Filler, XavierUsesFanInFanOutOrTheirAverage) {
  // fan_in = count / shape(0) = 3*5*5 = 75, fan_out = count / shape(1) = 20*25 = 500.
  for (const auto& [norm, n] : {std::pair<std::string, double>{"FAN_IN", 75.0},
                                {"FAN_OUT", 500.0},
                                {"AVERAGE", 287.5}}) {
    Blob blob({20, 3, 5, 5});
    RandomStream random(3);
    make_filler(filler("type: 'xavier' variance_norm: " + norm))->fill(blob, random);
    const double bound = std::sqrt(3.0 / n);
    const Moments m = moments(blob);
    EXPECT_GE(m.min, -bound) << norm;
    EXPECT_LE(m.max, bound) << norm;
    EXPECT_GT(m.max, 0.9 * bound) << norm;  // the whole range is used
    EXPECT_NEAR(m.stddev, bound / std::sqrt(3.0), 0.1 * bound) << norm;
  }
}

TEST(Filler, MsraHasStdSqrtTwoOverN) {
  Blob blob({64, 16, 3, 3});  // fan_in = 144
  RandomStream random(5);
  make_filler(filler("type: 'msra'"))->fill(blob, random);
  const Moments m = moments(blob);
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(m.stddev, std::sqrt(2.0 / 144.0), 0.005);
}

TEST(Filler, PositiveUnitballRowsSumToOne) {
  Blob blob({5, 2, 3});
  RandomStream random(7);
  make_filler(filler("type: 'positive_unitball'"))->fill(blob, random);
  for (int row = 0; row < 5; ++row) {
    double sum = 0;
    for (int j = 0; j < 6; ++j) {
      const float value = blob.cpu_data()[row * 6 + j];
      EXPECT_GE(value, 0.0f);
      sum += value;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST(Filler, BilinearIsTheUpsamplingKernel) {
  // Kernel 4 (factor 2): centre c = (2*2 - 1 - 0) / 4 = 0.75, taps along one
  // axis (1 - |x/2 - 0.75|) = 0.25, 0.75, 0.75, 0.25.
  Blob blob({1, 1, 4, 4});
  RandomStream random(1);
  make_filler(filler("type: 'bilinear'"))->fill(blob, random);
  const float taps[] = {0.25f, 0.75f, 0.75f, 0.25f};
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(blob.cpu_data()[y * 4 + x], taps[y] * taps[x]);
  }
}

TEST(Filler, SameSeedSameValues) {
  Blob a({10, 10});
  Blob b({10, 10});
  RandomStream ra(42);
  RandomStream rb(42);
  make_filler(filler("type: 'xavier'"))->fill(a, ra);
  make_filler(filler("type: 'xavier'"))->fill(b, rb);
  for (std::size_t i = 0; i < a.count(); ++i) EXPECT_EQ(a.cpu_data()[i], b.cpu_data()[i]);
}

TEST(Filler, UnknownTypeAndMisusedSparseAreErrors) {
  EXPECT_THROW(make_filler(filler("type: 'gausian'")), Error);
  EXPECT_THROW(make_filler(filler("type: 'xavier' sparse: 3")), Error);
  try {
    make_filler(filler("type: 'gausian'"));
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("gaussian"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace xtrain
