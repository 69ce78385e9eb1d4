// A cache of device memory blocks in front of a slow allocator (cudaMalloc /
// cudaFree synchronise the whole device and cost tens of microseconds to
// milliseconds): freed blocks are kept and handed out again for requests of
// the same size class, so a training loop's steady state never reaches the
// backend. The logic is device-independent; the CUDA build plugs in cudaMalloc
// (src/cuda/device_memory_cuda.cpp), and the tests a host backend.
//
// Streams: a block freed by one thread may still be in use by kernels queued
// on that thread's stream. Each cached block remembers the freeing thread's
// stream (an opaque tag); a request from a different stream waits for that
// stream first (Backend::wait), one from the same stream reuses it at once,
// since the stream runs its work in order. A null tag means "unknown stream"
// (freed by a thread without one); the backend then waits for the whole
// device. A stream that ends hands its blocks over with forget_stream once
// its work has finished.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace xtrain {

class CachingAllocator {
 public:
  struct Backend {
    // Returns nullptr when the device is out of memory.
    std::function<void*(std::size_t)> allocate;
    std::function<void(void*)> release;
    // Waits until the work queued on stream `tag` (null: on every stream of
    // the device) has finished.
    std::function<void(const void* tag)> wait;
    // Waits for the calling thread's work that releasing the cache must not
    // wait on blindly (gradient sums in flight: core/thread_device_work.hpp);
    // returns how many drains ran. May throw xtrain::Error. Optional.
    std::function<int()> drain;
    // "GPU 0": names the device in errors.
    std::string device_name;
  };

  struct Statistics {
    std::size_t in_use_bytes = 0;  // handed out, not yet freed (rounded sizes)
    std::size_t cached_bytes = 0;  // freed, kept for reuse
    std::size_t peak_in_use_bytes = 0;
    std::size_t backend_allocations = 0;  // calls that reached the backend
    std::size_t backend_releases = 0;
    std::size_t cache_hits = 0;
  };

  explicit CachingAllocator(Backend backend);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `size` bytes for work on stream `stream_tag`. When
  // the backend is out of memory, the calling thread's pending work is
  // drained (Backend::drain), the cache released and the request retried
  // once; then xtrain::Error says how much was asked and held, and for which
  // layer (core/thread_device_work.hpp).
  void* allocate(std::size_t size, const void* stream_tag);
  // Keeps the block for reuse. Never throws (called from destructors).
  void free(void* ptr, const void* stream_tag) noexcept;
  // Hands every cached block back to the backend.
  void release_cached();
  // The stream `stream_tag` is finished and about to be destroyed: its cached
  // blocks need no waiting any more (and its tag may be reused by a new one).
  void forget_stream(const void* stream_tag);
  Statistics statistics() const;
  // A full device, on demand (the tests, gpu_check.sh): each of the next
  // `count` allocations skips the cache and finds the backend full, so it
  // drains, releases the cache and retries, as when the device is full.
  void inject_out_of_memory(int count);

  // The size class of a request: multiples of 512 bytes up to 1 MiB, of
  // 1 MiB above (coarser classes for large blocks: shapes change less).
  static std::size_t size_class(std::size_t size);

 private:
  struct CachedBlock {
    void* ptr;
    const void* stream_tag;
  };
  void* take_cached(std::size_t rounded, const void* stream_tag);
  void wait_for(const void* stream_tag);
  // The tag of blocks whose stream has finished: reused without waiting.
  static const void* idle_stream();
  void release_cached_locked();
  [[noreturn]] void out_of_memory(std::size_t rounded, std::size_t released, int drained) const;

  Backend backend_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, CachedBlock> cached_;  // by size class
  std::unordered_map<void*, std::size_t> in_use_;   // ptr -> size class
  Statistics statistics_;
  int injected_out_of_memory_ = 0;
};

}  // namespace xtrain
