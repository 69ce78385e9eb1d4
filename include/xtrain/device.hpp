// Where a layer or a net computes: the CPU, or one GPU.
#pragma once

#include <cstddef>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

struct XTRAIN_API Device {
  enum class Type { kCpu, kGpu };
  Type type = Type::kCpu;
  int id = 0;  // the CUDA device ordinal for kGpu

  static Device cpu() { return Device{}; }
  static Device gpu(int id) { return Device{Type::kGpu, id}; }
  bool is_gpu() const { return type == Type::kGpu; }
  std::string to_string() const;
};

// Whether this build has the CUDA backend compiled in.
XTRAIN_API bool cuda_compiled_in();

// "CUDA runtime 13.0, cuDNN 9.19.0, cuBLAS 13.1.0, NCCL 2.28.7": the GPU
// libraries this build uses (empty in a CPU-only build). Needs no GPU.
XTRAIN_API std::string cuda_library_versions();

// Number of usable CUDA devices; 0 in a CPU-only build or with no driver/GPU.
// `why_none` (if given) receives the reason when the count is 0.
XTRAIN_API int cuda_device_count(std::string* why_none = nullptr);

// Name, memory, compute capability, driver and runtime versions of GPU `id`,
// one property per line. Throws xtrain::Error if there is no such GPU.
XTRAIN_API std::string cuda_device_description(int id);

// Makes `device` the calling thread's device. For a GPU: selects it and
// checks that it can be used, so that a missing GPU, or one in exclusive-
// process mode that another job holds (as LSF and Slurm often configure
// them), is an xtrain::Error naming the GPU and the cause, not a crash later.
// From then on host buffers are page-locked for fast transfers. Every thread
// that runs GPU work calls it (Net does for its thread; data layers for their
// prefetch threads). A no-op for the CPU.
XTRAIN_API void use_device(const Device& device);

// Waits until the GPU work this thread queued has finished (kernels run
// asynchronously): for timing, and before reading results by other means
// than a blob's cpu_data(), which waits by itself. A no-op for the CPU.
XTRAIN_API void synchronize(const Device& device);

// The caching device allocator's view of one GPU (all zero without CUDA).
struct XTRAIN_API GpuMemoryStatistics {
  std::size_t in_use_bytes = 0;
  std::size_t cached_bytes = 0;
  std::size_t peak_in_use_bytes = 0;
  std::size_t device_allocations = 0;  // cudaMalloc calls so far
};
XTRAIN_API GpuMemoryStatistics gpu_memory_statistics(int id);

}  // namespace xtrain
