// Every computing layer in bf16 and in fp16 against the same layer in fp32
// (xtrain/precision.hpp), over the cases of the cross-device harness: the
// same weights and the same inputs, as stored in the type (a 16-bit layer
// reads what a 16-bit layer before it wrote). Tops, bottom gradients and
// parameter gradients must agree within a multiple of the type's epsilon,
// measured against each blob's largest magnitude.
//
// This is the gradient check of the 16-bit layers: their fp32 counterparts
// are checked by finite differences (each layer's own test), and a finite
// difference of 16-bit outputs would drown in their rounding (a step of 1e-2
// against bf16's relative rounding of 2^-9 leaves ~20% noise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/number_rounding.hpp"
#include "cross_device_harness.hpp"
#include "device_test_support.hpp"
#include "xtrain/precision.hpp"

namespace xtrain {
namespace {

using testing::CrossDeviceCase;
using testing::CrossDeviceDifference;

// The type's machine epsilon: the gap between 1 and the next value.
double epsilon(NumberType type) {
  return type == NumberType::kBfloat16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -10);
}

// Rounds what a 16-bit layer before this one would have stored: values
// drawn from a range (not labels, boxes or given constants).
void store_bottoms_in(NumberType type, const CrossDeviceCase& c, testing::detail::LayerRun& run) {
  for (std::size_t i = 0; i < c.bottoms.size(); ++i) {
    if (c.bottoms[i].classes > 0 || !c.bottoms[i].values.empty() || !c.bottoms[i].gradient) {
      continue;
    }
    Blob& bottom = *run.bottoms[i];
    round_in_place(Device::cpu(), type, bottom.mutable_cpu_data(), bottom.count());
  }
}

// max |x - y| over the blob's largest magnitude: a 16-bit operand's error is
// relative to the terms it enters, not to a result they cancel down to, so
// the blob's scale is what an element's difference is measured against.
void compare_normwise(const std::string& what, const Blob& x, const Blob& y, bool diff,
                      CrossDeviceDifference& difference) {
  const float* a = diff ? x.cpu_diff() : x.cpu_data();
  const float* b = diff ? y.cpu_diff() : y.cpu_data();
  double scale = 0;
  for (std::size_t i = 0; i < x.count(); ++i) {
    scale = std::max(
        {scale, std::fabs(static_cast<double>(a[i])), std::fabs(static_cast<double>(b[i]))});
  }
  if (scale == 0) return;
  for (std::size_t i = 0; i < x.count(); ++i) {
    if (a[i] == b[i]) continue;
    const double relative = std::isfinite(a[i]) && std::isfinite(b[i])
                                ? std::fabs(static_cast<double>(a[i]) - b[i]) / scale
                                : std::numeric_limits<double>::infinity();
    if (relative > difference.largest) {
      difference.largest = relative;
      difference.where = what + " element " + std::to_string(i) + ": " + std::to_string(a[i]) +
                         " vs " + std::to_string(b[i]) + " (largest magnitude " +
                         std::to_string(scale) + ")";
    }
  }
}

CrossDeviceDifference compare_with_fp32(const CrossDeviceCase& c, NumberType type) {
  using namespace testing::detail;
  LayerRun fp32 = set_up_on(c, Device::cpu());
  if (c.prepare) c.prepare(*fp32.layer);
  LayerRun reduced = set_up_on(c, Device::cpu(), LayerPrecision::uniform(type));
  for (std::size_t i = 0; i < fp32.layer->blobs().size(); ++i) {
    const Blob& from = *fp32.layer->blobs()[i];
    Blob& to = *reduced.layer->blobs()[i];
    to.reshape_like(from);
    std::copy(from.cpu_data(), from.cpu_data() + from.count(), to.mutable_cpu_data());
  }
  store_bottoms_in(type, c, fp32);
  store_bottoms_in(type, c, reduced);
  std::vector<bool> propagate_down;
  for (const testing::BottomSpec& spec : c.bottoms) {
    propagate_down.push_back(c.backward && spec.gradient);
  }
  forward_and_backward(fp32, c, propagate_down);
  forward_and_backward(reduced, c, propagate_down);

  CrossDeviceDifference difference;
  for (std::size_t t = 0; t < fp32.tops.size(); ++t) {
    compare_normwise("top " + std::to_string(t), *fp32.tops[t], *reduced.tops[t], false,
                     difference);
  }
  for (std::size_t i = 0; i < fp32.bottoms.size(); ++i) {
    if (!propagate_down[i]) continue;
    compare_normwise("bottom diff " + std::to_string(i), *fp32.bottoms[i], *reduced.bottoms[i],
                     true, difference);
  }
  for (std::size_t i = 0; i < fp32.layer->blobs().size(); ++i) {
    const std::string name = "learnable blob " + std::to_string(i);
    compare_normwise(name + " data", *fp32.layer->blobs()[i], *reduced.layer->blobs()[i], false,
                     difference);
    if (c.backward && fp32.layer->param_propagate_down(static_cast<int>(i))) {
      compare_normwise(name + " diff", *fp32.layer->blobs()[i], *reduced.layer->blobs()[i], true,
                       difference);
    }
  }
  return difference;
}

// How many epsilons of difference a layer may show. Measured on every case
// (2026-12-07): all within 0.6 of bf16's or fp16's epsilon of the blob's
// scale but the recurrent layers, whose error builds up over the time steps
// (up to 1.2). Storing a result costs half an epsilon; so the bound leaves
// room for one more rounding of an input or weight, and no more.
double allowed_epsilons(const CrossDeviceCase& c) {
  const std::string type = testing::layer_param_from(c.prototxt).type();
  return type == "LSTM" || type == "RNN" ? 3 : 1.5;
}

class PrecisionLayerTest : public ::testing::TestWithParam<CrossDeviceCase> {};

TEST_P(PrecisionLayerTest, AgreesWithFp32WithinTheTypesEpsilon) {
  const CrossDeviceCase& c = GetParam();
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    const CrossDeviceDifference difference = compare_with_fp32(c, type);
    const double allowed = allowed_epsilons(c) * epsilon(type);
    EXPECT_LE(difference.largest, allowed)
        << number_type_name(type) << ": " << difference.largest / epsilon(type) << " epsilons, at "
        << difference.where;
  }
}

// The GPU computes a 16-bit layer as the CPU does: the same rounding
// functors, and the products on the same rounded operands (in fp32 on the
// GPU for now), so the difference is the fp32 cross-device one plus, where
// a sum rounds the other way, one step of the type. Runs on every GPU
// instance (and fails there without a GPU under XTRAIN_REQUIRE_GPU=1); on
// the CPU it compares the CPU with itself, which must agree exactly.
class PrecisionCrossDeviceTest : public testing::DeviceTestWithParam<CrossDeviceCase> {};

TEST_P(PrecisionCrossDeviceTest, SixteenBitLayersMatchTheCpu) {
  const CrossDeviceCase& c = GetParam();
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    const CrossDeviceDifference difference = testing::compare_across_devices(
        c, Device::cpu(), testing::current_device(), nullptr, LayerPrecision::uniform(type));
    if (testing::current_device().is_gpu()) {
      EXPECT_LE(difference.largest, std::max<double>(c.tolerance, 2 * epsilon(type)))
          << number_type_name(type) << ", " << difference.where;
    } else {
      EXPECT_EQ(difference.largest, 0.0) << number_type_name(type) << ", " << difference.where;
    }
  }
}

XTRAIN_INSTANTIATE_ON_DEVICES(PrecisionCrossDeviceTest,
                              ::testing::ValuesIn(testing::every_cross_device_case()),
                              [](const ::testing::TestParamInfo<CrossDeviceCase>& param_info) {
                                return param_info.param.name;
                              });

INSTANTIATE_TEST_SUITE_P(EveryLayer, PrecisionLayerTest,
                         ::testing::ValuesIn(testing::every_cross_device_case()),
                         [](const ::testing::TestParamInfo<CrossDeviceCase>& param_info) {
                           return param_info.param.name;
                         });

// A 16-bit Convolution or InnerProduct multiplies its operands rounded to
// the type and accumulates in fp32 (oneDNN's bf16 kernels where the CPU has
// them, fp32 products of rounded copies elsewhere): with its top kept in fp32
// it computes what an fp32 layer computes from the rounded weights and
// inputs, up to the order of the sums, and clearly not what it computes from
// the unrounded ones.
TEST(MatrixLayersIn16Bits, MultiplyTheOperandsRoundedToTheType) {
  const std::string layers[] = {
      "name: 'c' type: 'Convolution' convolution_param { num_output: 16 kernel_size: 3 pad: 1 "
      "weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' std: 0.1 } }",
      "name: 'i' type: 'InnerProduct' inner_product_param { num_output: 24 "
      "weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' std: 0.1 } }"};
  for (const std::string& prototxt : layers) {
    for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
      SCOPED_TRACE(prototxt.substr(0, 30) + " " + number_type_name(type));
      CrossDeviceCase c;
      c.name = "m";
      c.prototxt = prototxt;
      c.bottoms = {testing::uniform({4, 16, 6, 6})};
      using namespace testing::detail;
      LayerRun reference = set_up_on(c, Device::cpu());
      LayerRun reduced = set_up_on(c, Device::cpu(), LayerPrecision::uniform(type));
      reduced.layer->set_top_storage({NumberType::kFloat32});
      for (std::size_t i = 0; i < reference.layer->blobs().size(); ++i) {
        Blob& weights = *reference.layer->blobs()[i];
        std::copy_n(weights.cpu_data(), weights.count(),
                    reduced.layer->blobs()[i]->mutable_cpu_data());
      }
      // The reference multiplies rounded weights (the bias is added in fp32
      // by both) and a rounded input.
      Blob& reference_weights = *reference.layer->blobs()[0];
      round_in_place(Device::cpu(), type, reference_weights.mutable_cpu_data(),
                     reference_weights.count());
      store_bottoms_in(type, c, reference);
      reduced.layer->forward(reduced.bottom_vec(), reduced.top_vec());
      reference.layer->forward(reference.bottom_vec(), reference.top_vec());
      CrossDeviceDifference sums;
      compare_normwise("top", *reference.tops[0], *reduced.tops[0], false, sums);
      EXPECT_LE(sums.largest, 1e-5) << sums.where;

      // Against unrounded operands the difference is of the type's epsilon.
      LayerRun unrounded = set_up_on(c, Device::cpu());
      for (std::size_t i = 0; i < unrounded.layer->blobs().size(); ++i) {
        Blob& weights = *unrounded.layer->blobs()[i];
        std::copy_n(reduced.layer->blobs()[i]->cpu_data(), weights.count(),
                    weights.mutable_cpu_data());
      }
      unrounded.layer->forward(unrounded.bottom_vec(), unrounded.top_vec());
      CrossDeviceDifference rounding;
      compare_normwise("top", *unrounded.tops[0], *reduced.tops[0], false, rounding);
      EXPECT_GT(rounding.largest, 0.05 * epsilon(type)) << rounding.where;
    }
  }
}

}  // namespace
}  // namespace xtrain
