// ONNX nodes for Caffe's elementwise layers: the activations, Power, Exp,
// Log, BNLL, Threshold, Eltwise, and the identities at inference (Dropout,
// Split).
#include <cmath>
#include <map>

#include "interchange/onnx_layer_export.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

void unary(LayerExport& layer, const char* op_type) {
  layer.node(op_type, {layer.inputs[0]}, layer.outputs);
}

// ReLU with negative_slope s: max(0, x) + s min(0, x), LeakyRelu when s != 0.
void export_relu(LayerExport& layer) {
  const float slope = layer.param.relu_param().negative_slope();
  if (slope == 0.0f) return unary(layer, "Relu");
  set_attribute(layer.node("LeakyRelu", {layer.inputs[0]}, layer.outputs), "alpha", slope);
}

void export_sigmoid(LayerExport& layer) { unary(layer, "Sigmoid"); }
void export_tanh(LayerExport& layer) { unary(layer, "Tanh"); }
void export_absval(LayerExport& layer) { unary(layer, "Abs"); }
// BNLL: log(1 + e^x), ONNX's Softplus.
void export_bnll(LayerExport& layer) { unary(layer, "Softplus"); }

void export_elu(LayerExport& layer) {
  set_attribute(layer.node("Elu", {layer.inputs[0]}, layer.outputs), "alpha",
                layer.param.elu_param().alpha());
}

// Writes shift + scale * x to `out`: no Mul where scale is 1, no Add where
// shift is 0, an Identity where both are left out.
void write_affine(LayerExport& layer, const std::string& x, float scale, float shift,
                  const std::string& out) {
  const bool multiply = scale != 1.0f, add = shift != 0.0f;
  if (!multiply && !add) {
    layer.node("Identity", {x}, {out});
    return;
  }
  std::string value = x;
  if (multiply) {
    value = add ? layer.local("scaled") : out;
    layer.node("Mul", {x, layer.graph.add_scalar(layer.param.name() + "/scale", scale)}, {value},
               add ? "scale" : "");
  }
  if (add) {
    layer.node("Add", {value, layer.graph.add_scalar(layer.param.name() + "/shift", shift)}, {out});
  }
}

// shift + scale * x in a value of its own, or x itself for the identity.
std::string affine(LayerExport& layer, const std::string& x, float scale, float shift) {
  if (scale == 1.0f && shift == 0.0f) return x;
  const std::string out = layer.local("affine");
  write_affine(layer, x, scale, shift, out);
  return out;
}

// Power: (shift + scale x)^power.
void export_power(LayerExport& layer) {
  const PowerParameter& power = layer.param.power_param();
  if (power.power() == 1.0f) {
    write_affine(layer, layer.inputs[0], power.scale(), power.shift(), layer.outputs[0]);
    return;
  }
  const std::string base = affine(layer, layer.inputs[0], power.scale(), power.shift());
  layer.node("Pow", {base, layer.graph.add_scalar(layer.param.name() + "/power", power.power())},
             layer.outputs);
}

// Exp: base^(shift + scale x) = e^(ln(base) (shift + scale x)); base -1: e.
void export_exp(LayerExport& layer) {
  const ExpParameter& exp = layer.param.exp_param();
  const float log_base = exp.base() == -1.0f ? 1.0f : std::log(exp.base());
  const std::string exponent =
      affine(layer, layer.inputs[0], exp.scale() * log_base, exp.shift() * log_base);
  layer.node("Exp", {exponent}, layer.outputs);
}

// Log: log_base(shift + scale x) = ln(shift + scale x) / ln(base).
void export_log(LayerExport& layer) {
  const LogParameter& log = layer.param.log_param();
  const std::string argument = affine(layer, layer.inputs[0], log.scale(), log.shift());
  if (log.base() == -1.0f) return void(layer.node("Log", {argument}, layer.outputs));
  const std::string natural = layer.local("ln");
  layer.node("Log", {argument}, {natural}, "ln");
  layer.node("Mul",
             {natural, layer.graph.add_scalar(layer.param.name() + "/inverse_ln_base",
                                              1.0f / std::log(log.base()))},
             layer.outputs);
}

// Threshold: 1 where x > t, else 0.
void export_threshold(LayerExport& layer) {
  const std::string above = layer.local("above");
  layer.node("Greater",
             {layer.inputs[0], layer.graph.add_scalar(layer.param.name() + "/threshold",
                                                      layer.param.threshold_param().threshold())},
             {above}, "compare");
  set_attribute(layer.node("Cast", {above}, layer.outputs), "to",
                std::int64_t{onnx::TensorProto::FLOAT});
}

// Eltwise: SUM of coeff_i x_i, PROD, MAX.
void export_eltwise(LayerExport& layer) {
  const EltwiseParameter& eltwise = layer.param.eltwise_param();
  if (eltwise.operation() == EltwiseParameter::PROD) {  // Mul takes two: a chain
    std::string product = layer.inputs[0];
    for (std::size_t i = 1; i < layer.inputs.size(); ++i) {
      const bool last = i + 1 == layer.inputs.size();
      const std::string out = last ? layer.outputs[0] : layer.local("product");
      layer.node("Mul", {product, layer.inputs[i]}, {out}, last ? "" : "mul");
      product = out;
    }
    return;
  }
  if (eltwise.operation() == EltwiseParameter::MAX) {
    layer.node("Max", layer.inputs, layer.outputs);
    return;
  }
  XTRAIN_CHECK(
      eltwise.coeff_size() == 0 || eltwise.coeff_size() == static_cast<int>(layer.inputs.size()),
      layer.where(), ": ", eltwise.coeff_size(), " coeff for ", layer.inputs.size(), " bottoms");
  std::vector<std::string> terms;
  for (std::size_t i = 0; i < layer.inputs.size(); ++i) {
    const float coeff = eltwise.coeff_size() == 0 ? 1.0f : eltwise.coeff(static_cast<int>(i));
    terms.push_back(affine(layer, layer.inputs[i], coeff, 0.0f));
  }
  layer.node("Sum", terms, layer.outputs);
}

void export_identity(LayerExport& layer) {
  for (std::size_t i = 0; i < layer.outputs.size(); ++i) {
    layer.node("Identity", {layer.inputs[0]}, {layer.outputs[i]}, i == 0 ? "" : "copy");
  }
}

}  // namespace

LayerExporter find_elementwise_exporter(const std::string& type) {
  static const std::map<std::string, LayerExporter> kExporters = {
      {"ReLU", export_relu},           {"Sigmoid", export_sigmoid}, {"TanH", export_tanh},
      {"AbsVal", export_absval},       {"BNLL", export_bnll},       {"ELU", export_elu},
      {"Power", export_power},         {"Exp", export_exp},         {"Log", export_log},
      {"Threshold", export_threshold}, {"Eltwise", export_eltwise}, {"Dropout", export_identity},
      {"Split", export_identity},
  };
  const auto found = kExporters.find(type);
  return found == kExporters.end() ? nullptr : found->second;
}

}  // namespace xtrain::interchange
