// The activations of mobile nets, in the layers Caffe (and xtrain) have:
// - Clip (ReLU6 is Clip(0, 6)): Caffe's Clip; a bound left out is the
//   float range's end, and Clip(0, none) is a ReLU;
// - HardSigmoid, max(0, min(1, alpha x + beta)): Power (scale alpha, shift
//   beta), then Clip(0, 1);
// - HardSwish (opset 14), x · HardSigmoid(x) with alpha 1/6 and beta 1/2:
//   those two layers, then an Eltwise PROD with x. (torch's opset 13
//   export writes it as HardSigmoid and Mul, which import the same way.)
#include <cfloat>
#include <map>

#include "interchange/onnx_node_import.hpp"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

// A Clip bound: opset 11 and later take it as an optional constant input,
// earlier opsets as an attribute.
float clip_bound(const NodeImport& node, int input, const char* attribute, float fallback) {
  if (node.state.opset < 11) return node.float_attribute(attribute, fallback);
  if (!node.has_input(input)) return fallback;
  const onnx::TensorProto& bound =
      node.required_constant(input, input == 1 ? "minimum" : "maximum");
  XTRAIN_CHECK(element_count(bound) == 1, node.where(), ": a ", input == 1 ? "minimum" : "maximum",
               " of ", element_count(bound), " values; only one bound for all values is imported");
  return float_values(bound)[0];
}

void import_clip(NodeImport& node) {
  const float low = clip_bound(node, 1, "min", -FLT_MAX);
  const float high = clip_bound(node, 2, "max", FLT_MAX);
  XTRAIN_CHECK(low <= high, node.where(), ": minimum ", low, " above maximum ", high);
  if (low == 0.0f && high == FLT_MAX) {
    node.add_layer("ReLU", {node.node.input(0)}, {node.node.output(0)});
    return;
  }
  ClipParameter* clip =
      node.add_layer("Clip", {node.node.input(0)}, {node.node.output(0)}).mutable_clip_param();
  clip->set_min(low);
  clip->set_max(high);
}

// alpha x + beta clipped to [0, 1], into `top` (layers "<node>/line" and
// "<node>/clip").
void add_hard_sigmoid(NodeImport& node, float alpha, float beta, const std::string& top) {
  const std::string line = node.node.output(0) + "/line";
  PowerParameter* power = node.add_layer("Power", {node.node.input(0)}, {line}, node.name + "/line")
                              .mutable_power_param();
  power->set_scale(alpha);
  power->set_shift(beta);
  ClipParameter* clip =
      node.add_layer("Clip", {line}, {top}, node.name + "/clip").mutable_clip_param();
  clip->set_min(0.0f);
  clip->set_max(1.0f);
}

void import_hard_sigmoid(NodeImport& node) {
  add_hard_sigmoid(node, node.float_attribute("alpha", 0.2f), node.float_attribute("beta", 0.5f),
                   node.node.output(0));
}

void import_hard_swish(NodeImport& node) {
  const std::string gate = node.node.output(0) + "/gate";
  add_hard_sigmoid(node, 1.0f / 6.0f, 0.5f, gate);
  node.add_layer("Eltwise", {node.node.input(0), gate}, {node.node.output(0)})
      .mutable_eltwise_param()
      ->set_operation(EltwiseParameter::PROD);
}

}  // namespace

NodeImporter find_activation_importer(const std::string& op_type) {
  static const std::map<std::string, NodeImporter> kImporters = {
      {"Clip", import_clip},
      {"HardSigmoid", import_hard_sigmoid},
      {"HardSwish", import_hard_swish},
  };
  const auto found = kImporters.find(op_type);
  return found == kImporters.end() ? nullptr : found->second;
}

}  // namespace xtrain::interchange
