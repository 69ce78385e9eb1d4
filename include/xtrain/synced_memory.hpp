// One buffer with a host copy and (in CUDA builds) a device copy, kept in sync
// lazily: whichever side was written last is the head, and the other side is
// refreshed only when somebody reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "xtrain/export.hpp"

namespace xtrain {
namespace device_memory {
class StreamMarker;  // src/core/device_memory.hpp
}

// How the host copy orders a blob's values. kPlain is row-major over the
// blob's shape (NCHW for images), what every API user sees. A layer may keep
// a 4-axis activation channel-blocked (oneDNN's nChw16c or nChw8c: 16 or 8
// channels interleaved per pixel, see src/core/channel_blocked_layout.hpp) between
// layers that compute in it; the plain accessors convert back on demand.
enum class MemoryLayout { kPlain, kChannelBlocked };

// The blob geometry a channel-blocked host copy was written for.
struct XTRAIN_API BlockedGeometry {
  std::int64_t num = 0;
  std::int64_t channels = 0;  // a multiple of block
  std::int64_t spatial = 0;   // height * width
  int block = 0;              // channels per block: 8 or 16
};

class XTRAIN_API SyncedMemory {
 public:
  enum class Head { kUninitialized, kAtCpu, kAtGpu, kSynced };

  SyncedMemory() = default;
  explicit SyncedMemory(std::size_t size_bytes);
  ~SyncedMemory();
  SyncedMemory(const SyncedMemory&) = delete;
  SyncedMemory& operator=(const SyncedMemory&) = delete;

  // The host copy in the plain layout (converted in place if it was not).
  const void* cpu_data();
  void* mutable_cpu_data();
  // The device side throws xtrain::Error in a CPU-only build or without a GPU.
  const void* gpu_data();
  void* mutable_gpu_data();

  // Uses memory owned by somebody else as the host copy (not freed by us).
  void set_cpu_data(void* data);

  // The host copy in whatever layout it holds, unconverted: for layers that
  // compute in either layout (they check host_layout() first).
  const void* cpu_data_as_stored();
  void* mutable_cpu_data_as_stored();
  MemoryLayout host_layout() const { return layout_; }
  const BlockedGeometry& blocked_geometry() const { return blocked_; }
  // Converts the host copy in place to `layout` (a no-op when it is there).
  // `geometry` describes the values when converting to kChannelBlocked.
  void convert_host(MemoryLayout layout, const BlockedGeometry& geometry = {});
  // Declares that the caller is about to overwrite the host copy in
  // `layout`: nothing is converted. Returns the host pointer.
  void* overwrite_host_as(MemoryLayout layout, const BlockedGeometry& geometry = {});

  Head head() const { return head_; }
  // The host copy's address without touching anything (null before it has
  // one): storage may be a view into a shared arena (set_cpu_data), so
  // counting bytes goes by address, not by object.
  const void* host_pointer() const { return cpu_ptr_; }
  // The device the device copy is on (-1 before it has one).
  int gpu_device() const { return gpu_device_; }
  std::size_t size() const { return size_; }

  // How many host buffers all SyncedMemorys have allocated so far in this
  // process: tests check that a net's steady-state iterations allocate none.
  static std::size_t host_allocation_count();
  // How many host copies convert_host has rearranged so far: layers that
  // compute channel-blocked pass their arrays on without any, so a count that
  // grows in a net's steady state points at a layout boundary worth a look.
  static std::size_t layout_conversion_count();

 private:
  void* allocate_host_copy();
  // Before the host copy is written or freed: waits until an upload still
  // reading it (to_gpu from page-locked memory does not wait) has done so.
  void finish_upload();
  void to_cpu();
  void to_gpu();
  void free_cpu();
  void free_gpu();

  void* cpu_ptr_ = nullptr;
  void* gpu_ptr_ = nullptr;
  std::size_t size_ = 0;
  Head head_ = Head::kUninitialized;
  bool owns_cpu_data_ = false;
  bool cpu_pinned_ = false;  // page-locked (a GPU is in use), freed accordingly
  int gpu_device_ = -1;
  MemoryLayout layout_ = MemoryLayout::kPlain;  // of the host copy; the device's is plain
  BlockedGeometry blocked_;
  // Marks the end of the last asynchronous upload on its stream; the upload
  // may still be reading the host copy while upload_pending_.
  std::unique_ptr<device_memory::StreamMarker> upload_done_;
  bool upload_pending_ = false;
};

}  // namespace xtrain
