// Built only with oneDNN.
#if XTRAIN_HAVE_ONEDNN

#include "layers/onednn_boundary.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>

#include "layers/onednn_convolution.hpp"
#include "xtrain/error.hpp"

namespace xtrain::onednn {
namespace {

// What all threads' scratch buffers hold together (for the memory count).
std::atomic<std::size_t> scratch_bytes_held{0};

// A 64-byte aligned buffer that grows on demand; what it held is lost when
// it grows.
class ScratchBuffer {
 public:
  ~ScratchBuffer() { scratch_bytes_held -= capacity_; }

  void* get(std::size_t bytes) {
    if (bytes > capacity_) {
      const std::size_t rounded = (bytes + 63) / 64 * 64;
      void* fresh = std::aligned_alloc(64, rounded);
      XTRAIN_CHECK(fresh != nullptr, "out of memory: the oneDNN convolution needs ", rounded,
                   " bytes of scratch");
      data_.reset(fresh);
      scratch_bytes_held += rounded - capacity_;
      capacity_ = rounded;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  std::size_t capacity_ = 0;
};

// Roles that never meet in one call share a buffer too. A convolution's
// forward pass uses source, weights and destination; backward-data the
// destination's diff (kDestinationRole), weights and source diff;
// backward-weights source, destination diff, weight diff and bias diff. So
// the source's and the source diff's copies (each as large as the largest
// activation reordered) can be one buffer, and so can the weights' and the
// weight diff's (ResNet-50: -51 MiB and -9 MiB).
constexpr int kSharedBufferCount = 5;
constexpr std::array<int, kRoleCount> kBufferOfRole = {
    /*kSourceRole=*/0,   /*kDestinationRole=*/1, /*kSourceDiffRole=*/0,
    /*kWeightsRole=*/2,  /*kWeightDiffRole=*/2,  /*kBiasDiffRole=*/3,
    /*kPrimitiveScratchpadRole=*/4};

ScratchBuffer& thread_scratch(Role role) {
  thread_local std::array<ScratchBuffer, kSharedBufferCount> buffers;
  return buffers[kBufferOfRole[role]];
}

}  // namespace

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attributes;
}

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void* scratch_memory(Role role, std::size_t bytes) { return thread_scratch(role).get(bytes); }

}  // namespace xtrain::onednn

namespace xtrain {

std::size_t onednn_convolution_scratch_bytes() { return onednn::scratch_bytes_held; }

}  // namespace xtrain

#endif  // XTRAIN_HAVE_ONEDNN
