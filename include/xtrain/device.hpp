// Where a layer or a net computes: the CPU, or one GPU.
#pragma once

#include <string>

namespace xtrain {

struct Device {
  enum class Type { kCpu, kGpu };
  Type type = Type::kCpu;
  int id = 0;  // the CUDA device ordinal for kGpu

  static Device cpu() { return Device{}; }
  static Device gpu(int id) { return Device{Type::kGpu, id}; }
  bool is_gpu() const { return type == Type::kGpu; }
  std::string to_string() const;
};

// Whether this build has the CUDA backend compiled in.
bool cuda_compiled_in();

// Number of usable CUDA devices; 0 in a CPU-only build or with no driver/GPU.
// `why_none` (if given) receives the reason when the count is 0.
int cuda_device_count(std::string* why_none = nullptr);

// Name, memory, compute capability, driver and runtime versions of GPU `id`,
// one property per line. Throws xtrain::Error if there is no such GPU.
std::string cuda_device_description(int id);

}  // namespace xtrain
