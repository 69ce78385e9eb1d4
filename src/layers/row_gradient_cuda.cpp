#include <algorithm>

#include "layers/copy_kernels.hpp"
#include "layers/row_gradient.hpp"

namespace xtrain {

void DeviceRowGradient::run(const std::vector<std::size_t>& packed, std::size_t positions,
                            std::size_t width, const float* source, float* target) {
  const std::size_t bytes = packed.size() * sizeof(std::size_t);
  if (!plan_ || plan_->size() < bytes) plan_ = std::make_unique<SyncedMemory>(bytes);
  // The host write waits for the previous upload (SyncedMemory's marker);
  // the previous kernel ran before this upload on the same stream.
  std::copy(packed.begin(), packed.end(), static_cast<std::size_t*>(plan_->mutable_cpu_data()));
  const auto* on_device = static_cast<const std::size_t*>(plan_->gpu_data());
  cuda::add_row_segments(ops::row_segments_view(on_device, packed.size(), positions, width), source,
                         target);
}

}  // namespace xtrain
