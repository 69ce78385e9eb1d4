#include "core/net_memory_count.hpp"

#include <set>

#include "xtrain/net.hpp"

namespace xtrain {
namespace {

// Adds the bytes of `memory` to *total unless it was counted already or
// holds nothing yet.
void add_storage(const SyncedMemory* memory, std::set<const SyncedMemory*>* seen,
                 std::size_t* total) {
  if (memory == nullptr || memory->head() == SyncedMemory::Head::kUninitialized) return;
  if (!seen->insert(memory).second) return;
  *total += memory->size();
}

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
  for (const auto& param : net.params()) {
    add_storage(param->data_memory().get(), &seen, &count.parameters);
    add_storage(param->diff_memory().get(), &seen, &count.parameter_gradients);
  }
  for (const auto& blob : net.blobs()) {
    add_storage(blob->data_memory().get(), &seen, &count.activations);
    add_storage(blob->diff_memory().get(), &seen, &count.activation_gradients);
  }
  for (const auto& layer : net.layers()) {
    const std::size_t bytes = layer->buffer_bytes();
    if (bytes > 0) count.layer_buffers[layer->type()] += bytes;
  }
  return count;
}

}  // namespace xtrain
