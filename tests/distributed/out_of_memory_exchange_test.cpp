// A device that runs out of memory while gradient sums are in flight
// (docs/cuda.md, "No free while a sum is in flight"): the caching allocator
// releases its cache with cudaFree, which waits for every kernel on the
// device, NCCL's spinning sums included. So the sums this thread started are
// waited for first (GradientBuckets registers them as pending work:
// core/thread_device_work.hpp), and only then is the cache released.
//
// On the CPU: a real Solver and GradientBuckets over a communicator whose
// sums stay pending until waited for, a layer whose backward allocates from a
// caching allocator with a host backend that fails once (the forced
// allocation failure), and a log of what happened in which order.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/caching_allocator.hpp"
#include "core/thread_device_work.hpp"
#include "error_message.hpp"
#include "test_net_text.hpp"
#include "two_equal_replicas.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

// What happened, in order: "start", "wait" (a sum's first wait), "release"
// (a cached block handed back to the backend), "backward done".
std::vector<std::string>& events() {
  static std::vector<std::string> log;
  return log;
}

// Two equal replicas whose sums run when waited for, as an NCCL sum spins on
// the device until its peers join.
class DeferredSums final : public testing::TwoEqualReplicas {
 public:
  std::unique_ptr<PendingCollective> start_allreduce_sum(float* data, std::size_t count) override {
    events().push_back("start");
    return std::make_unique<Sum>(*this, data, count);
  }

 private:
  class Sum final : public PendingCollective {
   public:
    Sum(DeferredSums& owner, float* data, std::size_t count)
        : owner_(owner), data_(data), count_(count) {}
    bool poll() override { return done_; }
    void wait() override {
      if (done_) return;
      events().push_back("wait");
      owner_.allreduce_sum(data_, count_);
      done_ = true;
    }

   private:
    DeferredSums& owner_;
    float* data_;
    std::size_t count_;
    bool done_ = false;
  };
};

// A host "device" whose allocation number `failing_call` fails (0: none).
struct FailingDevice {
  int failing_call = 0;
  int calls = 0;
  bool drain = true;  // false: the allocator as it was before (the planted bug)

  CachingAllocator::Backend backend() {
    CachingAllocator::Backend b;
    b.device_name = "test GPU 3";
    b.allocate = [this](std::size_t size) -> void* {
      return ++calls == failing_call ? nullptr : std::malloc(size);
    };
    b.release = [](void* ptr) {
      events().push_back("release");
      std::free(ptr);
    };
    b.wait = [](const void*) {};
    if (drain) b.drain = [] { return drain_pending_work(); };
    return b;
  }
};

std::unique_ptr<CachingAllocator>& test_allocator() {
  static std::unique_ptr<CachingAllocator> allocator;
  return allocator;
}
bool& fail_in_backward() {
  static bool fail = false;
  return fail;
}

// y = x; its backward passes the gradient on and allocates 4 KiB from the
// test allocator, whose backend then fails once (the cache holds a block of
// another size, so the allocator releases it and retries).
class AllocatingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "SolverTestAllocatesInBackward"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    top[0]->reshape_like(*bottom[0]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    std::copy_n(bottom[0]->cpu_data(), bottom[0]->count(), top[0]->mutable_cpu_data());
  }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (propagate_down[0]) {
      std::copy_n(top[0]->cpu_diff(), top[0]->count(), bottom[0]->mutable_cpu_diff());
    }
    if (!fail_in_backward()) return;
    CachingAllocator& allocator = *test_allocator();
    allocator.free(allocator.allocate(1 << 20, nullptr), nullptr);  // cached: 1 MiB
    events().push_back("allocate");
    allocator.free(allocator.allocate(4096, nullptr), nullptr);
    events().push_back("allocated");
  }
};

// data -> ip1 -> alloc -> ip2 -> loss: the allocation runs after ip2's
// backward, when (from the second iteration on) the sums of the loss and of
// ip2's gradients have started, and before ip1's.
const std::string kNet = R"(
name: 'out_of_memory_exchange'
)" + testing::random_data_and_labels({4, 8}, "type: 'constant' value: 1") +
                         R"(
layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'
  inner_product_param { num_output: 6 weight_filler { type: 'xavier' } } }
layer { name: 'alloc' type: 'SolverTestAllocatesInBackward' bottom: 'ip1' top: 'a' }
layer { name: 'ip2' type: 'InnerProduct' bottom: 'a' top: 'ip2'
  inner_product_param { num_output: 4 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' }
)";

// The events of one training iteration whose backward allocates, with the
// drain on or off.
std::vector<std::string> second_iteration_events(bool drain) {
  LayerRegistry& registry = LayerRegistry::global();
  if (!registry.has("SolverTestAllocatesInBackward")) {
    add_layer<AllocatingLayer>(registry, "SolverTestAllocatesInBackward");
  }
  FailingDevice device;
  device.drain = drain;
  test_allocator() = std::make_unique<CachingAllocator>(device.backend());
  events().clear();
  SolverParameter param;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "base_lr: 0.1 lr_policy: 'fixed' max_iter: 2 display: 0 random_seed: 5 "
      "snapshot_after_train: false",
      &param));
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kNet, param.mutable_net_param()));
  DeferredSums sums;
  SolverOptions options;
  options.verbose_nets = false;
  options.communicator = &sums;
  options.gradient_bucket_bytes = 1;  // a bucket per parameter blob
  std::unique_ptr<Solver> solver = create_solver(param, options);
  fail_in_backward() = false;
  solver->step(1);  // the first exchange waits for the whole backward anyway
  events().clear();
  // The layer's 1 MiB block is allocated (call 1) and cached; its 4 KiB
  // allocation misses the cache and the backend's call 2 fails.
  device.failing_call = 2;
  fail_in_backward() = true;
  solver->step(1);
  fail_in_backward() = false;
  test_allocator().reset();
  return events();
}

std::size_t first_of(const std::vector<std::string>& log, const std::string& event) {
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i] == event) return i;
  }
  return log.size();
}

std::string joined(const std::vector<std::string>& log) {
  std::string text;
  for (const std::string& e : log) text += e + " ";
  return text;
}

TEST(OutOfMemoryDuringExchange, SumsInFlightFinishBeforeTheCacheIsReleased) {
  const std::vector<std::string> log = second_iteration_events(/*drain=*/true);
  const std::size_t allocate = first_of(log, "allocate");
  const std::size_t release = first_of(log, "release");
  ASSERT_LT(allocate, log.size()) << joined(log);
  ASSERT_LT(release, log.size()) << "the forced failure released no cache: " << joined(log);
  // Sums had started before the allocation (the overlap this is about)...
  int started_before = 0;
  for (std::size_t i = 0; i < allocate; ++i) started_before += log[i] == "start";
  ASSERT_GT(started_before, 0) << joined(log);
  // ... and every one of them was waited for before the release.
  int waited_before_release = 0;
  for (std::size_t i = allocate; i < release; ++i) waited_before_release += log[i] == "wait";
  EXPECT_EQ(waited_before_release, started_before) << joined(log);
  EXPECT_LT(release, first_of(log, "allocated")) << joined(log);
  // Backward went on after it: ip1's sums start after the allocation.
  EXPECT_GT(std::count(log.begin() + static_cast<long>(release), log.end(), "start"), 0)
      << joined(log);
}

// The planted bug: an allocator without the drain releases its cache while
// the sums are still in flight; the test above would see it.
TEST(OutOfMemoryDuringExchange, WithoutTheDrainTheReleaseRacesTheSums) {
  const std::vector<std::string> log = second_iteration_events(/*drain=*/false);
  const std::size_t allocate = first_of(log, "allocate");
  const std::size_t release = first_of(log, "release");
  ASSERT_LT(release, log.size()) << joined(log);
  int waited_before_release = 0;
  for (std::size_t i = allocate; i < release; ++i) waited_before_release += log[i] == "wait";
  EXPECT_EQ(waited_before_release, 0) << joined(log);
}

// Still out of memory after the release: the error names the layer that
// asked and says that the sums had finished and the cache had gone.
TEST(OutOfMemoryDuringExchange, TheErrorNamesTheLayer) {
  CachingAllocator::Backend backend;
  backend.device_name = "test GPU 3";
  bool full = false;
  backend.allocate = [&full](std::size_t size) -> void* {
    return full ? nullptr : std::malloc(size);
  };
  backend.release = [](void* ptr) { std::free(ptr); };
  backend.wait = [](const void*) {};
  int drains = 0;
  backend.drain = [&drains] {
    ++drains;
    return drain_pending_work();
  };
  CachingAllocator allocator(backend);
  allocator.free(allocator.allocate(2 << 20, nullptr), nullptr);
  full = true;
  const PendingWorkDrain sums([] {});
  const std::string name = "conv3";
  const RunningLayer running(name, "Convolution", "backward");
  testing::expect_error(
      [&] { allocator.allocate(1 << 20, nullptr); },
      {"out of memory on test GPU 3", "allocating 1 MiB",
       "for layer 'conv3' (Convolution), backward", "2 MiB of cached blocks released first",
       "after the gradient sums in flight had finished", "batch_size"});
  EXPECT_EQ(drains, 1);
}

// What the GPU check uses to fill a device on demand: the next allocations
// skip the cache (even a block of their own size) and find the backend full.
TEST(OutOfMemoryDuringExchange, AnInjectedOutOfMemoryTakesTheReleasePath) {
  FailingDevice device;
  CachingAllocator allocator(device.backend());
  events().clear();
  allocator.free(allocator.allocate(4096, nullptr), nullptr);
  allocator.inject_out_of_memory(1);
  const PendingWorkDrain sums([] { events().push_back("drained"); });
  void* block = allocator.allocate(4096, nullptr);
  EXPECT_NE(block, nullptr);
  EXPECT_EQ(joined(events()), "drained release ");
  EXPECT_EQ(allocator.statistics().backend_releases, 1u);
  allocator.free(block, nullptr);
  allocator.free(allocator.allocate(4096, nullptr), nullptr);  // back to normal: a cache hit
  EXPECT_EQ(allocator.statistics().cache_hits, 1u);
}

}  // namespace
}  // namespace xtrain
