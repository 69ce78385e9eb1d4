#include "xtrain/net_memory_count.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "core/engine_hooks.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

// The storages of one kind, each counted once: by address where they have
// a host copy (views into one arena overlap), else by size.
class KindBytes {
 public:
  explicit KindBytes(std::set<const SyncedMemory*>* seen) : seen_(seen) {}

  // Adds `memory` unless it was counted already (under this kind or an
  // earlier one) or holds nothing yet.
  void add(const SyncedMemory* memory) {
    if (memory == nullptr || memory->head() == SyncedMemory::Head::kUninitialized) return;
    if (!seen_->insert(memory).second) return;
    const auto* host = static_cast<const char*>(memory->host_pointer());
    if (host == nullptr) {
      unaddressed_ += memory->size();
      return;
    }
    const auto begin = reinterpret_cast<std::uintptr_t>(host);
    ranges_.emplace_back(begin, begin + memory->size());
  }

  std::size_t total() {
    std::sort(ranges_.begin(), ranges_.end());
    std::size_t bytes = unaddressed_;
    std::uintptr_t covered_to = 0;
    for (const auto& [begin, end] : ranges_) {
      const std::uintptr_t from = std::max(begin, covered_to);
      if (end > from) bytes += end - from;
      covered_to = std::max(covered_to, end);
    }
    return bytes;
  }

 private:
  std::set<const SyncedMemory*>* seen_;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges_;
  std::size_t unaddressed_ = 0;
};

}  // namespace

std::size_t NetMemoryCount::layer_buffer_total() const {
  std::size_t total = 0;
  for (const auto& [type, bytes] : layer_buffers) total += bytes;
  return total;
}

std::size_t NetMemoryCount::total() const {
  return parameters + parameter_gradients + activations + activation_gradients +
         layer_buffer_total();
}

NetMemoryCount count_net_memory(const Net& net) {
  NetMemoryCount count;
  // One set for all kinds: a storage is counted under the first kind that
  // holds it, parameters first (a net blob never shares a parameter's).
  std::set<const SyncedMemory*> seen;
  KindBytes parameters(&seen), parameter_gradients(&seen), activations(&seen),
      activation_gradients(&seen);
  for (const auto& param : net.params()) {
    parameters.add(param->data_memory().get());
    parameter_gradients.add(param->diff_memory().get());
  }
  for (const auto& blob : net.blobs()) {
    activations.add(blob->data_memory().get());
    activation_gradients.add(blob->diff_memory().get());
  }
  count.parameters = parameters.total();
  count.parameter_gradients = parameter_gradients.total();
  count.activations = activations.total();
  count.activation_gradients = activation_gradients.total();
  for (const auto& layer : net.layers()) {
    const std::size_t bytes = engine_hooks(*layer).buffer_bytes();
    if (bytes > 0) count.layer_buffers[layer->type()] += bytes;
  }
  return count;
}

}  // namespace xtrain
