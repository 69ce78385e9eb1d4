#include "xtrain/mean_accumulator.hpp"

#include "xtrain/error.hpp"

namespace xtrain {

MeanAccumulator::MeanAccumulator(const DatumShape& shape) : shape_(shape), sums_(shape.count()) {
  XTRAIN_CHECK(shape.channels > 0 && shape.height > 0 && shape.width > 0,
               "cannot average images of shape ", shape.to_string(),
               "; every dimension must be positive");
}

namespace {
// The most uint8 images whose sum fits a uint32: 255 * n <= 2^32 - 1.
constexpr std::size_t kImagesPerPixelSum = 0xFFFFFFFFu / 255u;
}  // namespace

void MeanAccumulator::add(const std::uint8_t* pixels) {
  if (pixel_sums_.empty()) pixel_sums_.assign(sums_.size(), 0);
  if (images_in_pixel_sums_ == kImagesPerPixelSum) fold_pixel_sums();
  const std::size_t size = pixel_sums_.size();
  std::uint32_t* sums = pixel_sums_.data();
  for (std::size_t i = 0; i < size; ++i) sums[i] += pixels[i];
  ++images_in_pixel_sums_;
  ++count_;
}

void MeanAccumulator::fold_pixel_sums() {
  if (images_in_pixel_sums_ == 0) return;
  for (std::size_t i = 0; i < sums_.size(); ++i) {
    sums_[i] += pixel_sums_[i];
    pixel_sums_[i] = 0;
  }
  images_in_pixel_sums_ = 0;
}

void MeanAccumulator::add(const float* values) {
  const std::size_t size = sums_.size();
  double* sums = sums_.data();
  for (std::size_t i = 0; i < size; ++i) sums[i] += values[i];
  ++count_;
}

void MeanAccumulator::merge(const MeanAccumulator& other) {
  XTRAIN_CHECK(other.shape_ == shape_, "cannot merge the mean of ", other.shape_.to_string(),
               " images into the mean of ", shape_.to_string(), " images");
  for (std::size_t i = 0; i < sums_.size(); ++i) sums_[i] += other.total(i);
  count_ += other.count_;
}

std::vector<float> MeanAccumulator::mean() const {
  XTRAIN_CHECK(count_ > 0, "no image was added, so there is no mean");
  std::vector<float> mean(sums_.size());
  const double scale = 1.0 / static_cast<double>(count_);
  for (std::size_t i = 0; i < sums_.size(); ++i) mean[i] = static_cast<float>(total(i) * scale);
  return mean;
}

std::vector<double> MeanAccumulator::channel_means() const {
  XTRAIN_CHECK(count_ > 0, "no image was added, so there is no mean");
  const std::size_t plane = static_cast<std::size_t>(shape_.height) * shape_.width;
  std::vector<double> means(shape_.channels, 0.0);
  for (int c = 0; c < shape_.channels; ++c) {
    double sum = 0;
    for (std::size_t i = 0; i < plane; ++i) sum += total(c * plane + i);
    means[c] = sum / (static_cast<double>(count_) * static_cast<double>(plane));
  }
  return means;
}

BlobProto MeanAccumulator::to_blob_proto() const {
  BlobProto proto;
  proto.set_num(1);
  proto.set_channels(shape_.channels);
  proto.set_height(shape_.height);
  proto.set_width(shape_.width);
  const std::vector<float> values = mean();
  proto.mutable_data()->Add(values.begin(), values.end());
  return proto;
}

}  // namespace xtrain
