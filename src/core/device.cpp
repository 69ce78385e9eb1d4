#include "xtrain/device.hpp"

#include "xtrain/error.hpp"

namespace xtrain {

std::string Device::to_string() const { return is_gpu() ? "GPU " + std::to_string(id) : "CPU"; }

bool cuda_compiled_in() {
#ifdef XTRAIN_USE_CUDA
  return true;
#else
  return false;
#endif
}

#ifndef XTRAIN_USE_CUDA
std::string cuda_library_versions() { return ""; }

int cuda_device_count(std::string* why_none) {
  if (why_none) *why_none = "this xtrain was built without CUDA (CPU-only build)";
  return 0;
}

std::string cuda_device_description(int) {
  throw Error("this xtrain was built without CUDA (CPU-only build): there is no GPU to query");
}

void use_device(const Device& device) {
  XTRAIN_CHECK(!device.is_gpu(), device.to_string(),
               " was asked for, but this xtrain was built without CUDA (CPU-only build); run on "
               "the CPU (solver_mode: CPU, no --gpu) or rebuild with the CUDA toolkit installed");
}

GpuMemoryStatistics gpu_memory_statistics(int) { return {}; }

void synchronize(const Device&) {}
#endif

}  // namespace xtrain
