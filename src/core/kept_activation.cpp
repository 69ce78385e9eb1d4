#include "core/kept_activation.hpp"

#include <utility>

#include "core/sixteen_bit_packing.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// The calling thread's buffers for runs of 16-bit values as floats.
float* thread_buffer(std::vector<float>& buffer, std::size_t count) {
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}
thread_local std::vector<float> write_buffer;
thread_local std::vector<float> read_buffer;

}  // namespace

void KeptActivation::set_type(NumberType type) {
  XTRAIN_ASSERT(type == NumberType::kFloat32 || type == NumberType::kBfloat16 ||
                    type == NumberType::kFloat16,
                "a kept activation is fp32, bf16 or fp16");
  if (type == type_) return;
  type_ = type;
  std::vector<float>().swap(values_);
  std::vector<std::uint16_t>().swap(packed_);
  resize(size_);
}

void KeptActivation::resize(std::size_t count) {
  size_ = count;
  if (type_ == NumberType::kFloat32) {
    values_.resize(count);
  } else {
    packed_.resize(count);
  }
}

std::size_t KeptActivation::bytes_held() const {
  return values_.capacity() * sizeof(float) + packed_.capacity() * sizeof(std::uint16_t);
}

float* KeptActivation::write(std::size_t offset, std::size_t count) {
  XTRAIN_ASSERT(offset + count <= size_, "a kept activation written past its end");
  if (type_ == NumberType::kFloat32) return values_.data() + offset;
  return thread_buffer(write_buffer, count);
}

void KeptActivation::finish_write(std::size_t offset, std::size_t count, const float* written) {
  if (type_ == NumberType::kFloat32) return;
  pack_to_16_bits(type_, written, packed_.data() + offset, count);
}

const float* KeptActivation::read(std::size_t offset, std::size_t count) const {
  XTRAIN_ASSERT(offset + count <= size_, "a kept activation read past its end");
  if (type_ == NumberType::kFloat32) return values_.data() + offset;
  float* floats = thread_buffer(read_buffer, count);
  unpack_16_bits(type_, packed_.data() + offset, floats, count);
  return floats;
}

void KeptActivation::convert_layout(const ChannelBlockedShape& shape, MemoryLayout wanted) {
  if (layout == wanted || empty()) return;
  std::vector<float> from(size_);
  if (type_ == NumberType::kFloat32) {
    from.swap(values_);
  } else {
    unpack_16_bits(type_, packed_.data(), from.data(), size_);
  }
  std::vector<float> to(size_);
  if (wanted == MemoryLayout::kChannelBlocked) {
    plain_to_channel_blocked(shape, from.data(), to.data());
  } else {
    channel_blocked_to_plain(shape, from.data(), to.data());
  }
  if (type_ == NumberType::kFloat32) {
    values_ = std::move(to);
  } else {
    pack_to_16_bits(type_, to.data(), packed_.data(), size_);
  }
  layout = wanted;
}

}  // namespace xtrain
