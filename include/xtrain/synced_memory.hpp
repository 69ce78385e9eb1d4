// One buffer with a host copy and (in CUDA builds) a device copy, kept in sync
// lazily: whichever side was written last is the head, and the other side is
// refreshed only when somebody reads it.
#pragma once

#include <cstddef>

namespace xtrain {

class SyncedMemory {
 public:
  enum class Head { kUninitialized, kAtCpu, kAtGpu, kSynced };

  SyncedMemory() = default;
  explicit SyncedMemory(std::size_t size_bytes);
  ~SyncedMemory();
  SyncedMemory(const SyncedMemory&) = delete;
  SyncedMemory& operator=(const SyncedMemory&) = delete;

  const void* cpu_data();
  void* mutable_cpu_data();
  // The device side throws xtrain::Error in a CPU-only build or without a GPU.
  const void* gpu_data();
  void* mutable_gpu_data();

  // Uses memory owned by somebody else as the host copy (not freed by us).
  void set_cpu_data(void* data);

  Head head() const { return head_; }
  std::size_t size() const { return size_; }

  // How many host buffers all SyncedMemorys have allocated so far in this
  // process: tests check that a net's steady-state iterations allocate none.
  static std::size_t host_allocation_count();

 private:
  void to_cpu();
  void to_gpu();
  void free_cpu();
  void free_gpu();

  void* cpu_ptr_ = nullptr;
  void* gpu_ptr_ = nullptr;
  std::size_t size_ = 0;
  Head head_ = Head::kUninitialized;
  bool owns_cpu_data_ = false;
  int gpu_device_ = -1;
};

}  // namespace xtrain
