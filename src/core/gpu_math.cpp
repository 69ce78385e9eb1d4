#include "xtrain/gpu_math.hpp"

#include <atomic>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {
// An atomic: solver threads (one per GPU) read it while they compute.
std::atomic<GpuMath> math_mode{GpuMath::kFp32};
}  // namespace

void set_gpu_math(GpuMath math) { math_mode = math; }

GpuMath gpu_math() { return math_mode; }

std::string to_string(GpuMath math) { return math == GpuMath::kTf32 ? "tf32" : "fp32"; }

GpuMath parse_gpu_math(const std::string& text) {
  if (text == "fp32") return GpuMath::kFp32;
  if (text == "tf32") return GpuMath::kTf32;
  throw Error(detail::concat("--gpu_math=", text,
                             " is not a math mode; use 'fp32' (IEEE float32, Caffe's numbers, "
                             "the default) or 'tf32' (tensor cores on Ampere and later GPUs)"));
}

}  // namespace xtrain
