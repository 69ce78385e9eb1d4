// The instruction-set dispatch of xtrain's own kernels (core/cpu_isa.hpp):
// XTRAIN_MAX_CPU_ISA's values, the cap never raising the level above what
// the CPU has, and the channel block width following oneDNN's level.
#include "core/cpu_isa.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "blocked_layout_test_support.hpp"
#include "core/channel_blocked_layout.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

TEST(CpuIsaCap, ParsesTheAcceptedNames) {
  EXPECT_EQ(parse_cpu_isa_cap(nullptr), std::nullopt);
  EXPECT_EQ(parse_cpu_isa_cap(""), std::nullopt);
  EXPECT_EQ(parse_cpu_isa_cap("avx2"), CpuIsa::kAvx2);
  EXPECT_EQ(parse_cpu_isa_cap("AVX2"), CpuIsa::kAvx2);  // as ONEDNN_MAX_CPU_ISA spells it
  EXPECT_EQ(parse_cpu_isa_cap("avx512"), CpuIsa::kAvx512);
  EXPECT_EQ(parse_cpu_isa_cap("Avx512"), CpuIsa::kAvx512);
}

TEST(CpuIsaCap, AnUnknownValueNamesTheAcceptedOnes) {
  for (const char* wrong : {"sse41", "avx", "avx512_core", "avx2 ", "native"}) {
    try {
      parse_cpu_isa_cap(wrong);
      ADD_FAILURE() << "'" << wrong << "' was accepted";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("XTRAIN_MAX_CPU_ISA='" + std::string(wrong) + "'"), std::string::npos)
          << message;
      EXPECT_NE(message.find("avx2 or avx512"), std::string::npos) << message;
    }
  }
}

TEST(CpuIsaCap, LowersButNeverRaises) {
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAvx512, std::nullopt), CpuIsa::kAvx512);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAvx512, CpuIsa::kAvx2), CpuIsa::kAvx2);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAvx512, CpuIsa::kAvx512), CpuIsa::kAvx512);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAvx2, CpuIsa::kAvx512), CpuIsa::kAvx2);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kBaseline, CpuIsa::kAvx2), CpuIsa::kBaseline);
}

TEST(CpuIsaCap, NamesEveryLevel) {
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kBaseline), "baseline");
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kAvx2), "avx2");
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kAvx512), "avx512");
}

// This process's level: the CPU's, capped by the variable it was started
// with (the suite runs natively and with XTRAIN_MAX_CPU_ISA=avx2).
TEST(CpuIsaCap, TheProcessLevelIsTheCappedDetectedOne) {
  const CpuIsa expected =
      capped_cpu_isa(detected_cpu_isa(), parse_cpu_isa_cap(std::getenv("XTRAIN_MAX_CPU_ISA")));
  EXPECT_EQ(cpu_isa(), expected);
  EXPECT_NE(cpu_isa_summary().find(cpu_isa_name(expected)), std::string::npos) << cpu_isa_summary();
}

TEST(CpuIsaCap, TheTestCapLowersTheLevelForAScope) {
  const CpuIsa before = cpu_isa();
  {
    testing::ScopedCpuIsaCap cap(CpuIsa::kBaseline);
    EXPECT_EQ(cpu_isa(), CpuIsa::kBaseline);
  }
  {
    testing::ScopedCpuIsaCap cap(CpuIsa::kAvx512);  // never above the process's level
    EXPECT_EQ(cpu_isa(), before);
  }
  EXPECT_EQ(cpu_isa(), before);
}

// 16 channels per block where oneDNN computes at AVX-512, 8 below: the
// layout oneDNN's convolutions use, so they need no reorders.
TEST(ChannelBlockWidth, FollowsOnednnsLevel) {
  EXPECT_EQ(channel_block(), onednn_cpu_isa() == CpuIsa::kAvx512 ? 16 : 8);
  {
    testing::ScopedChannelBlock forced(8);
    EXPECT_EQ(channel_block(), 8);
  }
  {
    testing::ScopedChannelBlock forced(16);
    EXPECT_EQ(channel_block(), 16);
  }
  EXPECT_EQ(channel_block(), onednn_cpu_isa() == CpuIsa::kAvx512 ? 16 : 8);
}

// One variable caps both: with XTRAIN_MAX_CPU_ISA=avx2 and no
// ONEDNN_MAX_CPU_ISA of its own, oneDNN runs at AVX2 too.
TEST(ChannelBlockWidth, XtrainCapAlsoCapsOnednn) {
  const std::optional<CpuIsa> cap = parse_cpu_isa_cap(std::getenv("XTRAIN_MAX_CPU_ISA"));
  if (!cap || std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) {
    GTEST_SKIP() << "run with XTRAIN_MAX_CPU_ISA set and ONEDNN_MAX_CPU_ISA unset";
  }
  EXPECT_LE(onednn_cpu_isa(), *cap);
}

TEST(ChannelBlockWidth, TheStartUpLineNamesTheLevelAndWidth) {
  const std::string summary = cpu_thread_summary();
  EXPECT_NE(summary.find(std::string("xtrain kernels: ") + cpu_isa_name(cpu_isa())),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("channel blocks of " + std::to_string(channel_block())), std::string::npos)
      << summary;
}

}  // namespace
}  // namespace xtrain
