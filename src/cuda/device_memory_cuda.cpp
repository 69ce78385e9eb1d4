// Device memory for SyncedMemory through the CUDA runtime.
#include "core/device_memory.hpp"
#include "cuda/cuda_check.hpp"

namespace xtrain::device_memory {
namespace {
// Runs the copy on `device` and restores the caller's current device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    XTRAIN_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device >= 0 && device != previous_) XTRAIN_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};
}  // namespace

void* allocate(std::size_t size, int* device) {
  XTRAIN_CUDA_CHECK(cudaGetDevice(device));
  void* ptr = nullptr;
  if (size > 0) XTRAIN_CUDA_CHECK(cudaMalloc(&ptr, size));
  return ptr;
}

void free(void* ptr, int device) {
  DeviceGuard guard(device);
  cudaFree(ptr);  // never throws from a destructor path
}

void zero(void* ptr, std::size_t size, int device) {
  DeviceGuard guard(device);
  if (size > 0) XTRAIN_CUDA_CHECK(cudaMemset(ptr, 0, size));
}

void copy_to_host(void* host, const void* device_ptr, std::size_t size, int device) {
  DeviceGuard guard(device);
  if (size > 0) XTRAIN_CUDA_CHECK(cudaMemcpy(host, device_ptr, size, cudaMemcpyDeviceToHost));
}

void copy_to_device(void* device_ptr, const void* host, std::size_t size, int device) {
  DeviceGuard guard(device);
  if (size > 0) XTRAIN_CUDA_CHECK(cudaMemcpy(device_ptr, host, size, cudaMemcpyHostToDevice));
}

}  // namespace xtrain::device_memory
