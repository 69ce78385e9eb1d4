// Runs an elementwise functor where the arrays live: the CPU loops of
// ops::apply_cpu / ops::for_each_cpu, or the CUDA kernels declared in
// cuda/device_apply_kernels.hpp. One definition of each step, two devices.
// Blob::update and the solvers' updates (solvers/update_ops.hpp) use it.
//
// A functor used on a GPU needs its kernel instantiated by the module that
// owns it: core's in src/cuda/device_apply_kernels.cu, the solvers' in
// src/solvers/update_kernels.cu; one left out is a link error, not a silent
// fallback.
#pragma once

#include <cstddef>

#include "core/elementwise_ops.hpp"
#include "core/for_each_cpu.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/device_apply_kernels.hpp"
#endif

namespace xtrain::ops {

template <typename Op, typename... Inputs>
void apply_on(const Device& device, std::size_t n, const Op& op, float* out, const Inputs*... in) {
#ifdef XTRAIN_USE_CUDA
  if (device.is_gpu()) {
    cuda::apply(n, op, out, in...);
    return;
  }
#endif
  (void)device;
  apply_cpu(n, op, out, in...);
}

template <typename Op, typename... Arrays>
void for_each_on(const Device& device, std::size_t n, const Op& op, Arrays*... arrays) {
#ifdef XTRAIN_USE_CUDA
  if (device.is_gpu()) {
    cuda::for_each(n, op, arrays...);
    return;
  }
#endif
  (void)device;
  for_each_cpu(n, op, arrays...);
}

// A blob's arrays on `device` (the GPU copies are brought up to date).
inline const float* data_on(const Device& device, const Blob& blob) {
  return device.is_gpu() ? blob.gpu_data() : blob.cpu_data();
}
inline float* mutable_data_on(const Device& device, Blob& blob) {
  return device.is_gpu() ? blob.mutable_gpu_data() : blob.mutable_cpu_data();
}
inline const float* diff_on(const Device& device, const Blob& blob) {
  return device.is_gpu() ? blob.gpu_diff() : blob.cpu_diff();
}
inline float* mutable_diff_on(const Device& device, Blob& blob) {
  return device.is_gpu() ? blob.mutable_gpu_diff() : blob.mutable_cpu_diff();
}

}  // namespace xtrain::ops
