// An operand of a matrix product (a convolution's or an inner product's
// input, weights or gradient) rounded to a 16-bit type, for the layers that
// multiply in one where no kernel of that type does the rounding itself
// (xtrain/precision.hpp): bf16 on a CPU without bf16 instructions, fp16 on
// every CPU, and the GPU for now. The copy lives in scratch memory that the
// operands of one slot share across layers (on the CPU this thread's; on a
// GPU a buffer of the caching allocator, returned when the object goes), so
// a net pays for the largest operand of each slot once, not per layer.
#pragma once

#include <cstddef>

#include "xtrain/device.hpp"
#include "xtrain/precision.hpp"

namespace xtrain {

// Operands that meet in one product call never share a slot.
enum class OperandSlot { kInput, kWeights, kGradient, kCount };

class RoundedOperand {
 public:
  // For kFloat32, get() is `values` itself and nothing is copied; so too
  // when `values_are_in` says they hold numbers of `type` already (a bottom
  // that its writer stored in the type: Layer::bottom_arrives_in). Rounding
  // them again would change nothing but cost a pass and a copy as large as
  // the operand (ResNet-50 b16 in fp16: two of 49 MiB).
  RoundedOperand(const Device& device, NumberType type, const float* values, std::size_t count,
                 OperandSlot slot, NumberType values_are_in);
  ~RoundedOperand();
  RoundedOperand(const RoundedOperand&) = delete;
  RoundedOperand& operator=(const RoundedOperand&) = delete;

  const float* get() const { return rounded_; }

 private:
  const float* rounded_ = nullptr;
  void* device_buffer_ = nullptr;  // a GPU copy, returned to the allocator
  int device_id_ = -1;
};

// Host bytes of the CPU slots: rounded_operand_scratch_bytes() in
// xtrain/net_memory_count.hpp.

}  // namespace xtrain
