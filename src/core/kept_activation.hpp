// An activation's values that a layer keeps from forward for backward
// (BatchNorm's normalised output, which the Scale after it may read too:
// EngineHooks::kept_top_copy), in the layout they were written in and in
// the type the layer stores its top in. In a net computing in bf16 or fp16
// the kept values are the top's, which the Net rounds to that type anyway,
// so they are held in 16 bits (core/sixteen_bit_packing.hpp): half the bytes,
// the same values. In fp32 the accessors below hand out the storage itself.
//
// Writing and reading go run by run, as the layers' loops do (a plane, a
// block of channels): write(offset, count) gives a pointer to fill and
// finish_write() stores it; read(offset, count) gives the values as floats.
// In 16 bits those pointers are a buffer of the calling thread's, one for
// writing and one for reading, valid until its next write or read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {

class KeptActivation {
 public:
  MemoryLayout layout = MemoryLayout::kPlain;

  // fp32, bf16 or fp16; a change of type drops the values.
  void set_type(NumberType type);
  NumberType type() const { return type_; }
  void resize(std::size_t count);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t bytes_held() const;

  float* write(std::size_t offset, std::size_t count);
  void finish_write(std::size_t offset, std::size_t count, const float* written);
  const float* read(std::size_t offset, std::size_t count) const;

  // Rearranges the values into `wanted` (rare: an in-place layer whose
  // gradient arrives in another layout than its forward ran in).
  void convert_layout(const ChannelBlockedShape& shape, MemoryLayout wanted);

 private:
  NumberType type_ = NumberType::kFloat32;
  std::size_t size_ = 0;
  std::vector<float> values_;          // fp32
  std::vector<std::uint16_t> packed_;  // bf16 or fp16
};

}  // namespace xtrain
