// Which tops of a mixed-precision net are stored in their layer's 16-bit
// forward type and which must stay exact (xtrain/precision.hpp):
//   - what a layer without bottoms produces (data, labels, inputs), and what
//     layers without learnable parameters compute from such values alone
//     (a Split, Slice or Reshape of the labels): labels above 256 are not
//     integers in bf16 (which has 8 significant bits), nor above 2048 in fp16;
//   - the tops of layers that output integers or scores the user reads
//     (ArgMax's indices, Accuracy, detections) and every loss;
//   - the net's outputs, as the user reads them.
// Everything else a 16-bit layer computes is stored in its forward type.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

// Layers whose tops hold only values of their bottoms (copies, views,
// selections, maxima, zeros): from bottoms stored in a type, their tops are
// in that type already. And those whose bottoms' gradients are only copies
// or selections of their tops' gradients.
bool forward_keeps_values(const Layer& layer) {
  static const std::set<std::string> kinds = {"Split", "Flatten", "Reshape", "Concat",
                                              "Slice", "Crop",    "Permute", "BatchReindex",
                                              "Tile",  "Filter",  "AbsVal"};
  const LayerParameter& param = layer.layer_param();
  const std::string type = layer.type();
  if (kinds.count(type) > 0) return true;
  if (type == "ReLU") return param.relu_param().negative_slope() == 0;
  if (type == "Pooling") return param.pooling_param().pool() == PoolingParameter::MAX;
  if (type == "Dropout") return layer.phase() == TEST;
  if (type == "Eltwise") return param.eltwise_param().operation() == EltwiseParameter::MAX;
  return false;
}

bool backward_keeps_gradients(const Layer& layer) {
  static const std::set<std::string> kinds = {"Flatten", "Reshape", "Concat", "Slice",
                                              "Crop",    "Permute", "Filter"};
  const LayerParameter& param = layer.layer_param();
  const std::string type = layer.type();
  if (kinds.count(type) > 0) return true;
  if (type == "ReLU") return param.relu_param().negative_slope() == 0;
  if (type == "Dropout") return layer.phase() == TEST;
  if (type == "Eltwise") {
    const EltwiseParameter& eltwise = param.eltwise_param();
    if (eltwise.operation() == EltwiseParameter::MAX) return true;
    if (eltwise.operation() != EltwiseParameter::SUM) return false;
    for (float coefficient : eltwise.coeff()) {
      if (coefficient != 1) return false;
    }
    return true;  // each bottom's gradient is the top's
  }
  return false;
}

bool outputs_exact_values(const Layer& layer) {
  static const std::set<std::string> kinds = {"ArgMax", "Accuracy", "DetectionOutput",
                                              "DetectionEvaluate", "YoloDetectionOutput"};
  return kinds.count(layer.type()) > 0;
}

}  // namespace

void Net::assign_top_storage() {
  std::vector<bool> exact(blobs_.size(), false);
  // The type each blob's values are in as the next reader finds them.
  std::vector<NumberType> stored(blobs_.size(), NumberType::kFloat32);
  std::vector<bool> tops_need_rounding(layers_.size(), true);
  std::vector<std::vector<NumberType>> storage(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = *layers_[i];
    bool from_exact_values_alone = !bottom_id_vecs_[i].empty() && layer.blobs().empty();
    for (int blob_id : bottom_id_vecs_[i]) {
      from_exact_values_alone = from_exact_values_alone && exact[static_cast<std::size_t>(blob_id)];
    }
    const bool source = bottom_id_vecs_[i].empty();
    bool bottoms_in_type = forward_keeps_values(layer) && !bottom_id_vecs_[i].empty();
    for (int blob_id : bottom_id_vecs_[i]) {
      bottoms_in_type = bottoms_in_type &&
                        stored[static_cast<std::size_t>(blob_id)] == layer.precision().forward_type;
    }
    tops_need_rounding[i] = !bottoms_in_type;
    for (std::size_t t = 0; t < top_id_vecs_[i].size(); ++t) {
      const auto blob_id = static_cast<std::size_t>(top_id_vecs_[i][t]);
      const bool keep_exact = source || from_exact_values_alone || outputs_exact_values(layer) ||
                              layer.loss(static_cast<int>(t)) != 0;
      exact[blob_id] = keep_exact;
      storage[i].push_back(keep_exact ? NumberType::kFloat32 : layer.precision().forward_type);
      stored[blob_id] = storage[i].back();
    }
  }
  // Every layer that writes an output blob (an in-place chain writes it
  // several times) leaves it exact.
  const std::set<int> outputs(net_output_blob_indices_.begin(), net_output_blob_indices_.end());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    for (std::size_t t = 0; t < top_id_vecs_[i].size(); ++t) {
      if (outputs.count(top_id_vecs_[i][t]) > 0) storage[i][t] = NumberType::kFloat32;
    }
    layers_[i]->set_top_storage(storage[i]);
  }
  assign_arrival_types(storage);
  // A layer that passes its tops' gradients on needs no rounding when every
  // reader of its tops wrote them in its backward type (no loss weight).
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const NumberType type = layers_[i]->precision().backward_type;
    bool gradients_in_type = backward_keeps_gradients(*layers_[i]);
    for (int blob_id : top_id_vecs_[i]) {
      gradients_in_type =
          gradients_in_type && blob_loss_weights_[static_cast<std::size_t>(blob_id)] == 0;
      for (std::size_t j = i + 1; j < layers_.size() && gradients_in_type; ++j) {
        for (int bottom_id : bottom_id_vecs_[j]) {
          if (bottom_id == blob_id && layers_[j]->precision().backward_type != type) {
            gradients_in_type = false;
          }
        }
      }
    }
    layers_[i]->set_rounding_needed(tops_need_rounding[i], !gradients_in_type);
  }
}

// What each layer finds in its bottoms and its tops' gradients (see
// Layer::set_arrival_types), from the final storage of every top.
void Net::assign_arrival_types(const std::vector<std::vector<NumberType>>& storage) {
  std::vector<NumberType> current(blobs_.size(), NumberType::kFloat32);
  std::vector<std::vector<NumberType>> bottoms(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    for (int blob_id : bottom_id_vecs_[i]) bottoms[i].push_back(current[blob_id]);
    for (std::size_t t = 0; t < top_id_vecs_[i].size(); ++t) {
      current[top_id_vecs_[i][t]] = storage[i][t];
    }
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    // Backward reads a bottom again: an in-place layer after this one that
    // leaves another type in it makes its values unknown.
    for (std::size_t b = 0; b < bottoms[i].size(); ++b) {
      const int blob_id = bottom_id_vecs_[i][b];
      for (std::size_t j = i + 1; j < layers_.size(); ++j) {
        for (std::size_t t = 0; t < top_id_vecs_[j].size(); ++t) {
          if (top_id_vecs_[j][t] == blob_id && storage[j][t] != bottoms[i][b]) {
            bottoms[i][b] = NumberType::kFloat32;
          }
        }
      }
    }
    // A top's gradient is in a type when every later reader of the blob
    // rounds what it writes there to that type (Layer::backward, or passes
    // on gradients in it) and no loss weight is preset in it.
    std::vector<NumberType> top_gradients;
    for (int blob_id : top_id_vecs_[i]) {
      std::optional<NumberType> type;
      bool agree = blob_loss_weights_[static_cast<std::size_t>(blob_id)] == 0;
      for (std::size_t j = i + 1; j < layers_.size() && agree; ++j) {
        for (int bottom_id : bottom_id_vecs_[j]) {
          if (bottom_id != blob_id) continue;
          const NumberType reader = layers_[j]->precision().backward_type;
          agree = !type || *type == reader;
          type = reader;
        }
      }
      top_gradients.push_back(agree && type ? *type : NumberType::kFloat32);
    }
    layers_[i]->set_arrival_types(std::move(bottoms[i]), std::move(top_gradients));
  }
}

void Net::say_once_how_this_cpu_computes_bfloat16() const {
  bool any_bfloat16 = false;
  for (const auto& layer : layers_) {
    const LayerPrecision& precision = layer->precision();
    any_bfloat16 = any_bfloat16 || precision.forward_type == NumberType::kBfloat16 ||
                   precision.backward_type == NumberType::kBfloat16;
  }
  if (!any_bfloat16 || cpu_computes_bfloat16_natively()) return;
  static std::once_flag said;
  std::call_once(said, [] {
    XLOG(WARNING) << "This CPU has no bf16 instructions (AVX512-BF16 or AMX), or they are capped "
                     "(XTRAIN_MAX_CPU_ISA, ONEDNN_MAX_CPU_ISA): bf16 convolutions and inner "
                     "products compute in fp32 on operands rounded to bf16 (emulation): the same "
                     "numbers, more slowly";
  });
}

std::string Net::precision_summary() const {
  std::map<std::string, int> layers_by_precision;
  for (const auto& layer : layers_) ++layers_by_precision[layer->precision().to_string()];
  if (layers_by_precision.empty()) return "fp32";
  auto most = layers_by_precision.begin();
  for (auto it = layers_by_precision.begin(); it != layers_by_precision.end(); ++it) {
    if (it->second > most->second) most = it;
  }
  std::string summary = most->first;
  if (layers_by_precision.size() == 1) return summary;
  std::string others;
  for (const auto& [precision, count] : layers_by_precision) {
    if (precision == most->first) continue;
    others += detail::concat(others.empty() ? "" : ", ", count, " of ", layers_.size(), " layers ",
                             precision);
  }
  return summary + " (" + others + ")";
}

}  // namespace xtrain
