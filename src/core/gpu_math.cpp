#include "xtrain/gpu_math.hpp"

#include <atomic>

#include "core/flag_spellings.hpp"

namespace xtrain {
namespace {
// An atomic: solver threads (one per GPU) read it while they compute.
std::atomic<GpuMath> math_mode{GpuMath::kFp32};

constexpr ChoiceSpelling<GpuMath> kMathSpellings[] = {{GpuMath::kFp32, "fp32"},
                                                      {GpuMath::kTf32, "tf32"}};
}  // namespace

void set_gpu_math(GpuMath math) { math_mode = math; }

GpuMath gpu_math() { return math_mode; }

std::string to_string(GpuMath math) { return spelling_of(kMathSpellings, math); }

GpuMath parse_gpu_math(const std::string& text) {
  return parse_spelling(kMathSpellings, text, "--gpu_math",
                        " is not a math mode; use 'fp32' (IEEE float32, Caffe's numbers, "
                        "the default) or 'tf32' (tensor cores on Ampere and later GPUs)");
}

}  // namespace xtrain
