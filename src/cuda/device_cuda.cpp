// Counting GPUs. With no driver or no device the runtime answers with an
// error (cudaErrorInsufficientDriver / cudaErrorNoDevice); that is "no GPU",
// reported as a reason, not a crash.
#include <cuda_runtime_api.h>

#include "xtrain/device.hpp"

namespace xtrain {

int cuda_device_count(std::string* why_none) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why_none) *why_none = std::string("no usable GPU: ") + cudaGetErrorString(status);
    return 0;
  }
  if (count == 0 && why_none) *why_none = "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
  return count;
}

}  // namespace xtrain
