// Device-memory primitives behind SyncedMemory. The CUDA build implements
// them in src/cuda/device_memory_cuda.cpp; the CPU-only build in
// device_memory_none.cpp, where every call explains that there is no GPU.
#pragma once

#include <cstddef>

namespace xtrain::device_memory {

// Allocates on the current device and stores its ordinal in *device.
void* allocate(std::size_t size, int* device);
void free(void* ptr, int device);
void zero(void* ptr, std::size_t size, int device);
void copy_to_host(void* host, const void* device_ptr, std::size_t size, int device);
void copy_to_device(void* device_ptr, const void* host, std::size_t size, int device);

}  // namespace xtrain::device_memory
