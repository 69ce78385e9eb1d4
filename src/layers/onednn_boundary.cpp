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

ScratchBuffer& thread_scratch(Role role) {
  thread_local std::array<ScratchBuffer, kRoleCount> buffers;
  return buffers[role];
}

}  // namespace

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
