#include "xtrain/memory_data_layer.hpp"

#include <cstring>

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

void MemoryDataLayer::layer_setup(const BlobVec&, const BlobVec& top) {
  const MemoryDataParameter& memory = param_.memory_data_param();
  batch_size_ = static_cast<int>(memory.batch_size());
  channels_ = static_cast<int>(memory.channels());
  height_ = static_cast<int>(memory.height());
  width_ = static_cast<int>(memory.width());
  XTRAIN_CHECK(batch_size_ > 0 && channels_ > 0 && height_ > 0 && width_ > 0, where(),
               ": memory_data_param must give a positive batch_size, channels, height and width "
               "(got ",
               batch_size_, ", ", channels_, ", ", height_, ", ", width_, ")");
  image_size_ = static_cast<std::size_t>(channels_) * height_ * width_;
  reshape({}, top);
}

void MemoryDataLayer::reshape(const BlobVec&, const BlobVec& top) {
  top[0]->reshape(std::vector<int>{batch_size_, channels_, height_, width_});
  top[1]->reshape(std::vector<int>{batch_size_});
}

void MemoryDataLayer::reset(const float* data, const float* labels, int n) {
  XTRAIN_CHECK(data != nullptr && labels != nullptr, where(),
               ": reset needs the data and the labels arrays (got a null pointer)");
  XTRAIN_CHECK(n > 0 && n % batch_size_ == 0, where(), ": reset with ", n,
               " images; the number of images must be a positive multiple of the batch size ",
               batch_size_);
  if (param_.has_transform_param()) {
    XLOG(WARNING) << where() << ": MemoryData does not apply transform_param to reset's arrays";
  }
  data_ = data;
  labels_ = labels;
  n_ = n;
  position_ = 0;
}

void MemoryDataLayer::set_batch_size(int batch_size) {
  XTRAIN_CHECK(batch_size > 0, where(), ": batch size must be positive, got ", batch_size);
  XTRAIN_CHECK(n_ == 0 || n_ % batch_size == 0, where(), ": batch size ", batch_size,
               " does not divide the ", n_,
               " images of the last reset; reset with a multiple of it");
  batch_size_ = batch_size;
  position_ = 0;
}

void MemoryDataLayer::forward_cpu(const BlobVec&, const BlobVec& top) {
  XTRAIN_CHECK(data_ != nullptr, where(),
               ": no data yet; give the layer its arrays with MemoryDataLayer::reset(data, "
               "labels, n) before the forward pass");
  std::memcpy(top[0]->mutable_cpu_data(), data_ + static_cast<std::size_t>(position_) * image_size_,
              static_cast<std::size_t>(batch_size_) * image_size_ * sizeof(float));
  std::memcpy(top[1]->mutable_cpu_data(), labels_ + position_,
              static_cast<std::size_t>(batch_size_) * sizeof(float));
  position_ = (position_ + batch_size_) % n_;
}

void register_memory_data_layer(LayerRegistry& registry) {
  add_layer<MemoryDataLayer>(registry, "MemoryData");
}

}  // namespace xtrain
