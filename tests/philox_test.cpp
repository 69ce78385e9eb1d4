// Philox4x32-10 against Random123's published known-answer vectors, the
// exact uniform conversions, the bit-exact ln / sin / cos of Box-Muller
// against libm, and the statistics of the uniform and normal draws.
#include "core/philox.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/box_muller.hpp"

namespace xtrain {
namespace {

// Random123's kat_vectors, "philox4x32 10" lines: counter, key, output.
struct KnownAnswer {
  Philox4x32Block counter;
  Philox4x32Key key;
  Philox4x32Block expected;
};

TEST(Philox4x32Test, MatchesRandom123KnownAnswerVectors) {
  const KnownAnswer answers[] = {
      {{{0x00000000, 0x00000000, 0x00000000, 0x00000000}},
       {{0x00000000, 0x00000000}},
       {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {{0xffffffff, 0xffffffff}},
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {{0xa4093822, 0x299f31d0}},
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const KnownAnswer& answer : answers) {
    const Philox4x32Block out = philox4x32_10(answer.counter, answer.key);
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(out.word[k], answer.expected.word[k])
          << std::hex << "word " << k << " for counter word 0 " << answer.counter.word[0];
    }
  }
}

TEST(Philox4x32Test, KeyFromSeedTakesTheLowWordFirst) {
  const Philox4x32Key key = philox_key(0x0123456789abcdefull);
  EXPECT_EQ(key.word[0], 0x89abcdefu);
  EXPECT_EQ(key.word[1], 0x01234567u);
}

TEST(Philox4x32Test, UniformConversionsAreExactAndInRange) {
  EXPECT_EQ(uniform_from_bits(0), 0.0f);
  EXPECT_EQ(uniform_from_bits(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(uniform_open_at_zero(0), 0x1p-24f);
  EXPECT_EQ(uniform_open_at_zero(0xffffffffu), 1.0f);
  for (std::uint32_t bits : {0x00000100u, 0x12345678u, 0x80000000u, 0xfffffeffu}) {
    EXPECT_EQ(uniform_from_bits(bits) * 16777216.0f, static_cast<float>(bits >> 8)) << bits;
    EXPECT_EQ(uniform_open_at_zero(bits) * 16777216.0f, static_cast<float>((bits >> 8) + 1))
        << bits;
  }
}

// n words from consecutive counters of one key.
std::vector<std::uint32_t> philox_words(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> words(n);
  const Philox4x32Key key = philox_key(seed);
  for (std::size_t block = 0; block * 4 < n; ++block) {
    const Philox4x32Block w =
        philox4x32_10(Philox4x32Block{{static_cast<std::uint32_t>(block), 0, 7, 0}}, key);
    for (std::size_t k = 0; k < 4 && block * 4 + k < n; ++k) words[block * 4 + k] = w.word[k];
  }
  return words;
}

TEST(Philox4x32Test, UniformDrawsHaveTheMomentsAndHistogramOfU01) {
  const std::size_t n = 1 << 20;
  const std::vector<std::uint32_t> words = philox_words(n, 42);
  constexpr int kBins = 64;
  std::vector<double> bins(kBins, 0.0);
  double sum = 0, sum_squares = 0;
  for (std::uint32_t w : words) {
    const double u = uniform_from_bits(w);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_squares += u * u;
    bins[static_cast<int>(u * kBins)] += 1;
  }
  const double mean = sum / n;
  const double variance = sum_squares / n - mean * mean;
  // Standard errors: sqrt(1/12 / n) = 2.8e-4 for the mean, ~8e-5 for the
  // variance; 5 of them.
  EXPECT_NEAR(mean, 0.5, 1.5e-3);
  EXPECT_NEAR(variance, 1.0 / 12.0, 4e-4);
  double chi_square = 0;
  const double expected = static_cast<double>(n) / kBins;
  for (double count : bins) chi_square += (count - expected) * (count - expected) / expected;
  // 63 degrees of freedom: mean 63, sd 11.2; 130 is p < 1e-6.
  EXPECT_LT(chi_square, 130.0);
  // Neighbouring words (the same block, and the next block) are uncorrelated.
  double lag_product = 0;
  for (std::size_t i = 1; i < n; ++i) {
    lag_product += (uniform_from_bits(words[i]) - 0.5) * (uniform_from_bits(words[i - 1]) - 0.5);
  }
  EXPECT_NEAR(lag_product / (n - 1) * 12.0, 0.0, 5e-3);
}

// |ln x - exact| in units of the last place of the exact value.
double ulps_off(float computed, double exact) {
  const double ulp = std::ldexp(1.0, std::ilogb(exact) - 23);
  return std::fabs(computed - exact) / ulp;
}

TEST(BoxMullerTest, LogIsWithinTwoUlpOnEveryUniform) {
  // Every u = k / 2^24 of the radius, then floats across the exponent range.
  double worst = 0;
  for (std::uint32_t k = 1; k < (1u << 24); ++k) {
    const float u = static_cast<float>(k) * 0x1p-24f;
    const double exact = std::log(static_cast<double>(u));
    if (exact == 0) continue;
    worst = std::max(worst, ulps_off(exact_float::log(u), exact));
  }
  for (float x = 1e-37f; x < 1e37f; x *= 1.37f) {
    const double exact = std::log(static_cast<double>(x));
    if (std::fabs(exact) < 1e-30) continue;
    worst = std::max(worst, ulps_off(exact_float::log(x), exact));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(exact_float::log(1.0f), 0.0f);
  EXPECT_EQ(exact_float::log(2.0f), static_cast<float>(std::log(2.0)));
}

TEST(BoxMullerTest, SineAndCosineOfTurnsAreWithin1e7) {
  double worst = 0;
  // Every 3rd turn of 2^24 (all 4 quarters, both folds), plus the quarter
  // and eighth points.
  for (std::uint32_t turn = 0; turn < (1u << 24); turn += 3) {
    const double angle = 2.0 * M_PI * turn / 16777216.0;
    const exact_float::SineCosine sc = exact_float::sincos_of_turn(turn);
    worst = std::max(worst, std::fabs(sc.sine - std::sin(angle)));
    worst = std::max(worst, std::fabs(sc.cosine - std::cos(angle)));
  }
  EXPECT_LE(worst, 1e-7);
  for (std::uint32_t quarter = 0; quarter < 4; ++quarter) {
    const exact_float::SineCosine sc = exact_float::sincos_of_turn(quarter << 22);
    const float expected_sine[] = {0, 1, 0, -1};
    const float expected_cosine[] = {1, 0, -1, 0};
    EXPECT_EQ(sc.cosine + 0.0f, expected_cosine[quarter] + 0.0f) << quarter;
    EXPECT_EQ(sc.sine + 0.0f, expected_sine[quarter] + 0.0f) << quarter;
  }
}

TEST(BoxMullerTest, RadiusAndAngleFollowTheDefinition) {
  for (std::uint32_t radius_bits : {0u, 0x00000100u, 0x7fffff00u, 0xffffffffu}) {
    for (std::uint32_t angle_bits : {0u, 0x20000000u, 0x5a5a5a5au, 0xffffffffu}) {
      const NormalPair z = box_muller(radius_bits, angle_bits);
      const double u = ((radius_bits >> 8) + 1) / 16777216.0;
      const double t = (angle_bits >> 8) / 16777216.0;
      const double radius = std::sqrt(-2.0 * std::log(u));
      EXPECT_NEAR(z.first, radius * std::cos(2 * M_PI * t), 2e-6 * (1 + radius));
      EXPECT_NEAR(z.second, radius * std::sin(2 * M_PI * t), 2e-6 * (1 + radius));
    }
  }
  // u = 1: radius 0; u = 2^-24: the largest radius, sqrt(48 ln 2).
  EXPECT_EQ(box_muller(0xffffffffu, 0x12345678u).first, 0.0f);
  EXPECT_NEAR(box_muller(0, 0).first, std::sqrt(48.0 * std::log(2.0)), 1e-5);
}

TEST(BoxMullerTest, NormalDrawsHaveTheMomentsAndQuantilesOfN01) {
  const std::size_t pairs = 1 << 19;
  const std::vector<std::uint32_t> words = philox_words(2 * pairs, 43);
  std::vector<double> z;
  z.reserve(2 * pairs);
  for (std::size_t p = 0; p < pairs; ++p) {
    const NormalPair pair = box_muller(words[2 * p], words[2 * p + 1]);
    z.push_back(pair.first);
    z.push_back(pair.second);
  }
  const double n = static_cast<double>(z.size());
  double sum = 0, squares = 0, cubes = 0, fourths = 0, cross = 0;
  std::size_t within_one = 0, beyond_two = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const double x = z[i];
    sum += x;
    squares += x * x;
    cubes += x * x * x;
    fourths += x * x * x * x;
    if (i % 2 == 1) cross += x * z[i - 1];
    within_one += std::fabs(x) < 1.0;
    beyond_two += std::fabs(x) > 2.0;
  }
  // Standard errors for n = 2^20: mean 1e-3, variance 1.4e-3, third moment
  // 2.4e-3, fourth 9.4e-3, the pair's correlation 1.4e-3, the fractions
  // 4.5e-4 and 2.1e-4; 5 of them.
  EXPECT_NEAR(sum / n, 0.0, 5e-3);
  EXPECT_NEAR(squares / n, 1.0, 7e-3);
  EXPECT_NEAR(cubes / n, 0.0, 1.2e-2);
  EXPECT_NEAR(fourths / n, 3.0, 5e-2);
  EXPECT_NEAR(cross / (n / 2), 0.0, 7e-3);
  EXPECT_NEAR(within_one / n, 0.682689, 2.3e-3);
  EXPECT_NEAR(beyond_two / n, 0.045500, 1.1e-3);
}

}  // namespace
}  // namespace xtrain
