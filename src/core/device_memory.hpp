// Memory primitives behind SyncedMemory. The CUDA build implements them in
// src/cuda/device_memory_cuda.cpp; the CPU-only build in
// device_memory_none.cpp, where host memory is plain aligned memory and every
// device call explains that there is no GPU.
#pragma once

#include <cstddef>

namespace xtrain::device_memory {

// Device memory on the current device, through its caching allocator (no
// cudaMalloc/cudaFree in a training loop's steady state); *device receives
// the device's ordinal. free never throws.
void* allocate(std::size_t size, int* device);
void free(void* ptr, int device) noexcept;
// A full GPU on demand, for the tests and the GPU check: the next `count`
// allocations on `device` find it full and take the out-of-memory path
// (drain this thread's sums in flight, release the cache, retry:
// CachingAllocator::inject_out_of_memory). cache_releases counts the blocks
// the device's cache has handed back to cudaFree so far.
void inject_out_of_memory(int device, int count);
std::size_t cache_releases(int device);
// On the calling thread's stream. zero returns at once; copy_to_host and
// copy_to_device return when the data is there (the host reads it, or may
// overwrite its buffer at once).
void zero(void* ptr, std::size_t size, int device);
void copy_to_host(void* host, const void* device_ptr, std::size_t size, int device);
void copy_to_device(void* device_ptr, const void* host, std::size_t size, int device);
// Queues the copy on the calling thread's stream and returns at once: the
// host buffer, which must be page-locked (allocate_host with *pinned true),
// is read while later work is being queued. The caller records a
// StreamMarker after it and waits for that on the host (wait_on_host) before
// it writes or frees the buffer. Work queued later on the same stream sees
// the data; another thread's stream waits with make_this_thread_wait.
void copy_to_device_async(void* device_ptr, const void* pinned_host, std::size_t size,
                          int device);

// Host buffers, 64-byte aligned. Once a GPU is in use in this process
// (use_device in include/xtrain/device.hpp) they are page-locked ("pinned"),
// which lets transfers run at full bus speed and asynchronously; *pinned says
// which kind it is, for free_host.
void* allocate_host(std::size_t size, bool* pinned);
void free_host(void* ptr, bool pinned) noexcept;

// Orders GPU work between threads, and the host after it: record(device)
// marks the current point of the calling thread's stream on GPU `device`;
// make_this_thread_wait() makes the calling thread's stream on that GPU
// (another thread's, usually) wait until that point has run, without
// blocking the host; wait_on_host() blocks the calling thread until it has
// run. The device is named, not taken from the thread's current one: what a
// marker orders (a blob's upload) was queued on the blob's GPU, and a thread
// may have switched to another since (the Python API, one thread driving
// nets on two GPUs), where a marker would order nothing -- or its event,
// made on one GPU, could not be recorded on another's stream. A marker
// belongs to the GPU of its first record(); recording it for another is
// refused with an error. Before the first record() there is nothing to wait
// for. No-ops in a CPU-only build.
class StreamMarker {
 public:
  StreamMarker() = default;
  ~StreamMarker();
  StreamMarker(const StreamMarker&) = delete;
  StreamMarker& operator=(const StreamMarker&) = delete;

  void record(int device);
  void make_this_thread_wait() const;
  void wait_on_host() const;

 private:
  void* event_ = nullptr;  // a cudaEvent_t, created at the first record()
  int device_ = -1;
};

}  // namespace xtrain::device_memory
