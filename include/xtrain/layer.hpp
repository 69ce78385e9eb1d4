// Layer: the unit of computation of a Net.
//
// A layer reads its bottom blobs and writes its top blobs (forward), and turns
// the gradients in its tops' diffs into gradients for its bottoms and its
// learnable parameters (backward). Subclasses implement reshape() and the
// forward/backward kernels; the base class does the bookkeeping every layer
// shares: checking the number of blobs, loss weights, and device dispatch.
//
// That is all a layer of one's own needs (docs/adding-a-layer.md). What the
// CPU engine asks of the built-in layers besides -- fusing the following
// ReLU, channel-blocked layouts, sharing and recomputing kept values, the
// memory plan's questions -- is a separate interface inside the library
// (src/core/engine_hooks.hpp), so that it is not part of the API a layer is
// written against, and can change with the engine; a layer without it is
// computed plainly, with the same results.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"
#include "xtrain/export.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

using BlobVec = std::vector<Blob*>;

// Data-parallel training: a net that is replica `index` of `count` computes
// one slice of every global batch, the one of items [index * B, (index + 1)
// * B) where B is its own batch size. Its data layers read only those
// records, and layers that draw random numbers per item (Dropout) draw them
// by global item, so that `count` replicas with batch B compute what one net
// with batch count * B computes.
struct XTRAIN_API DataShard {
  int index = 0;
  int count = 1;
};

class XTRAIN_API Layer {
 public:
  explicit Layer(const LayerParameter& param);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Checks the blob counts, runs layer_setup() and reshape(), and sets up the
  // loss weights of the tops. Called once, by the Net, before any forward.
  void setup(const BlobVec& bottom, const BlobVec& top);

  // One-time initialisation: read parameters, create and fill learnable blobs.
  virtual void layer_setup(const BlobVec& bottom, const BlobVec& top) {
    (void)bottom;
    (void)top;
  }
  // Shapes the tops (and internal buffers) from the bottoms' shapes.
  virtual void reshape(const BlobVec& bottom, const BlobVec& top) = 0;

  // Computes the tops and returns this layer's weighted loss (0 if none).
  float forward(const BlobVec& bottom, const BlobVec& top);
  // propagate_down[i]: whether bottom[i] needs a gradient.
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom);

  virtual const char* type() const = 0;
  const std::string& name() const { return param_.name(); }
  const LayerParameter& layer_param() const { return param_; }
  Phase phase() const { return param_.phase(); }

  // Learnable parameters (weights, biases, ...), in the order Caffe stores them.
  std::vector<std::shared_ptr<Blob>>& blobs() { return blobs_; }
  const std::vector<std::shared_ptr<Blob>>& blobs() const { return blobs_; }

  // Whether backward should compute the gradient of learnable blob i.
  bool param_propagate_down(int i) const;
  void set_param_propagate_down(int i, bool value);

  float loss(int top_index) const;
  void set_loss(int top_index, float weight);

  // Blob-count constraints; -1 means "no constraint".
  virtual int exact_num_bottom_blobs() const { return -1; }
  virtual int min_bottom_blobs() const { return -1; }
  virtual int max_bottom_blobs() const { return -1; }
  virtual int exact_num_top_blobs() const { return -1; }
  virtual int min_top_blobs() const { return -1; }
  virtual int max_top_blobs() const { return -1; }
  virtual bool equal_num_bottom_top_blobs() const { return false; }
  // If true, the Net creates anonymous tops up to the minimum count.
  virtual bool auto_top_blobs() const { return false; }
  // Whether force_backward may ask for the gradient of bottom i (e.g. not for
  // labels).
  virtual bool allow_force_backward(int bottom_index) const {
    (void)bottom_index;
    return true;
  }

  // The device the kernels run on (set by the Net before setup).
  void set_device(const Device& device) { device_ = device; }
  const Device& device() const { return device_; }

  // This net's slice of a data-parallel batch (set by the Net before setup).
  void set_data_shard(const DataShard& shard) { data_shard_ = shard; }
  const DataShard& data_shard() const { return data_shard_; }

  // Mixed precision (xtrain/precision.hpp), set by the Net before setup: the
  // layer's number types. With a 16-bit forward_type, forward() rounds each
  // top to its storage type (set_top_storage; every top by default) once
  // the layer has computed it; with a 16-bit backward_type, backward()
  // rounds the gradients it wrote (the bottoms' and the parameters').
  void set_precision(const LayerPrecision& precision);
  const LayerPrecision& precision() const { return precision_; }
  // How each top is stored: forward_type, or kFloat32 for the values that
  // must stay exact (the Net decides which; see xtrain/precision.hpp).
  void set_top_storage(std::vector<NumberType> storage) { top_storage_ = std::move(storage); }
  NumberType top_storage(int top_index) const;
  // The type each bottom's values arrive in (the storage of its writers,
  // forward and recomputed) and each top's gradient (what its readers'
  // backward passes round it to), as the Net found them; kFloat32 where
  // they may be exact fp32. A layer whose products take operands rounded to
  // its type copies only those that are not in it already (RoundedOperand).
  void set_arrival_types(std::vector<NumberType> bottoms, std::vector<NumberType> top_gradients) {
    bottom_arrival_ = std::move(bottoms);
    top_gradient_arrival_ = std::move(top_gradients);
  }
  NumberType bottom_arrives_in(int bottom_index) const;
  NumberType top_gradient_arrives_in(int top_index) const;
  // Rounds the tops to their storage types: what forward() ends with, and
  // what the Net does after writing a top again (a recomputed one).
  void store_tops(const BlobVec& top);
  // Set by the Net where rounding would change nothing: a layer that only
  // passes on values of its bottoms (a Split, a Concat, a ReLU, a max
  // pooling) from bottoms already stored in its type, or gradients of its
  // tops already stored in its backward type.
  void set_rounding_needed(bool tops, bool gradients) {
    round_tops_ = tops;
    round_gradients_ = gradients;
  }
  bool rounds_tops() const { return round_tops_; }
  bool rounds_gradients() const { return round_gradients_; }

  // The layer's own random stream (fillers, dropout masks, augmentation).
  RandomStream& random() { return random_; }
  const RandomStream& random() const { return random_; }
  void seed(std::uint64_t seed) { random_.reseed(seed); }

  // Writes the parameter and the learnable blobs.
  virtual void to_proto(LayerParameter* param, bool write_diff = false) const;

  // Exact resume. A snapshot keeps, for every layer, its random stream plus
  // whatever save_resume_state() adds (a data layer's position in its
  // source); restore_resume_state() puts both back, so training continues
  // with the same numbers as if it had never stopped. The defaults keep the
  // random stream only. Overrides call the base version first.
  virtual void save_resume_state(LayerResumeState* state) const;
  // Throws xtrain::Error if the state cannot be applied (e.g. a data layer
  // that already started reading).
  virtual void restore_resume_state(const LayerResumeState& state);

 protected:
  virtual void forward_cpu(const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) = 0;
  // GPU kernels fall back to the CPU ones until a layer provides its own.
  virtual void forward_gpu(const BlobVec& bottom, const BlobVec& top) { forward_cpu(bottom, top); }
  virtual void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
    backward_cpu(top, propagate_down, bottom);
  }

  // "layer 'conv1' (Convolution)": the prefix of every error a layer raises.
  std::string where() const;

  LayerParameter param_;
  std::vector<std::shared_ptr<Blob>> blobs_;
  std::vector<bool> param_propagate_down_;
  std::vector<float> loss_;

 private:
  void check_blob_counts(const BlobVec& bottom, const BlobVec& top) const;
  void set_loss_weights(const BlobVec& top);

  void store_gradients(const std::vector<bool>& propagate_down, const BlobVec& bottom);

  Device device_;
  DataShard data_shard_;
  LayerPrecision precision_;
  std::vector<NumberType> top_storage_;
  std::vector<NumberType> bottom_arrival_;
  std::vector<NumberType> top_gradient_arrival_;
  bool round_tops_ = true;
  bool round_gradients_ = true;
  RandomStream random_;
};

}  // namespace xtrain
