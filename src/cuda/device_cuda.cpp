// Counting GPUs. With no driver or no device the runtime answers with an
// error (cudaErrorInsufficientDriver / cudaErrorNoDevice); that is "no GPU",
// reported as a reason, not a crash.
#include <cuda_runtime_api.h>

#include <sstream>

#include "xtrain/device.hpp"
#include "xtrain/error.hpp"

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

std::string cuda_device_description(int id) {
  std::string why_none;
  const int count = cuda_device_count(&why_none);
  XTRAIN_CHECK(count > 0, why_none);
  XTRAIN_CHECK(id >= 0 && id < count, "GPU ", id, " does not exist (", count, " visible)");
  cudaDeviceProp prop{};
  const cudaError_t status = cudaGetDeviceProperties(&prop, id);
  XTRAIN_CHECK(status == cudaSuccess, "cannot query GPU ", id, ": ", cudaGetErrorString(status));
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  // An exclusive-process GPU (as LSF sets them) may be taken by another job.
  int compute_mode = 0;
  cudaDeviceGetAttribute(&compute_mode, cudaDevAttrComputeMode, id);
  std::ostringstream out;
  out << "Device id:                     " << id << "\n"
      << "Name:                          " << prop.name << "\n"
      << "Compute capability:            " << prop.major << "." << prop.minor << "\n"
      << "Total global memory:           " << prop.totalGlobalMem << "\n"
      << "Multiprocessors:               " << prop.multiProcessorCount << "\n"
      << "Compute mode:                  " << compute_mode << "\n"
      << "Driver version:                " << driver << "\n"
      << "Runtime version:               " << runtime << "\n";
  return out.str();
}

}  // namespace xtrain
