// The fast LRN kernels against the reference ones (lrn_kernels.hpp): scale,
// power, output and input gradient, for both normalisation regions, on
// shapes with fewer channels than the window, planes split into several
// pixel blocks (the last one partial), one image, more threads than work,
// and betas that take the square-root and the pow() paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <vector>

#include "layers/lrn_kernels.hpp"
#include "xtrain/cpu_threads.hpp"

namespace xtrain {
namespace {

struct LrnCase {
  LrnShape shape;
  LrnParameters lrn;
};

std::ostream& operator<<(std::ostream& out, const LrnCase& c) {
  return out << c.shape.num << "x" << c.shape.channels << "x" << c.shape.height << "x"
             << c.shape.width << " size " << c.lrn.size << " alpha " << c.lrn.alpha << " beta "
             << c.lrn.beta << " k " << c.lrn.k
             << (c.lrn.across_channels ? " ACROSS_CHANNELS" : " WITHIN_CHANNEL");
}

std::vector<float> random_values(std::size_t count, float low, float high, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(engine);
  return values;
}

// Within 1e-6 relative (the kernels do the same operations in the same
// order, so in practice they agree to the bit).
void expect_close(const std::vector<float>& fast, const std::vector<float>& reference,
                  const char* what, const LrnCase& c) {
  ASSERT_EQ(fast.size(), reference.size());
  for (std::size_t i = 0; i < fast.size(); ++i) {
    const float tolerance = 1e-6f * std::max(1.0f, std::fabs(reference[i]));
    ASSERT_NEAR(fast[i], reference[i], tolerance) << what << " at " << i << " (" << c << ")";
  }
}

void expect_lrn_matches(const LrnCase& c, std::uint32_t seed) {
  const std::size_t count =
      static_cast<std::size_t>(c.shape.num) * c.shape.channels * c.shape.height * c.shape.width;
  // Inputs up to 3 in size, so that alpha * sum of squares moves the scale.
  const std::vector<float> input = random_values(count, -3.0f, 3.0f, seed);
  const std::vector<float> top_diff = random_values(count, -1.0f, 1.0f, seed + 1);

  std::vector<float> scale_ref(count), power_ref(count), out_ref(count);
  std::vector<float> out_fast(count, 7.0f);
  lrn_forward_reference(c.lrn, c.shape, input.data(), scale_ref.data(), power_ref.data(),
                        out_ref.data());
  lrn_forward(c.lrn, c.shape, input.data(), out_fast.data());
  expect_close(out_fast, out_ref, "output", c);

  std::vector<float> diff_ref(count), diff_fast(count, 7.0f);
  lrn_backward_reference(c.lrn, c.shape, input.data(), out_ref.data(), top_diff.data(),
                         scale_ref.data(), power_ref.data(), diff_ref.data());
  // The fast kernel recomputes scale and power from the input: it must get
  // the reference's.
  lrn_backward(c.lrn, c.shape, input.data(), out_ref.data(), top_diff.data(), diff_fast.data());
  expect_close(diff_fast, diff_ref, "input diff", c);
  // Recomputed scales are forward's to the bit: the results are the
  // reference's exactly (== treats the two zeros alike).
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(out_fast[i] == out_ref[i]) << "output at " << i << " (" << c << ")";
    ASSERT_TRUE(diff_fast[i] == diff_ref[i]) << "input diff at " << i << " (" << c << ")";
  }
}

LrnCase across(LrnShape shape, int size, float alpha, float beta, float k) {
  return {shape, {size, alpha, beta, k, true}};
}
LrnCase within(LrnShape shape, int size, float alpha, float beta) {
  return {shape, {size, alpha, beta, 1.0f, false}};
}

TEST(LrnFastPath, AcrossChannelsMatchesReference) {
  const LrnCase cases[] = {
      across({4, 96, 27, 27}, 5, 1e-4f, 0.75f, 1.0f),  // AlexNet norm2-like: 729 = 2 blocks + 217
      across({2, 7, 5, 9}, 5, 2.0f, 0.75f, 1.0f),      // odd sizes, one partial block
      across({1, 3, 1, 1}, 5, 1.5f, 0.75f, 2.0f),      // fewer channels than the window, batch 1
      across({2, 16, 17, 31}, 3, 0.5f, 0.6f, 1.5f),    // pow() path, 527 pixels
      across({3, 9, 4, 4}, 1, 0.9f, 0.75f, 1.0f),      // window of one channel
      across({1, 12, 6, 7}, 9, 3.0f, 1.25f, 0.5f),     // wide window
      across({1, 4, 16, 16}, 11, 1.0f, 0.75f, 1.0f),   // window wider than the channels
  };
  std::uint32_t seed = 1;
  for (const LrnCase& c : cases) {
    expect_lrn_matches(c, seed += 2);
    if (HasFatalFailure()) return;
  }
}

TEST(LrnFastPath, WithinChannelMatchesReference) {
  const LrnCase cases[] = {
      within({2, 5, 13, 11}, 3, 2.0f, 0.75f), within({1, 3, 9, 17}, 5, 1.0f, 0.6f),
      within({3, 8, 28, 28}, 5, 1e-2f, 0.75f),
      within({1, 1, 2, 3}, 7, 1.0f, 0.75f),  // window wider than the plane
  };
  std::uint32_t seed = 50;
  for (const LrnCase& c : cases) {
    expect_lrn_matches(c, seed += 2);
    if (HasFatalFailure()) return;
  }
}

TEST(LrnFastPath, MatchesReferenceWithMoreThreadsThanWork) {
  set_cpu_threads(5);
  const LrnCase cases[] = {
      across({1, 64, 20, 20}, 5, 1e-2f, 0.75f, 1.0f),  // 2 pixel blocks, 5 threads
      across({3, 128, 16, 16}, 5, 1e-2f, 0.75f, 1.0f),
      within({1, 3, 40, 40}, 3, 1.0f, 0.75f),
  };
  std::uint32_t seed = 90;
  for (const LrnCase& c : cases) {
    expect_lrn_matches(c, seed += 2);
    if (HasFatalFailure()) break;
  }
  set_cpu_threads(0);
}

}  // namespace
}  // namespace xtrain
