#include "core/caching_allocator.hpp"

#include <sstream>
#include <utility>

#include "core/thread_device_work.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {
constexpr std::size_t kSmallGranule = 512;
constexpr std::size_t kLargeGranule = std::size_t{1} << 20;

std::size_t round_up(std::size_t size, std::size_t granule) {
  return (size + granule - 1) / granule * granule;
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }
}  // namespace

const void* CachingAllocator::idle_stream() {
  static const char idle = 0;
  return &idle;
}

void CachingAllocator::wait_for(const void* stream_tag) {
  if (stream_tag != idle_stream() && backend_.wait) backend_.wait(stream_tag);
}

CachingAllocator::CachingAllocator(Backend backend) : backend_(std::move(backend)) {}

// Cached blocks are not returned here: a process-wide allocator is destroyed
// at exit, when the CUDA driver may already be gone.
CachingAllocator::~CachingAllocator() = default;

std::size_t CachingAllocator::size_class(std::size_t size) {
  if (size == 0) return kSmallGranule;
  return size <= kLargeGranule ? round_up(size, kSmallGranule) : round_up(size, kLargeGranule);
}

void* CachingAllocator::take_cached(std::size_t rounded, const void* stream_tag) {
  // Exact size class only: a larger block would waste the difference for as
  // long as this allocation lives (a net's blobs live for the whole run).
  auto [first, last] = cached_.equal_range(rounded);
  if (first == last) return nullptr;
  auto chosen = first;
  for (auto it = first; it != last; ++it) {
    if (it->second.stream_tag == stream_tag) {
      chosen = it;
      break;
    }
  }
  const CachedBlock block = chosen->second;
  cached_.erase(chosen);
  if (block.stream_tag != stream_tag || stream_tag == nullptr) wait_for(block.stream_tag);
  statistics_.cached_bytes -= rounded;
  ++statistics_.cache_hits;
  return block.ptr;
}

void* CachingAllocator::allocate(std::size_t size, const void* stream_tag) {
  const std::size_t rounded = size_class(size);
  std::unique_lock<std::mutex> lock(mutex_);
  const bool injected = injected_out_of_memory_ > 0;
  if (injected) --injected_out_of_memory_;
  void* ptr = injected ? nullptr : take_cached(rounded, stream_tag);
  if (!ptr) {
    ptr = injected ? nullptr : backend_.allocate(rounded);
    std::size_t released = 0;
    int drained = 0;
    if (!ptr && (injected || !cached_.empty())) {
      // Releasing the cache (cudaFree) waits for everything on the device:
      // first wait, with a timeout, for what this thread has in flight
      // (gradient sums spinning until the other replicas join them). Without
      // the lock: the drain may take long, and other threads may free.
      if (backend_.drain) {
        lock.unlock();
        drained = backend_.drain();
        lock.lock();
        if (!injected) ptr = take_cached(rounded, stream_tag);  // freed meanwhile?
      }
      if (!ptr) {
        released = statistics_.cached_bytes;
        release_cached_locked();
        ptr = backend_.allocate(rounded);
      }
    }
    if (!ptr) out_of_memory(rounded, released, drained);
    ++statistics_.backend_allocations;
  }
  in_use_.emplace(ptr, rounded);
  statistics_.in_use_bytes += rounded;
  if (statistics_.in_use_bytes > statistics_.peak_in_use_bytes) {
    statistics_.peak_in_use_bytes = statistics_.in_use_bytes;
  }
  return ptr;
}

void CachingAllocator::out_of_memory(std::size_t rounded, std::size_t released,
                                     int drained) const {
  std::ostringstream what;
  what << "out of memory on " << backend_.device_name << " allocating " << mib(rounded)
       << " MiB";
  const std::string layer = running_layer();
  if (!layer.empty()) what << " for " << layer;
  what << " (" << mib(statistics_.in_use_bytes) << " MiB in use by this process";
  if (released > 0) what << "; " << mib(released) << " MiB of cached blocks released first";
  if (drained > 0) what << ", after the gradient sums in flight had finished";
  what << "); reduce the batch_size, or use a GPU with more free memory (nvidia-smi shows what "
          "else runs on it)";
  throw Error(what.str());
}

void CachingAllocator::free(void* ptr, const void* stream_tag) noexcept {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = in_use_.find(ptr);
  XTRAIN_ASSERT(it != in_use_.end());
  const std::size_t rounded = it->second;
  in_use_.erase(it);
  statistics_.in_use_bytes -= rounded;
  statistics_.cached_bytes += rounded;
  cached_.emplace(rounded, CachedBlock{ptr, stream_tag});
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (const auto& [rounded, block] : cached_) {
    wait_for(block.stream_tag);
    backend_.release(block.ptr);
    ++statistics_.backend_releases;
  }
  cached_.clear();
  statistics_.cached_bytes = 0;
}

void CachingAllocator::forget_stream(const void* stream_tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [rounded, block] : cached_) {
    if (block.stream_tag == stream_tag) block.stream_tag = idle_stream();
  }
}

void CachingAllocator::inject_out_of_memory(int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  injected_out_of_memory_ = count;
}

CachingAllocator::Statistics CachingAllocator::statistics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return statistics_;
}

}  // namespace xtrain
