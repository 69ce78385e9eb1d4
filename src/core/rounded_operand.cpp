#include "core/rounded_operand.hpp"

#include <array>
#include <atomic>

#include "core/aligned_host_memory.hpp"
#include "core/device_memory.hpp"
#include "core/number_rounding.hpp"
#include "xtrain/net_memory_count.hpp"

namespace xtrain {
namespace {

// What all threads' slots hold together (for the memory count).
std::atomic<std::size_t> slot_bytes_held{0};

struct HostSlot {
  HostSlot() = default;
  HostSlot(const HostSlot&) = delete;
  HostSlot& operator=(const HostSlot&) = delete;
  ~HostSlot() {
    slot_bytes_held -= floats * sizeof(float);
    free_aligned_host(memory);
  }
  void* memory = nullptr;
  std::size_t floats = 0;
};

std::array<HostSlot, static_cast<std::size_t>(OperandSlot::kCount)>& host_slots() {
  thread_local std::array<HostSlot, static_cast<std::size_t>(OperandSlot::kCount)> slots;
  return slots;
}

float* host_scratch(OperandSlot slot, std::size_t count) {
  HostSlot& held = host_slots()[static_cast<std::size_t>(slot)];
  if (held.floats < count) {
    free_aligned_host(held.memory);
    slot_bytes_held -= held.floats * sizeof(float);
    held.memory = nullptr;
    held.floats = 0;
    held.memory = allocate_aligned_host(count * sizeof(float));
    held.floats = count;
    slot_bytes_held += count * sizeof(float);
  }
  return static_cast<float*>(held.memory);
}

}  // namespace

RoundedOperand::RoundedOperand(const Device& device, NumberType type, const float* values,
                               std::size_t count, OperandSlot slot, NumberType values_are_in)
    : rounded_(values) {
  if (type == NumberType::kFloat32 || type == values_are_in || count == 0 || values == nullptr) {
    return;
  }
  float* copy = nullptr;
  if (device.is_gpu()) {
    device_buffer_ = device_memory::allocate(count * sizeof(float), &device_id_);
    copy = static_cast<float*>(device_buffer_);
  } else {
    copy = host_scratch(slot, count);
  }
  round_into(device, type, values, copy, count);
  rounded_ = copy;
}

RoundedOperand::~RoundedOperand() {
  if (device_buffer_ != nullptr) device_memory::free(device_buffer_, device_id_);
}

std::size_t rounded_operand_scratch_bytes() { return slot_bytes_held; }

}  // namespace xtrain
