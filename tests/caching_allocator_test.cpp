// The caching device allocator's logic, with a host backend standing in for
// cudaMalloc/cudaFree/cudaStreamSynchronize: size classes, reuse without
// reaching the backend, waiting for another stream before reuse, releasing
// the cache when the device is full, and a clear error when it stays full.
#include "core/caching_allocator.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// A pretend device of `capacity` bytes that records what it was asked.
struct FakeDevice {
  std::size_t capacity = std::size_t{1} << 30;
  std::size_t used = 0;
  int allocations = 0;
  int releases = 0;
  std::vector<const void*> waited_for;

  CachingAllocator::Backend backend() {
    CachingAllocator::Backend b;
    b.device_name = "fake GPU 7";
    b.allocate = [this](std::size_t size) -> void* {
      if (used + size > capacity) return nullptr;
      used += size;
      ++allocations;
      // The size travels in front of the block so release can give it back.
      auto* block = static_cast<std::size_t*>(std::malloc(size + sizeof(std::size_t)));
      *block = size;
      return block + 1;
    };
    b.release = [this](void* ptr) {
      std::size_t* block = static_cast<std::size_t*>(ptr) - 1;
      used -= *block;
      ++releases;
      std::free(block);
    };
    b.wait = [this](const void* tag) { waited_for.push_back(tag); };
    return b;
  }
};

// Two streams: only their addresses matter.
char stream_a_object;
char stream_b_object;
const void* const stream_a = &stream_a_object;
const void* const stream_b = &stream_b_object;

TEST(CachingAllocator, SizeClassesAreFineForSmallBlocksAndCoarseForLarge) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512u);
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(512), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(1 << 20), std::size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::size_class((1 << 20) + 1), std::size_t{2} << 20);
  EXPECT_EQ(CachingAllocator::size_class((5 << 20) - 3), std::size_t{5} << 20);
}

TEST(CachingAllocator, AFreedBlockIsReusedWithoutReachingTheBackend) {
  FakeDevice device;
  CachingAllocator allocator(device.backend());
  void* first = allocator.allocate(1000, stream_a);
  allocator.free(first, stream_a);
  void* second = allocator.allocate(900, stream_a);  // same 1024-byte class
  EXPECT_EQ(second, first);
  EXPECT_EQ(device.allocations, 1);
  EXPECT_TRUE(device.waited_for.empty()) << "same stream: its work runs in order";
  const CachingAllocator::Statistics s = allocator.statistics();
  EXPECT_EQ(s.in_use_bytes, 1024u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.backend_allocations, 1u);
}

TEST(CachingAllocator, OtherSizeClassesGetTheirOwnBlocks) {
  FakeDevice device;
  CachingAllocator allocator(device.backend());
  void* small = allocator.allocate(100, stream_a);
  allocator.free(small, stream_a);
  void* larger = allocator.allocate(4096, stream_a);
  EXPECT_NE(larger, small);
  EXPECT_EQ(device.allocations, 2);
  EXPECT_EQ(allocator.statistics().cached_bytes, 512u);
}

TEST(CachingAllocator, ReuseByAnotherStreamWaitsForTheFreeingStream) {
  FakeDevice device;
  CachingAllocator allocator(device.backend());
  void* block = allocator.allocate(2048, stream_a);
  allocator.free(block, stream_a);
  EXPECT_EQ(allocator.allocate(2048, stream_b), block);
  ASSERT_EQ(device.waited_for.size(), 1u);
  EXPECT_EQ(device.waited_for[0], stream_a);
}

TEST(CachingAllocator, PrefersABlockFreedByTheSameStream) {
  FakeDevice device;
  CachingAllocator allocator(device.backend());
  void* from_a = allocator.allocate(2048, stream_a);
  void* from_b = allocator.allocate(2048, stream_b);
  allocator.free(from_a, stream_a);
  allocator.free(from_b, stream_b);
  EXPECT_EQ(allocator.allocate(2048, stream_b), from_b);
  EXPECT_TRUE(device.waited_for.empty());
}

TEST(CachingAllocator, ATrainingLoopsSteadyStateNeverReachesTheBackend) {
  FakeDevice device;
  CachingAllocator allocator(device.backend());
  const std::vector<std::size_t> sizes = {300, 70000, 3 << 20, 300, 12345};
  int allocations_after_first_pass = -1;
  for (int pass = 0; pass < 5; ++pass) {
    std::vector<void*> blocks;
    for (std::size_t size : sizes) blocks.push_back(allocator.allocate(size, stream_a));
    for (void* block : blocks) allocator.free(block, stream_a);
    if (pass == 0) allocations_after_first_pass = device.allocations;
  }
  EXPECT_EQ(device.allocations, allocations_after_first_pass);
  EXPECT_EQ(device.allocations, 5);
  EXPECT_EQ(allocator.statistics().peak_in_use_bytes, 512u + 70144u + (3u << 20) + 512u + 12800u);
}

TEST(CachingAllocator, AFullDeviceReleasesTheCacheAndRetries) {
  FakeDevice device;
  device.capacity = 4 << 20;
  CachingAllocator allocator(device.backend());
  void* a = allocator.allocate(2 << 20, stream_a);
  void* b = allocator.allocate(2 << 20, stream_a);
  allocator.free(a, stream_a);
  allocator.free(b, stream_a);
  // A 3 MiB class does not fit beside the 4 MiB cached: the cache goes back.
  void* c = allocator.allocate(3 << 20, stream_a);
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(device.releases, 2);
  EXPECT_EQ(allocator.statistics().cached_bytes, 0u);
  EXPECT_EQ(allocator.statistics().backend_releases, 2u);
}

TEST(CachingAllocator, OutOfMemoryNamesTheDeviceTheSizeAndTheRemedy) {
  FakeDevice device;
  device.capacity = 1 << 20;
  CachingAllocator allocator(device.backend());
  void* held = allocator.allocate(512 << 10, stream_a);
  testing::expect_error([&] { allocator.allocate(3 << 20, stream_a); },
                        {"fake GPU 7", "3 MiB", "0.5 MiB in use", "batch_size"});
  allocator.free(held, stream_a);
}

TEST(CachingAllocator, ReleaseCachedReturnsEveryFreedBlock) {
  FakeDevice device;
  CachingAllocator allocator(device.backend());
  void* in_use = allocator.allocate(1000, stream_a);
  for (int i = 0; i < 3; ++i)
    allocator.free(allocator.allocate(5000 * (i + 1), stream_a), stream_a);
  allocator.release_cached();
  EXPECT_EQ(device.releases, 3);
  EXPECT_EQ(device.used, 1024u);
  allocator.free(in_use, stream_a);
}

}  // namespace
}  // namespace xtrain
