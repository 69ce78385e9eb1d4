// Net: a graph of layers built from a NetParameter.
//
// Building a net (1) keeps the layers whose include/exclude rules match the
// net's state (phase, level, stages), (2) inserts Split layers where one blob
// feeds several layers, (3) creates the layers in order, wiring blobs by name
// (a top with the name of its bottom is computed in place), (4) works out
// which layers need backward, and (5) shares parameters named alike in
// ParamSpec.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"
#include "xtrain/export.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

class ActivationPacking;  // core/activation_packing.hpp

struct XTRAIN_API NetOptions {
  // Seed of every random stream in the net (each layer gets its own, derived
  // from this seed and the layer's position).
  std::uint64_t random_seed = 1701;
  Device device = Device::cpu();
  // Print each layer and blob as the net is built.
  bool verbose = true;
  // Let blobs whose lifetimes do not overlap share storage: diffs in a TRAIN
  // net (on the CPU also the data of blobs no backward pass reads), data in
  // a TEST net, which then runs forward only (backward() throws)
  // (core/net_memory_plan.hpp). Off by default, since a program that reads an
  // intermediate blob after forward or backward would then find another
  // blob's values there; name such blobs in keep_blobs. The net's inputs,
  // outputs and losses always keep their own.
  bool share_activation_memory = false;
  std::vector<std::string> keep_blobs;
  // On the CPU, let a layer that writes its top in place (an Eltwise sum, a
  // Scale) take over the in-place ReLU right after it, and a BatchNorm with
  // batch statistics the in-place Scale after it (with its ReLU) when the
  // Scale reads BatchNorm's kept copy (share_kept_copies): same results bit
  // for bit, fewer sweeps over the blob. The layers taken over stay in the
  // net and do nothing.
  bool fuse_layers = true;
  // On the CPU, let an in-place layer that keeps a copy of its bottom for
  // backward read the copy the layer just before keeps of the same values
  // instead: Caffe's Convolution -> BatchNorm -> Scale chains keep one copy
  // of the normalised values, not two. Same results bit for bit.
  bool share_kept_copies = true;
  // On the CPU, keep activations channel-blocked (oneDNN's nChw16c at AVX-512,
  // nChw8c below) between layers that compute in that layout:
  // a convolution, its pooling and ReLU and the next convolution pass them on
  // without reordering. Same results bit for bit; a program reading such a
  // blob through the plain accessors gets the plain values (converted then).
  bool channel_blocked_activations = true;
  // Data-parallel replicas: this net's slice of each global batch (see
  // DataShard in xtrain/layer.hpp), given to every layer.
  DataShard data_shard;
  // Mixed precision for the whole net, replacing what its fields say
  // (`--precision`; xtrain/precision.hpp). Unset: the fields decide.
  std::optional<NumberType> precision;
};

class XTRAIN_API Net {
 public:
  // `param.state()` selects the layers; see filter_net().
  explicit Net(const NetParameter& param, const NetOptions& options = {});
  // Reads a prototxt file; phase, level and stages override its state.
  Net(const std::string& prototxt_path, Phase phase, int level = 0,
      const std::vector<std::string>& stages = {}, const NetOptions& options = {});

  // Runs every layer forward; returns the total weighted loss.
  float forward();
  // Runs backward from the losses down to the inputs and parameters.
  void backward();
  // The same, calling layer_done(i) after layer i's turn, from the last layer
  // to the first (layers that need no backward included): from then on the
  // pass no longer changes the gradients of layer i's own parameters, so
  // data-parallel training can start summing them while backward goes on.
  // (A parameter shared by several layers is final after the first of them.
  // A layer whose work the layer before it does -- NetOptions::fuse_layers --
  // is reported right after that one.)
  void backward(const std::function<void(int layer)>& layer_done);
  float forward_backward();
  // Re-runs every layer's reshape (after an input changed shape).
  void reshape();
  // Sets every learnable parameter's diff to zero.
  void clear_param_diffs();

  // Loss scaling (NetParameter.global_grad_scale; the solver keeps the
  // scale): backward() computes the gradients of `scale` times the loss, so
  // that small gradients survive 16-bit storage. The caller divides them by
  // the scale again before using them. forward()'s loss is never scaled.
  void set_loss_scale(float scale);
  float loss_scale() const { return loss_scale_; }
  // Whether any layer stores or multiplies in a 16-bit type.
  bool mixed_precision() const { return mixed_precision_; }
  // The layers' precisions in a few words: "fp32", "bf16", or the most
  // common one with the others counted ("fp16 (2 of 25 layers fp32)").
  std::string precision_summary() const;

  // Copies weights from a trained net, by layer name. Layers the other net
  // lacks are left as they are; a layer whose blob shapes differ throws an
  // Error that names the layer and both shapes.
  void copy_trained_layers_from(const NetParameter& trained);
  // Reads a .caffemodel (binary) or a prototxt with weights.
  void copy_trained_layers_from(const std::string& weights_path);
  // Makes this net use the same parameter blobs as `other` (by layer name).
  void share_trained_layers_with(const Net& other);

  void to_proto(NetParameter* param, bool write_diff = false) const;
  // Writes the weights (and the diffs if `write_diff`) as a .caffemodel.h5
  // in Caffe's HDF5 layout (Caffe's Net::ToHDF5). Throws xtrain::Error.
  void to_hdf5(const std::string& path, bool write_diff = false) const;

  // Exact resume: each layer's state beyond its blobs (its random stream, a
  // data layer's position; see Layer::save_resume_state).
  void save_resume_state(NetResumeState* state) const;
  // Applies the states to the layers of the same name and returns the names
  // of this net's layers the state has nothing for (they keep their state).
  std::vector<std::string> restore_resume_state(const NetResumeState& state);

  const std::string& name() const { return name_; }
  Phase phase() const { return phase_; }
  const std::vector<std::shared_ptr<Layer>>& layers() const { return layers_; }
  const std::vector<std::string>& layer_names() const { return layer_names_; }
  const std::vector<std::shared_ptr<Blob>>& blobs() const { return blobs_; }
  const std::vector<std::string>& blob_names() const { return blob_names_; }
  const std::vector<BlobVec>& bottom_vecs() const { return bottom_vecs_; }
  const std::vector<BlobVec>& top_vecs() const { return top_vecs_; }
  // Blob indices (into blobs()) of each layer's tops and bottoms.
  const std::vector<std::vector<int>>& top_id_vecs() const { return top_id_vecs_; }
  const std::vector<std::vector<int>>& bottom_id_vecs() const { return bottom_id_vecs_; }
  // The loss weight of each blob (0 for blobs that are not losses).
  const std::vector<float>& blob_loss_weights() const { return blob_loss_weights_; }
  const BlobVec& output_blobs() const { return net_output_blobs_; }
  const std::vector<int>& output_blob_indices() const { return net_output_blob_indices_; }
  const BlobVec& input_blobs() const { return net_input_blobs_; }
  bool layer_needs_backward(int layer) const { return layer_need_backward_[layer]; }
  // For each layer, which of its bottoms get a gradient in backward().
  const std::vector<std::vector<bool>>& bottom_need_backward() const {
    return bottom_need_backward_;
  }

  bool has_blob(const std::string& name) const;
  // Throws xtrain::Error if there is no such blob.
  std::shared_ptr<Blob> blob_by_name(const std::string& name) const;
  bool has_layer(const std::string& name) const;
  std::shared_ptr<Layer> layer_by_name(const std::string& name) const;

  // All parameter blobs, one entry per layer-blob (shared ones repeat).
  const std::vector<std::shared_ptr<Blob>>& params() const { return params_; }
  // The distinct parameters the solver updates (owners of shared ones).
  const std::vector<Blob*>& learnable_params() const { return learnable_params_; }
  const std::vector<float>& params_lr() const { return params_lr_; }
  const std::vector<float>& params_weight_decay() const { return params_weight_decay_; }
  // For each entry of params(): its index in learnable_params().
  const std::vector<int>& learnable_param_ids() const { return learnable_param_ids_; }
  // For each entry of params(): -1 if it owns its blob, else the owner's index.
  const std::vector<int>& param_owners() const { return param_owners_; }
  // "layer/index" names of params(), for messages.
  const std::vector<std::string>& param_display_names() const { return param_display_names_; }

 private:
  void init(const NetParameter& param);
  void append_top(const NetParameter& param, int layer_id, int top_id,
                  std::map<std::string, int>* blob_name_to_idx);
  int append_bottom(const NetParameter& param, int layer_id, int bottom_id,
                    std::map<std::string, int>* blob_name_to_idx,
                    std::vector<std::string>* available_blobs);
  void append_param(const NetParameter& param, int layer_id, int param_id);
  void compute_backward_needs(const NetParameter& param);
  void share_activation_memory();
  void fuse_in_place_relus();
  void share_kept_copies();
  void fuse_batch_norm_scales();
  void arrange_channel_blocked_activations(bool log);
  // Which tops each layer stores in its forward type (net_precision.cpp).
  void assign_top_storage();
  void assign_arrival_types(const std::vector<std::vector<NumberType>>& storage);
  void say_once_how_this_cpu_computes_bfloat16() const;

  NetOptions options_;
  std::string name_;
  Phase phase_ = TRAIN;
  std::vector<std::shared_ptr<Layer>> layers_;
  std::vector<std::string> layer_names_;
  std::map<std::string, int> layer_names_index_;
  std::vector<bool> layer_need_backward_;
  // Per layer: the layers whose tops are written again just before its
  // backward, because the memory plan lent their storage out in between.
  std::vector<std::vector<int>> recompute_before_backward_;
  // 16-bit values the memory plan packs between the passes (null: none).
  std::shared_ptr<ActivationPacking> activation_packing_;
  std::vector<std::shared_ptr<Blob>> blobs_;
  std::vector<std::string> blob_names_;
  std::map<std::string, int> blob_names_index_;
  std::vector<bool> blob_need_backward_;
  std::vector<BlobVec> bottom_vecs_;
  std::vector<std::vector<int>> bottom_id_vecs_;
  std::vector<std::vector<bool>> bottom_need_backward_;
  std::vector<BlobVec> top_vecs_;
  std::vector<std::vector<int>> top_id_vecs_;
  std::vector<float> blob_loss_weights_;
  std::vector<std::vector<int>> param_id_vecs_;
  std::vector<int> param_owners_;
  std::vector<std::string> param_display_names_;
  std::vector<std::pair<int, int>> param_layer_indices_;
  std::map<std::string, int> param_names_index_;
  std::vector<int> net_input_blob_indices_;
  std::vector<int> net_output_blob_indices_;
  BlobVec net_input_blobs_;
  BlobVec net_output_blobs_;
  std::vector<std::shared_ptr<Blob>> params_;
  std::vector<Blob*> learnable_params_;
  std::vector<int> learnable_param_ids_;
  std::vector<float> params_lr_;
  std::vector<float> params_weight_decay_;
  std::vector<bool> has_params_lr_;
  std::vector<bool> has_params_decay_;
  float loss_scale_ = 1.0f;
  bool mixed_precision_ = false;
};

// The layers of `param` whose rules match its state (phase, level, stages).
XTRAIN_API NetParameter filter_net(const NetParameter& param);
// Whether `state` satisfies `rule` (all of phase, level range and stages).
XTRAIN_API bool state_meets_rule(const NetState& state, const NetStateRule& rule);
// A copy of `param` with a Split layer after every blob consumed more than once.
XTRAIN_API NetParameter insert_splits(const NetParameter& param);
// Caffe's names for a split layer and its tops.
XTRAIN_API std::string split_layer_name(const std::string& layer_name, const std::string& blob_name,
                                        int blob_index);
XTRAIN_API std::string split_blob_name(const std::string& layer_name, const std::string& blob_name,
                                       int blob_index, int split_index);

}  // namespace xtrain
