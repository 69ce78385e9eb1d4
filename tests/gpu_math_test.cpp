// --gpu_math (xtrain/gpu_math.hpp): fp32 by default, tf32 on request, and
// the setting reaches cuBLAS; the CPU computes the same either way.
#include "xtrain/gpu_math.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "device_test_support.hpp"
#include "xtrain/error.hpp"
#include "xtrain/random.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/cuda_context.hpp"
#endif

namespace xtrain {
namespace {

class ScopedGpuMath {
 public:
  explicit ScopedGpuMath(GpuMath math) { set_gpu_math(math); }
  ~ScopedGpuMath() { set_gpu_math(GpuMath::kFp32); }
};

TEST(GpuMath, DefaultsToFp32AndParsesTheFlagSpellings) {
  EXPECT_EQ(gpu_math(), GpuMath::kFp32);
  EXPECT_EQ(parse_gpu_math("fp32"), GpuMath::kFp32);
  EXPECT_EQ(parse_gpu_math("tf32"), GpuMath::kTf32);
  EXPECT_EQ(to_string(GpuMath::kTf32), "tf32");
  EXPECT_EQ(to_string(GpuMath::kFp32), "fp32");
  try {
    parse_gpu_math("fp16");
    FAIL() << "fp16 accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("--gpu_math=fp16"), std::string::npos) << message;
    EXPECT_NE(message.find("'fp32'"), std::string::npos) << message;
    EXPECT_NE(message.find("'tf32'"), std::string::npos) << message;
  }
}

// An InnerProduct's output under each setting: identical on the CPU (the
// setting is the GPU libraries' only); on a GPU within TF32's rounding.
std::vector<float> inner_product_output(GpuMath math) {
  const ScopedGpuMath setting(math);
  LayerParameter param;
  param.set_name("ip");
  param.set_type("InnerProduct");
  param.mutable_inner_product_param()->set_num_output(64);
  param.mutable_inner_product_param()->mutable_weight_filler()->set_type("gaussian");
  Blob bottom({32, 256});
  Blob top;
  RandomStream random(7);
  random.uniform(bottom.count(), -1.0f, 1.0f, bottom.mutable_cpu_data());
  auto layer = testing::create_layer(param);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  return std::vector<float>(top.cpu_data(), top.cpu_data() + top.count());
}

XTRAIN_DEVICE_TEST(GpuMathResults, Tf32ChangesOnlyTheGpusRounding) {
  const std::vector<float> fp32 = inner_product_output(GpuMath::kFp32);
  const std::vector<float> tf32 = inner_product_output(GpuMath::kTf32);
  ASSERT_EQ(fp32.size(), tf32.size());
  const bool on_gpu = testing::current_device().is_gpu();
  for (std::size_t i = 0; i < fp32.size(); ++i) {
    if (on_gpu) {
      // 256 products of unit Gaussians, inputs rounded to 10 mantissa bits.
      EXPECT_NEAR(fp32[i], tf32[i], 0.05f + 2e-3f * std::abs(fp32[i])) << i;
    } else {
      EXPECT_EQ(fp32[i], tf32[i]) << i;
    }
  }
}

#ifdef XTRAIN_USE_CUDA
XTRAIN_GPU_TEST(GpuMath, TheCublasHandleFollowsTheSetting) {
  use_device(Device::gpu(0));
  cublasMath_t mode{};
  {
    const ScopedGpuMath tf32(GpuMath::kTf32);
    ASSERT_EQ(cublasGetMathMode(cuda::cublas_handle(), &mode), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(mode, CUBLAS_TF32_TENSOR_OP_MATH);
  }
  ASSERT_EQ(cublasGetMathMode(cuda::cublas_handle(), &mode), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mode, CUBLAS_DEFAULT_MATH);
}
#endif

}  // namespace
}  // namespace xtrain
