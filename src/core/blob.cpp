#include "xtrain/blob.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/channel_blocked_layout.hpp"
#include "core/device_apply.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

Blob::Blob(const std::vector<int>& shape) { reshape(shape); }

void Blob::reshape(const std::vector<int>& shape) {
  std::size_t count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    XTRAIN_CHECK(shape[i] >= 0, "blob dimension ", i, " is negative in shape ",
                 shape_to_string(shape));
    if (shape[i] > 0) {
      XTRAIN_CHECK(count <= std::numeric_limits<int>::max() / static_cast<std::size_t>(shape[i]),
                   "blob shape ", shape_to_string(shape), " has more than 2^31 elements");
    }
    count *= static_cast<std::size_t>(shape[i]);
  }
  // A blocked layout is tied to the old shape: keep the values, in the
  // plain order a reshape means (as Caffe does).
  if (data_ && shape != shape_) {
    data_->convert_host(MemoryLayout::kPlain);
    diff_->convert_host(MemoryLayout::kPlain);
  }
  shape_ = shape;
  count_ = count;
  if (count_ > capacity_ || !data_) {
    capacity_ = count_;
    data_ = std::make_shared<SyncedMemory>(capacity_ * sizeof(float));
    diff_ = std::make_shared<SyncedMemory>(capacity_ * sizeof(float));
  }
}

void Blob::reshape(const BlobShape& shape) {
  std::vector<int> dims;
  for (int i = 0; i < shape.dim_size(); ++i) {
    XTRAIN_CHECK(shape.dim(i) >= 0 && shape.dim(i) <= std::numeric_limits<int>::max(),
                 "blob shape dimension ", i, " = ", shape.dim(i), " is out of range");
    dims.push_back(static_cast<int>(shape.dim(i)));
  }
  reshape(dims);
}

void Blob::reshape_like(const Blob& other) { reshape(other.shape()); }

std::size_t Blob::count(int start_axis, int end_axis) const {
  XTRAIN_ASSERT(start_axis >= 0 && start_axis <= end_axis && end_axis <= num_axes(), "axes [",
                start_axis, ", ", end_axis, ") of ", shape_string());
  std::size_t result = 1;
  for (int i = start_axis; i < end_axis; ++i) result *= static_cast<std::size_t>(shape_[i]);
  return result;
}

int Blob::canonical_axis_index(int axis) const {
  XTRAIN_CHECK(axis >= -num_axes() && axis < num_axes(), "axis ", axis,
               " is out of range for a blob of shape ", shape_string(), " (", num_axes(), " axes)");
  return axis < 0 ? axis + num_axes() : axis;
}

std::string Blob::shape_string() const {
  std::ostringstream out;
  for (int dim : shape_) out << dim << " ";
  out << "(" << count_ << ")";
  return out.str();
}

int Blob::legacy_shape(int index) const {
  XTRAIN_CHECK(num_axes() <= 4, "num/channels/height/width used on a ", num_axes(), "-axis blob (",
               shape_string(), ")");
  if (index >= num_axes()) return 1;
  return shape_[index];
}

std::size_t Blob::offset(int n, int c, int h, int w) const {
  return ((static_cast<std::size_t>(n) * channels() + c) * height() + h) * width() + w;
}

const float* Blob::cpu_data() const {
  XTRAIN_ASSERT(data_);
  return static_cast<const float*>(data_->cpu_data());
}
float* Blob::mutable_cpu_data() {
  XTRAIN_ASSERT(data_);
  return static_cast<float*>(data_->mutable_cpu_data());
}
const float* Blob::cpu_diff() const {
  XTRAIN_ASSERT(diff_);
  return static_cast<const float*>(diff_->cpu_data());
}
float* Blob::mutable_cpu_diff() {
  XTRAIN_ASSERT(diff_);
  return static_cast<float*>(diff_->mutable_cpu_data());
}
bool Blob::can_be_channel_blocked() const {
  return num_axes() == 4 && channels_can_be_blocked(shape_[1]) && count_ > 0;
}

BlockedGeometry Blob::blocked_geometry() const {
  XTRAIN_ASSERT(can_be_channel_blocked(), "a blob of shape ", shape_string(),
                " cannot be channel-blocked");
  return {shape_[0], shape_[1], static_cast<std::int64_t>(shape_[2]) * shape_[3], channel_block()};
}

float* Blob::host_in(SyncedMemory& memory, MemoryLayout layout, HostAccess access) const {
  const BlockedGeometry geometry =
      layout == MemoryLayout::kChannelBlocked ? blocked_geometry() : BlockedGeometry{};
  if (access == HostAccess::kOverwrite) {
    return static_cast<float*>(memory.overwrite_host_as(layout, geometry));
  }
  memory.convert_host(layout, geometry);
  return static_cast<float*>(access == HostAccess::kRead
                                 ? const_cast<void*>(memory.cpu_data_as_stored())
                                 : memory.mutable_cpu_data_as_stored());
}

const float* Blob::cpu_data_in(MemoryLayout layout) const {
  return host_in(*data_, layout, HostAccess::kRead);
}
float* Blob::mutable_cpu_data_in(MemoryLayout layout) {
  return host_in(*data_, layout, HostAccess::kModify);
}
const float* Blob::cpu_diff_in(MemoryLayout layout) const {
  return host_in(*diff_, layout, HostAccess::kRead);
}
float* Blob::mutable_cpu_diff_in(MemoryLayout layout) {
  return host_in(*diff_, layout, HostAccess::kModify);
}
float* Blob::overwrite_cpu_data_in(MemoryLayout layout) {
  return host_in(*data_, layout, HostAccess::kOverwrite);
}
float* Blob::overwrite_cpu_diff_in(MemoryLayout layout) {
  return host_in(*diff_, layout, HostAccess::kOverwrite);
}

const float* Blob::gpu_data() const {
  XTRAIN_ASSERT(data_);
  return static_cast<const float*>(data_->gpu_data());
}
float* Blob::mutable_gpu_data() {
  XTRAIN_ASSERT(data_);
  return static_cast<float*>(data_->mutable_gpu_data());
}
const float* Blob::gpu_diff() const {
  XTRAIN_ASSERT(diff_);
  return static_cast<const float*>(diff_->gpu_data());
}
float* Blob::mutable_gpu_diff() {
  XTRAIN_ASSERT(diff_);
  return static_cast<float*>(diff_->mutable_gpu_data());
}

void Blob::share_data(const Blob& other) {
  XTRAIN_ASSERT(count_ == other.count_, shape_string(), " vs ", other.shape_string());
  data_ = other.data_;
}

void Blob::share_diff(const Blob& other) {
  XTRAIN_ASSERT(count_ == other.count_, shape_string(), " vs ", other.shape_string());
  diff_ = other.diff_;
}

void Blob::use_data_memory(std::shared_ptr<SyncedMemory> memory) {
  XTRAIN_ASSERT(memory && memory->size() >= capacity_ * sizeof(float), "storage of ",
                memory ? memory->size() : 0, " bytes for a blob of capacity ", capacity_);
  data_ = std::move(memory);
}

void Blob::use_diff_memory(std::shared_ptr<SyncedMemory> memory) {
  XTRAIN_ASSERT(memory && memory->size() >= capacity_ * sizeof(float), "storage of ",
                memory ? memory->size() : 0, " bytes for a blob of capacity ", capacity_);
  diff_ = std::move(memory);
}

namespace {
// Where the head of `memory` is: a blob whose newest values are on the GPU
// is updated there, as in Caffe.
Device device_of(const SyncedMemory& memory) {
  const SyncedMemory::Head head = memory.head();
  if (head != SyncedMemory::Head::kAtGpu && head != SyncedMemory::Head::kSynced) {
    return Device::cpu();
  }
  return Device::gpu(memory.gpu_device());
}
}  // namespace

void Blob::update() {
  if (count_ == 0) return;
  const Device device = device_of(*data_);
  float* data = ops::mutable_data_on(device, *this);
  const float* diff = device.is_gpu() ? gpu_diff() : cpu_diff();
  ops::apply_on(device, count_, ops::Difference{}, data, data, diff);
}

namespace {
double abs_sum(const float* values, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += std::fabs(values[i]);
  return sum;
}
double square_sum(const float* values, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(values[i]) * values[i];
  return sum;
}
}  // namespace

// The sums are taken where the newest values are: on the GPU by cuBLAS (in
// float, as Caffe's GPU mode does), on the CPU in double.
double Blob::asum_data() const {
  if (count_ == 0) return 0;
#ifdef XTRAIN_USE_CUDA
  if (device_of(*data_).is_gpu()) return math::gpu::asum(count_, gpu_data());
#endif
  return abs_sum(cpu_data(), count_);
}
double Blob::asum_diff() const {
  if (count_ == 0) return 0;
#ifdef XTRAIN_USE_CUDA
  if (device_of(*diff_).is_gpu()) return math::gpu::asum(count_, gpu_diff());
#endif
  return abs_sum(cpu_diff(), count_);
}
double Blob::sumsq_data() const {
  if (count_ == 0) return 0;
#ifdef XTRAIN_USE_CUDA
  if (device_of(*data_).is_gpu()) return math::gpu::dot(count_, gpu_data(), gpu_data());
#endif
  return square_sum(cpu_data(), count_);
}
double Blob::sumsq_diff() const {
  if (count_ == 0) return 0;
#ifdef XTRAIN_USE_CUDA
  if (device_of(*diff_).is_gpu()) return math::gpu::dot(count_, gpu_diff(), gpu_diff());
#endif
  return square_sum(cpu_diff(), count_);
}
void Blob::scale_data(float factor) {
  if (count_ == 0) return;
  const Device device = device_of(*data_);
  float* data = ops::mutable_data_on(device, *this);
  ops::apply_on(device, count_, ops::ScaleBy{factor}, data, data);
}
void Blob::scale_diff(float factor) {
  if (count_ == 0) return;
  const Device device = device_of(*diff_);
  float* diff = ops::mutable_diff_on(device, *this);
  ops::apply_on(device, count_, ops::ScaleBy{factor}, diff, diff);
}

std::vector<int> blob_proto_shape(const BlobProto& proto) {
  std::vector<int> shape;
  if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width()) {
    // Legacy 4-d blobs (Caffe before 2015, and mean files of that time).
    shape = {static_cast<int>(proto.num()), static_cast<int>(proto.channels()),
             static_cast<int>(proto.height()), static_cast<int>(proto.width())};
  } else {
    for (int i = 0; i < proto.shape().dim_size(); ++i) {
      shape.push_back(static_cast<int>(proto.shape().dim(i)));
    }
  }
  return shape;
}

std::string shape_to_string(const std::vector<int>& shape) {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ")";
  return out.str();
}

bool Blob::shape_equals(const BlobProto& proto) const {
  if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width()) {
    // Old Caffe stored every blob as 4-d: a bias of 10 as 1 x 1 x 1 x 10. As
    // Caffe does, compare our shape padded with leading 1s to four axes.
    if (num_axes() > 4) return false;
    std::vector<int> padded(shape_);
    padded.insert(padded.begin(), 4 - padded.size(), 1);
    return padded == blob_proto_shape(proto);
  }
  return blob_proto_shape(proto) == shape_;
}

void Blob::from_proto(const BlobProto& proto, bool reshape_blob) {
  const std::vector<int> proto_shape = blob_proto_shape(proto);
  if (reshape_blob) {
    reshape(proto_shape);
  } else {
    XTRAIN_CHECK(shape_equals(proto), "stored blob has shape ", shape_to_string(proto_shape),
                 " but ", shape_to_string(shape_), " was expected");
  }
  float* data = mutable_cpu_data();
  if (proto.double_data_size() > 0) {
    XTRAIN_CHECK(static_cast<std::size_t>(proto.double_data_size()) == count_,
                 "stored blob of shape ", shape_to_string(proto_shape), " holds ",
                 proto.double_data_size(), " values instead of ", count_);
    for (std::size_t i = 0; i < count_; ++i) data[i] = static_cast<float>(proto.double_data(i));
  } else {
    XTRAIN_CHECK(static_cast<std::size_t>(proto.data_size()) == count_, "stored blob of shape ",
                 shape_to_string(proto_shape), " holds ", proto.data_size(), " values instead of ",
                 count_);
    for (std::size_t i = 0; i < count_; ++i) data[i] = proto.data(i);
  }
  if (proto.double_diff_size() > 0 &&
      static_cast<std::size_t>(proto.double_diff_size()) == count_) {
    float* diff = mutable_cpu_diff();
    for (std::size_t i = 0; i < count_; ++i) diff[i] = static_cast<float>(proto.double_diff(i));
  } else if (proto.diff_size() > 0 && static_cast<std::size_t>(proto.diff_size()) == count_) {
    float* diff = mutable_cpu_diff();
    for (std::size_t i = 0; i < count_; ++i) diff[i] = proto.diff(i);
  }
}

void Blob::to_proto(BlobProto* proto, bool write_diff) const {
  proto->Clear();
  for (int dim : shape_) proto->mutable_shape()->add_dim(dim);
  proto->mutable_data()->Reserve(static_cast<int>(count_));
  const float* data = count_ ? cpu_data() : nullptr;
  for (std::size_t i = 0; i < count_; ++i) proto->add_data(data[i]);
  if (write_diff) {
    const float* diff = count_ ? cpu_diff() : nullptr;
    for (std::size_t i = 0; i < count_; ++i) proto->add_diff(diff[i]);
  }
}

}  // namespace xtrain
