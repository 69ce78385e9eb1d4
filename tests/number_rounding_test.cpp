// The one definition of "stored in bf16 / fp16" (core/number_rounding.hpp):
// hand-worked values at the edges of each type, and the CPU loops (F16C,
// AVX-512) against the functors that the CUDA kernels run, over every kind of
// float.
#include "core/number_rounding.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/cpu_isa.hpp"
#include "core/sixteen_bit_packing.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

float bf16(float x) { return ops::RoundToBfloat16{}(x); }
std::uint32_t bits_of(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}
float fp16(float x) { return ops::RoundToFloat16{}(x); }

TEST(RoundToBfloat16, KeepsEightSignificantBitsRoundingTiesToEven) {
  EXPECT_EQ(bf16(1.0f), 1.0f);
  EXPECT_EQ(bf16(-3.5f), -3.5f);
  // bf16 steps by 2^-7 just above 1.
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -7)), 1.0f + std::ldexp(1.0f, -7));
  // Half a step: the tie goes to the even neighbour, 1 (down) ...
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);
  // ... and from 1 + 2^-7 (odd) up to 1 + 2^-6.
  EXPECT_EQ(bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  // Just past the tie rounds up.
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(bf16(0.1f), 0.10009765625f);  // 0x3dcccccd -> 0x3dcd
  EXPECT_EQ(bf16(257.0f), 256.0f);        // integers above 256 are not all there
  EXPECT_EQ(bf16(255.0f), 255.0f);
  // fp32's range: tiny values stay, the largest floats round up to infinity.
  EXPECT_EQ(bits_of(bf16(1e-38f)), 0x006d0000u);  // a subnormal float: 0x006ce3ee rounded up
  EXPECT_TRUE(std::isinf(bf16(std::numeric_limits<float>::max())));
  EXPECT_EQ(bf16(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16(-0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(bf16(-0.0f)));
}

TEST(RoundToBfloat16, KeepsNanANanEvenWhenItsPayloadIsInTheDroppedBits) {
  std::uint32_t bits = 0x7f800001u;  // a nan whose only payload bit is cut away
  float nan;
  std::memcpy(&nan, &bits, sizeof nan);
  EXPECT_TRUE(std::isnan(bf16(nan)));
  EXPECT_TRUE(std::isnan(bf16(std::numeric_limits<float>::quiet_NaN())));
}

TEST(RoundToFloat16, KeepsElevenSignificantBitsAndFp16sRange) {
  EXPECT_EQ(fp16(1.0f), 1.0f);
  EXPECT_EQ(fp16(1.0f + std::ldexp(1.0f, -10)), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(fp16(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie to even
  EXPECT_EQ(fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(fp16(2049.0f), 2048.0f);
  EXPECT_EQ(fp16(2047.0f), 2047.0f);
  EXPECT_EQ(fp16(0.1f), 0.0999755859375f);
  // The largest half is 65504; 65519.99 rounds to it, 65520 (the tie, whose
  // even neighbour is infinity) and above overflow.
  EXPECT_EQ(fp16(65504.0f), 65504.0f);
  EXPECT_EQ(fp16(65519.99f), 65504.0f);
  EXPECT_EQ(fp16(65520.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16(-1e6f), -std::numeric_limits<float>::infinity());
  // Below 2^-14 the steps are 2^-24 (subnormals); half a step is a tie.
  EXPECT_EQ(fp16(std::ldexp(1.0f, -14)), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp16(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16(std::ldexp(1.0f, -25)), 0.0f);  // tie between 0 and 2^-24: 0 is even
  EXPECT_EQ(fp16(std::ldexp(1.5f, -24)), std::ldexp(2.0f, -24));
  EXPECT_EQ(fp16(std::ldexp(1.0f, -26)), 0.0f);
  EXPECT_EQ(fp16(std::ldexp(3.0f, -20)), std::ldexp(3.0f, -20));
  EXPECT_EQ(fp16(-std::ldexp(5.3f, -24)), -std::ldexp(5.0f, -24));
  EXPECT_TRUE(std::isnan(fp16(std::numeric_limits<float>::quiet_NaN())));
}

// Floats of every kind: random bit patterns (all exponents, nan and
// infinities among them), values around fp16's edges, and exact ties.
std::vector<float> floats_of_every_kind() {
  std::vector<float> values;
  RandomStream random(1234);
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(random.engine()());
    float x;
    std::memcpy(&x, &bits, sizeof x);
    values.push_back(x);
  }
  for (int e = -30; e <= 17; ++e) {
    for (int k = 0; k < 2000; ++k) {
      values.push_back(std::ldexp(1.0f + static_cast<float>(k) / 2000.0f, e));
      values.push_back(-std::ldexp(1.0f + static_cast<float>(k) / 2000.0f, e));
    }
  }
  for (int k = 0; k < 4096; ++k) {
    values.push_back(std::ldexp(static_cast<float>(2 * k + 1), -25));         // fp16 subnormal ties
    values.push_back(1.0f + std::ldexp(static_cast<float>(2 * k + 1), -12));  // fp16 ties
    values.push_back(1.0f + std::ldexp(static_cast<float>(2 * k + 1), -9));   // bf16 ties
  }
  return values;
}

void expect_same_bits(const std::vector<float>& expected, const std::vector<float>& actual,
                      const std::vector<float>& inputs) {
  ASSERT_EQ(expected.size(), actual.size());
  int mismatches = 0;
  for (std::size_t i = 0; i < expected.size() && mismatches < 5; ++i) {
    const bool both_nan = std::isnan(expected[i]) && std::isnan(actual[i]);
    if (both_nan || std::memcmp(&expected[i], &actual[i], sizeof(float)) == 0) continue;
    ++mismatches;
    ADD_FAILURE() << "input " << inputs[i] << " (element " << i << "): " << expected[i] << " vs "
                  << actual[i];
  }
}

// The CPU loop at each instruction set (F16C is used from AVX2 up) gives the
// functors' results bit for bit: the GPU runs the functors.
TEST(RoundInPlace, TheCpuLoopsGiveTheFunctorsResultsAtEveryInstructionSet) {
  const std::vector<float> inputs = floats_of_every_kind();
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    std::vector<float> expected(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      expected[i] = type == NumberType::kBfloat16 ? bf16(inputs[i]) : fp16(inputs[i]);
    }
    for (CpuIsa cap : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
      if (cap > detected_cpu_isa()) continue;
      SCOPED_TRACE(std::string(number_type_name(type)) + " at " + cpu_isa_name(cap));
      set_cpu_isa_cap_for_testing(cap);
      std::vector<float> rounded = inputs;
      round_in_place(Device::cpu(), type, rounded.data(), rounded.size());
      set_cpu_isa_cap_for_testing(std::nullopt);
      expect_same_bits(expected, rounded, inputs);
    }
  }
}

TEST(RoundInPlace, RoundingTwiceChangesNothingAndFp32IsLeftAlone) {
  std::vector<float> values = floats_of_every_kind();
  std::vector<float> once = values;
  round_in_place(Device::cpu(), NumberType::kFloat16, once.data(), once.size());
  std::vector<float> twice = once;
  round_in_place(Device::cpu(), NumberType::kFloat16, twice.data(), twice.size());
  expect_same_bits(once, twice, values);
  std::vector<float> untouched = values;
  round_in_place(Device::cpu(), NumberType::kFloat32, untouched.data(), untouched.size());
  expect_same_bits(values, untouched, values);
}

TEST(RoundInto, CopiesRounded) {
  const std::vector<float> in = {1.0f, 1.0f + std::ldexp(1.0f, -12), 70000.0f};
  std::vector<float> out(3, -1.0f);
  round_into(Device::cpu(), NumberType::kFloat16, in.data(), out.data(), in.size());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);  // below half of fp16's step of 2^-10 at 1
  EXPECT_TRUE(std::isinf(out[2]));
  EXPECT_EQ(in[2], 70000.0f);
}

// Packing holds a value of the type in 16 bits (core/sixteen_bit_packing.hpp):
// at every instruction set unpack(pack(x)) is x rounded, the functors'
// result bit for bit, and the packed bits are the portable reference's.
TEST(SixteenBitPacking, HoldsTheRoundedValueExactlyAtEveryInstructionSet) {
  const std::vector<float> inputs = floats_of_every_kind();
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    const bool is_bf16 = type == NumberType::kBfloat16;
    std::vector<float> expected(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      expected[i] = is_bf16 ? bf16(inputs[i]) : fp16(inputs[i]);
    }
    for (CpuIsa cap : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
      if (cap > detected_cpu_isa()) continue;
      SCOPED_TRACE(std::string(number_type_name(type)) + " at " + cpu_isa_name(cap));
      set_cpu_isa_cap_for_testing(cap);
      std::vector<std::uint16_t> packed(inputs.size());
      std::vector<float> unpacked(inputs.size());
      pack_to_16_bits(type, inputs.data(), packed.data(), inputs.size());
      unpack_16_bits(type, packed.data(), unpacked.data(), inputs.size());
      set_cpu_isa_cap_for_testing(std::nullopt);
      expect_same_bits(expected, unpacked, inputs);
      int mismatches = 0;
      for (std::size_t i = 0; i < inputs.size() && mismatches < 5; ++i) {
        if (std::isnan(inputs[i])) continue;  // nan payloads may differ
        const std::uint16_t reference =
            is_bf16 ? bfloat16_bits_of(inputs[i]) : float16_bits_of(inputs[i]);
        if (packed[i] == reference) continue;
        ++mismatches;
        ADD_FAILURE() << "input " << inputs[i] << ": bits " << packed[i] << ", expected "
                      << reference;
      }
    }
  }
}

// Every 16-bit pattern but a nan's is one value, which packs back to it.
TEST(SixteenBitPacking, EveryPatternButNansComesBackAsItWent) {
  std::vector<std::uint16_t> patterns(1 << 16);
  for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<std::uint16_t>(i);
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    for (CpuIsa cap : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
      if (cap > detected_cpu_isa()) continue;
      SCOPED_TRACE(std::string(number_type_name(type)) + " at " + cpu_isa_name(cap));
      set_cpu_isa_cap_for_testing(cap);
      std::vector<float> values(patterns.size());
      std::vector<std::uint16_t> again(patterns.size());
      unpack_16_bits(type, patterns.data(), values.data(), patterns.size());
      pack_to_16_bits(type, values.data(), again.data(), values.size());
      set_cpu_isa_cap_for_testing(std::nullopt);
      int mismatches = 0;
      for (std::size_t i = 0; i < patterns.size() && mismatches < 5; ++i) {
        if (std::isnan(values[i])) continue;
        const float portable = type == NumberType::kBfloat16
                                   ? float_of_bfloat16_bits(patterns[i])
                                   : float_of_float16_bits(patterns[i]);
        if (again[i] == patterns[i] && std::memcmp(&portable, &values[i], sizeof(float)) == 0) {
          continue;
        }
        ++mismatches;
        ADD_FAILURE() << "pattern " << i << ": value " << values[i] << " (portable " << portable
                      << ") packs to " << again[i];
      }
    }
  }
}

}  // namespace
}  // namespace xtrain
