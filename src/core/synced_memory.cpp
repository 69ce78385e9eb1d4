#include "xtrain/synced_memory.hpp"

#include <atomic>
#include <cstring>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "core/device_memory.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {
std::atomic<std::size_t> host_allocations{0};
std::atomic<std::size_t> layout_conversions{0};
}  // namespace

void* SyncedMemory::allocate_host_copy() {
  if (size_ == 0) return nullptr;
  host_allocations.fetch_add(1, std::memory_order_relaxed);
  return device_memory::allocate_host(size_, &cpu_pinned_);
}

SyncedMemory::SyncedMemory(std::size_t size_bytes) : size_(size_bytes) {}

std::size_t SyncedMemory::host_allocation_count() {
  return host_allocations.load(std::memory_order_relaxed);
}

std::size_t SyncedMemory::layout_conversion_count() {
  return layout_conversions.load(std::memory_order_relaxed);
}

SyncedMemory::~SyncedMemory() {
  free_cpu();
  free_gpu();
}

void SyncedMemory::finish_upload() {
  if (!upload_pending_) return;
  upload_done_->wait_on_host();
  upload_pending_ = false;
}

void SyncedMemory::free_cpu() {
  finish_upload();
  if (cpu_ptr_ && owns_cpu_data_) device_memory::free_host(cpu_ptr_, cpu_pinned_);
  cpu_ptr_ = nullptr;
  owns_cpu_data_ = false;
}

void SyncedMemory::free_gpu() {
  if (gpu_ptr_) device_memory::free(gpu_ptr_, gpu_device_);
  gpu_ptr_ = nullptr;
}

void SyncedMemory::to_cpu() {
  switch (head_) {
    case Head::kUninitialized:
      cpu_ptr_ = allocate_host_copy();
      owns_cpu_data_ = true;
      if (cpu_ptr_) std::memset(cpu_ptr_, 0, size_);
      head_ = Head::kAtCpu;
      break;
    case Head::kAtGpu:
      if (!cpu_ptr_) {
        cpu_ptr_ = allocate_host_copy();
        owns_cpu_data_ = true;
      }
      finish_upload();  // an earlier upload on another thread's stream
      device_memory::copy_to_host(cpu_ptr_, gpu_ptr_, size_, gpu_device_);
      head_ = Head::kSynced;
      break;
    case Head::kAtCpu:
    case Head::kSynced:
      break;
  }
}

void SyncedMemory::to_gpu() {
  if (head_ == Head::kAtCpu) convert_host(MemoryLayout::kPlain);
  switch (head_) {
    case Head::kUninitialized:
      gpu_ptr_ = device_memory::allocate(size_, &gpu_device_);
      device_memory::zero(gpu_ptr_, size_, gpu_device_);
      head_ = Head::kAtGpu;
      break;
    case Head::kAtCpu:
      if (!gpu_ptr_) gpu_ptr_ = device_memory::allocate(size_, &gpu_device_);
      if (cpu_pinned_ && owns_cpu_data_) {
        // The stream runs on while the copy reads the page-locked host copy;
        // the next host write waits for it (finish_upload).
        device_memory::copy_to_device_async(gpu_ptr_, cpu_ptr_, size_, gpu_device_);
        if (!upload_done_) upload_done_ = std::make_unique<device_memory::StreamMarker>();
        upload_done_->record(gpu_device_);
        upload_pending_ = true;
      } else {
        // Pageable memory (given by set_cpu_data, or pinning failed): the
        // runtime copies it synchronously anyway.
        device_memory::copy_to_device(gpu_ptr_, cpu_ptr_, size_, gpu_device_);
      }
      head_ = Head::kSynced;
      break;
    case Head::kAtGpu:
    case Head::kSynced:
      break;
  }
}

const void* SyncedMemory::cpu_data() {
  convert_host(MemoryLayout::kPlain);
  return cpu_data_as_stored();
}

void* SyncedMemory::mutable_cpu_data() {
  convert_host(MemoryLayout::kPlain);
  return mutable_cpu_data_as_stored();
}

const void* SyncedMemory::cpu_data_as_stored() {
  to_cpu();
  return cpu_ptr_;
}

void* SyncedMemory::mutable_cpu_data_as_stored() {
  to_cpu();
  finish_upload();
  head_ = Head::kAtCpu;
  return cpu_ptr_;
}

void SyncedMemory::convert_host(MemoryLayout layout, const BlockedGeometry& geometry) {
  if (layout == layout_) return;
  // Zeros read the same in every layout.
  if (head_ == Head::kUninitialized) {
    overwrite_host_as(layout, geometry);
    return;
  }
  // A device copy is always plain; a blocked host copy is always the head.
  XTRAIN_ASSERT(head_ != Head::kAtGpu || layout_ == MemoryLayout::kPlain);
  to_cpu();
  finish_upload();
  const BlockedGeometry& g = layout == MemoryLayout::kChannelBlocked ? geometry : blocked_;
  const ChannelBlockedShape shape{g.num, g.channels, g.spatial, g.block};
  XTRAIN_ASSERT(shape.block > 0 && shape.channels % shape.block == 0 &&
                shape.count() * sizeof(float) <= size_);
  // Off the hot path (layers that compute blocked ask for it directly), so
  // a scratch copy per thread is good enough.
  layout_conversions.fetch_add(1, std::memory_order_relaxed);
  thread_local std::vector<float> scratch;
  scratch.resize(shape.count());
  float* host = static_cast<float*>(cpu_ptr_);
  std::memcpy(scratch.data(), host, shape.count() * sizeof(float));
  if (layout == MemoryLayout::kChannelBlocked) {
    plain_to_channel_blocked(shape, scratch.data(), host);
  } else {
    channel_blocked_to_plain(shape, scratch.data(), host);
  }
  layout_ = layout;
  blocked_ = geometry;
  head_ = Head::kAtCpu;
}

void* SyncedMemory::overwrite_host_as(MemoryLayout layout, const BlockedGeometry& geometry) {
  void* host = mutable_cpu_data_as_stored();
  layout_ = layout;
  blocked_ = layout == MemoryLayout::kChannelBlocked ? geometry : BlockedGeometry{};
  return host;
}

const void* SyncedMemory::gpu_data() {
  to_gpu();
  return gpu_ptr_;
}

void* SyncedMemory::mutable_gpu_data() {
  to_gpu();
  head_ = Head::kAtGpu;
  return gpu_ptr_;
}

void SyncedMemory::set_cpu_data(void* data) {
  XTRAIN_ASSERT(data != nullptr);
  free_cpu();
  cpu_ptr_ = data;
  owns_cpu_data_ = false;
  head_ = Head::kAtCpu;
  layout_ = MemoryLayout::kPlain;
}

}  // namespace xtrain
