#include "core/activation_packing.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

#include "core/parallel_loop.hpp"
#include "core/sixteen_bit_packing.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

std::atomic<bool> poison_packed_places{false};

// Values one parallel chunk converts: a few hundred KiB.
constexpr std::size_t kChunk = 1 << 16;

template <typename ConvertChunk>
void for_each_chunk(std::size_t count, ConvertChunk convert) {
  const auto chunks = static_cast<std::int64_t>((count + kChunk - 1) / kChunk);
  parallel_for(chunks, kChunk, [&](std::int64_t chunk) {
    const std::size_t begin = static_cast<std::size_t>(chunk) * kChunk;
    convert(begin, std::min(kChunk, count - begin));
  });
}

}  // namespace

void set_poison_packed_places_for_testing(bool poison) { poison_packed_places = poison; }

ActivationPacking::ActivationPacking(const Net& net, const NetMemoryPlan& plan,
                                     const AppliedNetMemoryPlan& applied)
    : after_forward_(net.layers().size()),
      before_backward_(net.layers().size()),
      arena_(applied.data_arena) {
  for (const NetMemoryPlan::Pack& pack : plan.packs) {
    XTRAIN_ASSERT(applied.data_arena_host != nullptr && pack.packed_offset >= 0,
                  "packed values without a place in the data arena");
    const Blob* blob = net.blobs()[static_cast<std::size_t>(pack.blob)].get();
    Entry entry;
    entry.blob = blob;
    entry.storage = blob->data_memory().get();
    entry.packed = reinterpret_cast<std::uint16_t*>(applied.data_arena_host + pack.packed_offset);
    entry.values = pack.values;
    entry.type = pack.type;
    after_forward_[static_cast<std::size_t>(pack.after_forward_of)].push_back(
        static_cast<int>(entries_.size()));
    before_backward_[static_cast<std::size_t>(pack.before_backward_of)].push_back(
        static_cast<int>(entries_.size()));
    entries_.push_back(entry);
  }
}

void ActivationPacking::after_forward(int layer) {
  for (int index : after_forward_[static_cast<std::size_t>(layer)]) {
    Entry& entry = entries_[static_cast<std::size_t>(index)];
    // A reshape may have given the blob storage of its own, which nobody
    // else writes: then its values simply stay.
    entry.holds_values = false;
    if (entry.blob->data_memory().get() != entry.storage) continue;
    const auto* values = static_cast<const float*>(entry.storage->host_pointer());
    if (values == nullptr) continue;
    for_each_chunk(entry.values, [&](std::size_t begin, std::size_t count) {
      pack_to_16_bits(entry.type, values + begin, entry.packed + begin, count);
    });
    entry.holds_values = true;
    if (poison_packed_places) {
      auto* place = const_cast<float*>(values);
      std::fill(place, place + entry.values, std::numeric_limits<float>::quiet_NaN());
    }
  }
}

void ActivationPacking::before_backward(int layer) {
  for (int index : before_backward_[static_cast<std::size_t>(layer)]) {
    Entry& entry = entries_[static_cast<std::size_t>(index)];
    if (!entry.holds_values) continue;
    // The storage is a view into the net's arena, whose host copy is the
    // head on the CPU: the values go back where forward left them, in the
    // layout they were in.
    auto* values = const_cast<float*>(static_cast<const float*>(entry.storage->host_pointer()));
    for_each_chunk(entry.values, [&](std::size_t begin, std::size_t count) {
      unpack_16_bits(entry.type, entry.packed + begin, values + begin, count);
    });
    entry.holds_values = false;
  }
}

}  // namespace xtrain
