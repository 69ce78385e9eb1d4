// MemoryDataLayer (type "MemoryData"): batches from arrays an application
// hands over, for C++ programs that produce their own input.
//
//   layer { name: "data" type: "MemoryData" top: "data" top: "label"
//           memory_data_param { batch_size: 32 channels: 3 height: 32 width: 32 } }
//
// Tops: data (batch_size, channels, height, width) and label (batch_size).
// reset(data, labels, n) gives n images (n a multiple of batch_size) of
// channels * height * width floats each, C x H x W, one after the other,
// and their n labels. The i-th forward after reset copies images
// [(i * batch_size) mod n, + batch_size) and their labels to the tops, so
// the batches wrap around to the first image after the last. As in Caffe,
// the arrays are not copied by reset: they must stay alive (and may be
// changed) until the next reset; no transform_param is applied.
//
// Reaching the layer of a net built from a prototxt:
//
//   #include "xtrain/memory_data_layer.hpp"
//   auto input = std::dynamic_pointer_cast<xtrain::MemoryDataLayer>(
//       net.layer_by_name("data"));
//   input->reset(images.data(), labels.data(), n);
//   net.forward();
#pragma once

#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class XTRAIN_API MemoryDataLayer : public Layer {
 public:
  explicit MemoryDataLayer(const LayerParameter& param) : Layer(param) {}

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "MemoryData"; }
  int exact_num_bottom_blobs() const override { return 0; }
  int exact_num_top_blobs() const override { return 2; }

  // Throws xtrain::Error naming the layer if a pointer is null, n <= 0 or n
  // is not a multiple of the batch size.
  void reset(const float* data, const float* labels, int n);
  // Changes the batch size; the next forward reshapes the tops and starts
  // again from the first image. Throws unless the new size divides the
  // number of images given by the last reset.
  void set_batch_size(int batch_size);

  int batch_size() const { return batch_size_; }
  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }
  // Images given by the last reset (0 before any).
  int num_images() const { return n_; }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  int batch_size_ = 0;
  int channels_ = 0;
  int height_ = 0;
  int width_ = 0;
  std::size_t image_size_ = 0;
  const float* data_ = nullptr;
  const float* labels_ = nullptr;
  int n_ = 0;
  int position_ = 0;  // the next batch's first image
};

}  // namespace xtrain
