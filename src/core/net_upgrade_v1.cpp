// V1 -> V2 net upgrade: each `layers` entry becomes a `layer`.
//
//   type: CONVOLUTION              -> type: "Convolution"
//   param: "w" (one per blob)      -> param { name: "w" }
//   blob_share_mode: PERMISSIVE    -> param { share_mode: PERMISSIVE }
//   blobs_lr: 2                    -> param { lr_mult: 2 }
//   weight_decay: 0                -> param { decay_mult: 0 }
//
// The i-th entry of each of the four lists fills the i-th ParamSpec. Names,
// bottoms, tops, include/exclude rules, loss weights, blobs and every
// *_param message carry over unchanged.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <map>

#include "core/net_upgrade.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

std::string layer_label(const V1LayerParameter& layer, int index) {
  return layer.has_name() ? "'" + layer.name() + "'" : "#" + std::to_string(index);
}

// The ParamSpec for blob `index`, adding empty ones up to it.
ParamSpec* param_spec(LayerParameter* layer, int index) {
  while (layer->param_size() <= index) layer->add_param();
  return layer->mutable_param(index);
}

// Every *_param message of the V1 layer has a namesake of the same message
// type in LayerParameter; copy the ones that are set.
void copy_typed_parameters(const V1LayerParameter& from, LayerParameter* to) {
  using google::protobuf::FieldDescriptor;
  std::vector<const FieldDescriptor*> set_fields;
  from.GetReflection()->ListFields(from, &set_fields);
  const auto* target_type = LayerParameter::descriptor();
  for (const FieldDescriptor* field : set_fields) {
    const std::string& name = field->name();
    const bool is_typed_param = field->type() == FieldDescriptor::TYPE_MESSAGE && name.size() > 6 &&
                                name.compare(name.size() - 6, 6, "_param") == 0;
    if (!is_typed_param) continue;
    const FieldDescriptor* target = target_type->FindFieldByName(name);
    XTRAIN_ASSERT(target != nullptr && target->message_type() == field->message_type(),
                  "V1LayerParameter.", name, " has no LayerParameter counterpart");
    to->GetReflection()
        ->MutableMessage(to, target)
        ->CopyFrom(from.GetReflection()->GetMessage(from, field));
  }
}

void upgrade_v1_layer(const std::string& source, const V1LayerParameter& v1, int index,
                      LayerParameter* layer) {
  XTRAIN_CHECK(!v1.has_layer(), "'", source, "': layer ", layer_label(v1, index),
               " mixes the V1 and V0 formats (a `layer { ... }` inside a V1 layer)");
  if (v1.has_name()) layer->set_name(v1.name());
  if (v1.has_type()) {
    XTRAIN_CHECK(v1.type() != V1LayerParameter::NONE, "'", source, "': layer ",
                 layer_label(v1, index),
                 " has the V1 type NONE, which names no layer; give it a real type");
    layer->set_type(v1_layer_type_name(v1.type()));
  }
  *layer->mutable_bottom() = v1.bottom();
  *layer->mutable_top() = v1.top();
  *layer->mutable_include() = v1.include();
  *layer->mutable_exclude() = v1.exclude();
  *layer->mutable_loss_weight() = v1.loss_weight();
  *layer->mutable_blobs() = v1.blobs();

  for (int i = 0; i < v1.param_size(); ++i) param_spec(layer, i)->set_name(v1.param(i));
  for (int i = 0; i < v1.blob_share_mode_size(); ++i) {
    // Both DimCheckMode enums number STRICT and PERMISSIVE alike.
    param_spec(layer, i)->set_share_mode(
        static_cast<ParamSpec::DimCheckMode>(v1.blob_share_mode(i)));
  }
  for (int i = 0; i < v1.blobs_lr_size(); ++i) param_spec(layer, i)->set_lr_mult(v1.blobs_lr(i));
  for (int i = 0; i < v1.weight_decay_size(); ++i) {
    param_spec(layer, i)->set_decay_mult(v1.weight_decay(i));
  }
  copy_typed_parameters(v1, layer);
}

}  // namespace

std::string v1_layer_type_name(V1LayerParameter::LayerType type) {
  static const std::map<V1LayerParameter::LayerType, std::string> kNames = {
      {V1LayerParameter::ABSVAL, "AbsVal"},
      {V1LayerParameter::ACCURACY, "Accuracy"},
      {V1LayerParameter::ARGMAX, "ArgMax"},
      {V1LayerParameter::BNLL, "BNLL"},
      {V1LayerParameter::CONCAT, "Concat"},
      {V1LayerParameter::CONTRASTIVE_LOSS, "ContrastiveLoss"},
      {V1LayerParameter::CONVOLUTION, "Convolution"},
      {V1LayerParameter::DECONVOLUTION, "Deconvolution"},
      {V1LayerParameter::DATA, "Data"},
      {V1LayerParameter::DROPOUT, "Dropout"},
      {V1LayerParameter::DUMMY_DATA, "DummyData"},
      {V1LayerParameter::EUCLIDEAN_LOSS, "EuclideanLoss"},
      {V1LayerParameter::ELTWISE, "Eltwise"},
      {V1LayerParameter::EXP, "Exp"},
      {V1LayerParameter::FLATTEN, "Flatten"},
      {V1LayerParameter::HDF5_DATA, "HDF5Data"},
      {V1LayerParameter::HDF5_OUTPUT, "HDF5Output"},
      {V1LayerParameter::HINGE_LOSS, "HingeLoss"},
      {V1LayerParameter::IM2COL, "Im2col"},
      {V1LayerParameter::IMAGE_DATA, "ImageData"},
      {V1LayerParameter::INFOGAIN_LOSS, "InfogainLoss"},
      {V1LayerParameter::INNER_PRODUCT, "InnerProduct"},
      {V1LayerParameter::LRN, "LRN"},
      {V1LayerParameter::MEMORY_DATA, "MemoryData"},
      {V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS, "MultinomialLogisticLoss"},
      {V1LayerParameter::MVN, "MVN"},
      {V1LayerParameter::POOLING, "Pooling"},
      {V1LayerParameter::POWER, "Power"},
      {V1LayerParameter::RELU, "ReLU"},
      {V1LayerParameter::SIGMOID, "Sigmoid"},
      {V1LayerParameter::SIGMOID_CROSS_ENTROPY_LOSS, "SigmoidCrossEntropyLoss"},
      {V1LayerParameter::SILENCE, "Silence"},
      {V1LayerParameter::SOFTMAX, "Softmax"},
      {V1LayerParameter::SOFTMAX_LOSS, "SoftmaxWithLoss"},
      {V1LayerParameter::SPLIT, "Split"},
      {V1LayerParameter::SLICE, "Slice"},
      {V1LayerParameter::TANH, "TanH"},
      {V1LayerParameter::WINDOW_DATA, "WindowData"},
      {V1LayerParameter::THRESHOLD, "Threshold"},
  };
  const auto found = kNames.find(type);
  XTRAIN_CHECK(found != kNames.end(), "the V1 layer type ", V1LayerParameter::LayerType_Name(type),
               " has no equivalent layer type");
  return found->second;
}

bool net_needs_v1_to_v2_upgrade(const NetParameter& param) { return param.layers_size() > 0; }

void upgrade_v1_net(const std::string& source, NetParameter* param) {
  check_one_layer_format(source, *param);
  NetParameter upgraded(*param);
  upgraded.clear_layers();
  for (int i = 0; i < param->layers_size(); ++i) {
    upgrade_v1_layer(source, param->layers(i), i, upgraded.add_layer());
  }
  *param = std::move(upgraded);
}

}  // namespace xtrain
