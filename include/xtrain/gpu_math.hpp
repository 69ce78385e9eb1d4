// How the GPU libraries multiply float32 numbers (the `xtrain` tool sets it
// from --gpu_math; logged at start). Compiled into every build, so the flag
// parses the same way in a CPU-only build, where nothing reads it.
//
//   kFp32: IEEE float32 multiply-adds everywhere: cuBLAS's default math and
//          cuDNN's FMA math type. Caffe's numbers; the default.
//   kTf32: tensor cores on TF32 inputs (a float32 rounded to 10 mantissa
//          bits, products summed in float32) for cuBLAS's GEMMs and cuDNN's
//          convolutions, on Ampere (sm_80) and later GPUs; older ones
//          compute in float32 either way. Faster for large layers; results
//          differ from fp32 from about the third significant digit, which
//          training tolerates but bit-for-bit comparisons with Caffe do not.
// Read when a cuBLAS handle is used and when a convolution chooses its
// algorithms, so a change applies to the GEMMs and shapes set up after it.
#pragma once

#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

enum class GpuMath { kFp32, kTf32 };
XTRAIN_API void set_gpu_math(GpuMath math);
XTRAIN_API GpuMath gpu_math();

// "fp32" / "tf32" (the flag's spelling); parse throws xtrain::Error for
// anything else, naming the choices.
XTRAIN_API std::string to_string(GpuMath math);
XTRAIN_API GpuMath parse_gpu_math(const std::string& text);

}  // namespace xtrain
