// Runs a scope on one device and restores the caller's current device after.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"

namespace xtrain::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    XTRAIN_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device >= 0 && device != previous_) {
      XTRAIN_CUDA_CHECK(cudaSetDevice(device));
      switched_ = true;
    }
  }
  ~DeviceGuard() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace xtrain::cuda
