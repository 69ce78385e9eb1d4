#include "solvers/gradient_buckets.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/device_apply.hpp"
#include "xtrain/error.hpp"

#ifdef XTRAIN_USE_CUDA
#include "core/device_memory.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

void copy_values(const Device& where, std::size_t count, const float* from, float* to) {
#ifdef XTRAIN_USE_CUDA
  if (where.is_gpu()) {
    math::gpu::copy(count, from, to);
    return;
  }
#endif
  (void)where;
  std::memcpy(to, from, count * sizeof(float));
}

void set_value(const Device& where, float value, float* to) {
#ifdef XTRAIN_USE_CUDA
  if (where.is_gpu()) {
    math::gpu::set(1, value, to);
    return;
  }
#endif
  (void)where;
  *to = value;
}

// The mean loss only: not the whole buffer back from the device.
float read_value(const Device& where, const float* from) {
#ifdef XTRAIN_USE_CUDA
  if (where.is_gpu()) {
    float value = 0;
    device_memory::copy_to_host(&value, from, sizeof(float), where.id);
    return value;
  }
#endif
  (void)where;
  return *from;
}

}  // namespace

GradientBuckets::GradientBuckets(const Net& net, std::size_t bucket_bytes) : net_(net) {
  XTRAIN_CHECK(bucket_bytes > 0, "gradient buckets need a positive size, not ", bucket_bytes);
  plan(bucket_bytes);
}

void GradientBuckets::plan(std::size_t bucket_bytes) {
  const std::vector<Blob*>& params = net_.learnable_params();
  const int layer_count = static_cast<int>(net_.layers().size());
  // A parameter's gradient is final after the first (in the net's order) of
  // the layers that use it: backward runs from the last layer to the first.
  std::vector<int> final_layer(params.size(), layer_count);
  std::size_t entry = 0;  // Net::params() lists each layer's blobs in layer order
  for (int layer = 0; layer < layer_count; ++layer) {
    const std::size_t blobs = net_.layers()[static_cast<std::size_t>(layer)]->blobs().size();
    for (std::size_t k = 0; k < blobs; ++k, ++entry) {
      XTRAIN_ASSERT(entry < net_.learnable_param_ids().size(), "params of layer ", layer);
      const int id = net_.learnable_param_ids()[entry];
      final_layer[static_cast<std::size_t>(id)] =
          std::min(final_layer[static_cast<std::size_t>(id)], layer);
    }
  }
  XTRAIN_ASSERT(entry == net_.learnable_param_ids().size(), "every param belongs to a layer");

  std::vector<int> order(params.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return final_layer[static_cast<std::size_t>(a)] > final_layer[static_cast<std::size_t>(b)];
  });

  final_after_layer_.assign(static_cast<std::size_t>(layer_count), {});
  bucket_of_.assign(params.size(), 0);
  offset_of_.assign(params.size(), 0);
  buckets_.assign(1, Bucket{});
  std::size_t offset = 1;  // the loss first, in bucket 0
  std::size_t cap = std::min(bucket_bytes, kFirstGradientBucketBytes);
  std::size_t bytes = 0;
  for (const int id : order) {
    const std::size_t count = params[static_cast<std::size_t>(id)]->count();
    if (!buckets_.back().params.empty() && bytes + count * sizeof(float) > cap) {
      buckets_.back().end = offset;
      buckets_.push_back(Bucket{});
      buckets_.back().begin = offset;
      cap = bucket_bytes;
      bytes = 0;
    }
    buckets_.back().params.push_back(id);
    bucket_of_[static_cast<std::size_t>(id)] = static_cast<int>(buckets_.size() - 1);
    offset_of_[static_cast<std::size_t>(id)] = offset;
    offset += count;
    bytes += count * sizeof(float);
    final_after_layer_[static_cast<std::size_t>(final_layer[static_cast<std::size_t>(id)])]
        .push_back(id);
  }
  buckets_.back().end = offset;
  buffer_.reshape(gradient_buffer_shape(offset));
}

std::vector<int> gradient_buffer_shape(std::size_t values) {
  constexpr std::size_t kLargestDimension = std::numeric_limits<int>::max();
  if (values <= kLargestDimension) return {static_cast<int>(values)};
  constexpr std::size_t kRow = std::size_t{1} << 16;
  const std::size_t rows = (values + kRow - 1) / kRow;
  XTRAIN_CHECK(rows <= kLargestDimension, "a net of ", values,
               " parameter values is past what one gradient buffer can hold");
  return {static_cast<int>(rows), static_cast<int>(kRow)};
}

void GradientBuckets::begin(Communicator& exchange, const Device& where, float loss) {
  pending_.clear();  // left by a collective that failed
  drain_ = std::make_unique<PendingWorkDrain>([this] { wait_for_started_sums(); });
  exchange_ = &exchange;
  where_ = where;
  next_to_start_ = 0;
  for (Bucket& bucket : buckets_) bucket.waiting_for = static_cast<int>(bucket.params.size());
  set_value(where_, loss, ops::mutable_data_on(where_, buffer_));
  start_ready_buckets();  // a net without parameters has the loss alone
}

void GradientBuckets::layer_done(int layer) {
  XTRAIN_ASSERT(exchange_ != nullptr, "begin() before backward");
  float* buffer = ops::mutable_data_on(where_, buffer_);
  for (const int id : final_after_layer_[static_cast<std::size_t>(layer)]) {
    const Blob& param = *net_.learnable_params()[static_cast<std::size_t>(id)];
    copy_values(where_, param.count(), ops::diff_on(where_, param),
                buffer + offset_of_[static_cast<std::size_t>(id)]);
    --buckets_[static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(id)])].waiting_for;
  }
  start_ready_buckets();
  // MPI advances its sums only inside its calls: give it a turn per layer.
  for (const auto& pending : pending_) pending->poll();
}

// In bucket order, so that every replica starts the same sums in the same order.
void GradientBuckets::start_ready_buckets() {
  float* buffer = ops::mutable_data_on(where_, buffer_);
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].waiting_for == 0) {
    const Bucket& bucket = buckets_[next_to_start_];
    pending_.push_back(
        exchange_->start_allreduce_sum(buffer + bucket.begin, bucket.end - bucket.begin));
    ++next_to_start_;
  }
}

void GradientBuckets::wait_for_started_sums() {
  for (const auto& pending : pending_) pending->wait();
}

float GradientBuckets::finish() {
  XTRAIN_ASSERT(exchange_ != nullptr, "begin() before finish()");
  XTRAIN_ASSERT(next_to_start_ == buckets_.size(),
                "every layer reported by backward(layer_done) before finish()");
  wait_for_started_sums();
  pending_.clear();
  drain_.reset();
  float* buffer = ops::mutable_data_on(where_, buffer_);
  const float share = 1.0f / static_cast<float>(exchange_->size());
  ops::apply_on(where_, buffer_.count(), ops::ScaleBy{share}, buffer, buffer);
  for (std::size_t id = 0; id < offset_of_.size(); ++id) {
    Blob& param = *net_.learnable_params()[id];
    copy_values(where_, param.count(), buffer + offset_of_[id],
                ops::mutable_diff_on(where_, param));
  }
  exchange_ = nullptr;
  return read_value(where_, buffer);
}

}  // namespace xtrain
