// Caffe layers for ONNX's elementwise and shape operators: the activations,
// arithmetic with a constant (Power, Scale, Bias) or between values
// (Eltwise), Greater + Cast (Threshold), ArgMax and TopK (ArgMax), Softmax,
// Concat, Split, Flatten, Reshape, Dropout and Identity.
#include <algorithm>
#include <map>
#include <set>

#include "interchange/onnx_node_import.hpp"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

LayerParameter& one_to_one(NodeImport& node, const std::string& type) {
  return node.add_layer(type, {node.node.input(0)}, {node.node.output(0)});
}

void import_relu(NodeImport& node) { one_to_one(node, "ReLU"); }
void import_sigmoid(NodeImport& node) { one_to_one(node, "Sigmoid"); }
void import_tanh(NodeImport& node) { one_to_one(node, "TanH"); }
void import_abs(NodeImport& node) { one_to_one(node, "AbsVal"); }
void import_exp(NodeImport& node) { one_to_one(node, "Exp"); }
void import_log(NodeImport& node) { one_to_one(node, "Log"); }
void import_softplus(NodeImport& node) { one_to_one(node, "BNLL"); }
void import_dropout(NodeImport& node) { one_to_one(node, "Dropout"); }
// Identity: a Split with one top (Caffe has no identity layer of its own).
void import_identity(NodeImport& node) { one_to_one(node, "Split"); }

void import_leaky_relu(NodeImport& node) {
  one_to_one(node, "ReLU")
      .mutable_relu_param()
      ->set_negative_slope(node.float_attribute("alpha", 0.01f));
}

void import_elu(NodeImport& node) {
  one_to_one(node, "ELU").mutable_elu_param()->set_alpha(node.float_attribute("alpha", 1.0f));
}

void import_sqrt(NodeImport& node) {
  one_to_one(node, "Power").mutable_power_param()->set_power(0.5f);
}

// Pow by a constant scalar exponent: Power.
void import_pow(NodeImport& node) {
  const onnx::TensorProto& exponent = node.required_constant(1, "exponent");
  XTRAIN_CHECK(element_count(exponent) == 1, node.where(),
               ": only one exponent for all values "
               "is imported");
  node.add_layer("Power", {node.node.input(0)}, {node.node.output(0)})
      .mutable_power_param()
      ->set_power(float_values(exponent)[0]);
}

// PRelu with one slope (channel_shared) or one per channel (axis 1).
void import_prelu(NodeImport& node) {
  const onnx::TensorProto& slope = node.required_constant(1, "slope");
  const std::int64_t count = element_count(slope);
  LayerParameter& layer = one_to_one(node, "PReLU");
  // One shared slope is a scalar blob in Caffe.
  if (count == 1) layer.mutable_prelu_param()->set_channel_shared(true);
  node.add_blob(layer, count == 1 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{count},
                float_values(slope));
}

// Where a constant of `dims` broadcasts against a value of `rank` axes: the
// axes [axis, axis + num_axes) its non-unit dims cover (Caffe's Scale/Bias
// parameters), or false when they are not one contiguous run.
bool broadcast_axes(const std::vector<std::int64_t>& dims, int rank, int* axis, int* num_axes) {
  const int offset = rank - static_cast<int>(dims.size());
  int first = -1, last = -1;
  for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
    if (dims[i] != 1) {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (offset < 0 || first < 0) return false;
  *axis = offset + first;
  *num_axes = last - first + 1;
  return true;
}

// A Mul by a constant (rows, columns) right after an AveragePool: the
// divisor factors of our exports (onnx_export_layers.cpp), folded into the
// pooling layer, whose divisors are checked with them (onnx_import.cpp).
bool fold_divisor_factors(NodeImport& node) {
  const onnx::TensorProto* constant = node.constant(1);
  const auto pool = node.state.average_pools.find(node.node.input(0));
  if (node.node.op_type() != "Mul" || constant == nullptr ||
      pool == node.state.average_pools.end() || constant->dims_size() != 2) {
    return false;
  }
  PoolingCheck& check = node.state.pooling_checks[pool->second];
  check.factors = float_values(*constant);
  for (LayerParameter& layer : *node.state.net.mutable_layer()) {
    if (layer.name() == check.layer) layer.set_top(0, node.node.output(0));
  }
  node.state.average_pools.erase(pool);
  return true;
}

// `wanted`, or it with a suffix, not the name of any value of the graph or
// blob of the net.
std::string unused_blob_name(const ImportState& state, const std::string& wanted) {
  std::set<std::string> taken;
  for (const LayerParameter& layer : state.net.layer())
    taken.insert(layer.top().begin(), layer.top().end());
  for (const onnx::NodeProto& node : state.graph->node()) {
    taken.insert(node.input().begin(), node.input().end());
    taken.insert(node.output().begin(), node.output().end());
  }
  std::string name = wanted;
  for (int suffix = 1; taken.count(name) != 0; ++suffix)
    name = wanted + "_" + std::to_string(suffix);
  return name;
}

// Mul or Add of x and a value Reshape gave a constant shape that is 1 outside
// one run of axes [axis, axis + n) of x's: Caffe's Scale or Bias by a second
// bottom (reshaped to those n axes, as Caffe wants it) along `axis`. False
// when the operands are not so.
bool import_second_bottom(NodeImport& node) {
  const std::string& op = node.node.op_type();
  if (op != "Mul" && op != "Add") return false;
  for (int factor = 1; factor >= 0; --factor) {
    const auto reshaped = node.state.reshape_dims.find(node.node.input(factor));
    const int rank = node.input_rank(1 - factor);
    if (reshaped == node.state.reshape_dims.end() ||
        static_cast<int>(reshaped->second.size()) != rank) {
      continue;
    }
    const std::vector<std::int64_t>& dims = reshaped->second;
    int axis = 0, num_axes = 0;
    if (std::any_of(dims.begin(), dims.end(), [](std::int64_t dim) { return dim <= 0; }) ||
        !broadcast_axes(dims, rank, &axis, &num_axes)) {
      continue;
    }
    const std::string squeezed = unused_blob_name(node.state, node.node.output(0) + "/squeezed");
    LayerParameter& reshape =
        node.add_layer("Reshape", {node.node.input(factor)}, {squeezed}, node.name + "/reshape");
    for (int i = axis; i < axis + num_axes; ++i) {
      reshape.mutable_reshape_param()->mutable_shape()->add_dim(dims[i]);
    }
    LayerParameter& layer =
        node.add_layer(op == "Mul" ? "Scale" : "Bias", {node.node.input(1 - factor), squeezed},
                       {node.node.output(0)});
    if (op == "Mul") {
      layer.mutable_scale_param()->set_axis(axis);
    } else {
      layer.mutable_bias_param()->set_axis(axis);
    }
    node.state.ranks[node.node.output(0)] = rank;
    return true;
  }
  return false;
}

// Mul, Add, Sub or Div of x and a value f of x's rank whose dims are x's
// on the leading axes and 1 after (a squeeze-and-excitation gate, (N, C, 1,
// 1) against (N, C, H, W); LayerNorm's per-position statistics, (N, H, W, 1)
// against (N, H, W, C)): Caffe's Scale or Bias of x by f reshaped to those
// leading axes (Reshape with 0s, which copy the axes, so any batch size
// works), along axis 0; for Sub and Div (f second) f goes through a Power
// first (-f, 1 / f). The shapes are the layers' (onnx_import_shapes.cpp).
// False when both have one shape (Eltwise's case) or neither is such an f.
bool import_broadcast_between_values(NodeImport& node) {
  const std::string& op = node.node.op_type();
  const std::vector<int> shapes[2] = {imported_blob_shape(node.state, node.node.input(0)),
                                      imported_blob_shape(node.state, node.node.input(1))};
  if (shapes[0] == shapes[1]) return false;
  const bool multiply = op == "Mul" || op == "Div";
  for (int factor = 1; factor >= 0; --factor) {
    const std::vector<int>& f = shapes[factor];
    const std::vector<int>& x = shapes[1 - factor];
    if (f.size() != x.size()) continue;
    std::size_t leading = 0;
    while (leading < f.size() && f[leading] == x[leading]) ++leading;
    const bool ones_after =
        std::all_of(f.begin() + leading, f.end(), [](int dim) { return dim == 1; });
    if (leading == 0 || leading == f.size() || !ones_after) continue;
    if ((op == "Sub" || op == "Div") && factor == 0) continue;
    std::string squeezed = unused_blob_name(node.state, node.node.output(0) + "/squeezed");
    LayerParameter& reshape =
        node.add_layer("Reshape", {node.node.input(factor)}, {squeezed}, node.name + "/reshape");
    for (std::size_t i = 0; i < leading; ++i) {
      reshape.mutable_reshape_param()->mutable_shape()->add_dim(0);
    }
    if (op == "Sub" || op == "Div") {
      const std::string inverted = unused_blob_name(node.state, squeezed + "/inverted");
      PowerParameter* power = node.add_layer("Power", {squeezed}, {inverted}, node.name + "/invert")
                                  .mutable_power_param();
      if (op == "Sub") {
        power->set_scale(-1.0f);
      } else {
        power->set_power(-1.0f);
      }
      squeezed = inverted;
    }
    LayerParameter& layer =
        node.add_layer(multiply ? "Scale" : "Bias", {node.node.input(1 - factor), squeezed},
                       {node.node.output(0)});
    if (multiply) {
      layer.mutable_scale_param()->set_axis(0);
    } else {
      layer.mutable_bias_param()->set_axis(0);
    }
    node.state.ranks[node.node.output(0)] = static_cast<int>(x.size());
    return true;
  }
  auto text = [](const std::vector<int>& shape) {
    std::string out;
    for (int dim : shape) out += (out.empty() ? "" : "x") + std::to_string(dim);
    return out;
  };
  XTRAIN_CHECK(false, node.where(), ": its inputs' shapes ", text(shapes[0]), " and ",
               text(shapes[1]),
               " differ, and the second (or, for Mul and Add, either) is not the other's on "
               "the leading axes and 1 after (what Caffe's Scale and Bias broadcast)");
  return false;
}

// Add, Sub, Mul, Div with a constant: Power for one value, else Scale or
// Bias over the axes the constant covers. Between values: Eltwise (SUM,
// SUM with coefficients 1 and -1, PROD).
void import_arithmetic(NodeImport& node) {
  const std::string& op = node.node.op_type();
  XTRAIN_CHECK(node.node.input_size() == 2, node.where(), ": ", node.node.input_size(),
               " inputs where ", op, " takes 2");
  if (fold_divisor_factors(node) || import_gelu_pattern(node)) return;
  const bool constant_first = node.constant(0) != nullptr;
  const onnx::TensorProto* constant = constant_first ? node.constant(0) : node.constant(1);
  if (constant == nullptr &&
      (import_second_bottom(node) || import_broadcast_between_values(node))) {
    return;
  }
  if (constant == nullptr) {
    XTRAIN_CHECK(op != "Div", node.where(),
                 ": division of two computed values of one shape is not imported");
    LayerParameter& layer =
        node.add_layer("Eltwise", {node.node.input(0), node.node.input(1)}, {node.node.output(0)});
    EltwiseParameter* eltwise = layer.mutable_eltwise_param();
    eltwise->set_operation(op == "Mul" ? EltwiseParameter::PROD : EltwiseParameter::SUM);
    if (op == "Sub") {
      eltwise->add_coeff(1.0f);
      eltwise->add_coeff(-1.0f);
    }
    return;
  }
  XTRAIN_CHECK(!constant_first || op == "Add" || op == "Mul", node.where(),
               ": a constant first operand of ", op, " is not imported");
  const std::string& input = node.node.input(constant_first ? 1 : 0);
  std::vector<float> values = float_values(*constant);
  const bool multiply = op == "Mul" || op == "Div";
  for (float& value : values) {
    if (op == "Sub") value = -value;
    if (op == "Div") value = 1.0f / value;
  }
  if (values.size() == 1) {
    LayerParameter& layer = node.add_layer("Power", {input}, {node.node.output(0)});
    if (multiply) {
      layer.mutable_power_param()->set_scale(values[0]);
    } else {
      layer.mutable_power_param()->set_shift(values[0]);
    }
    node.state.ranks[node.node.output(0)] = node.input_rank(constant_first ? 1 : 0);
    return;
  }
  const std::vector<std::int64_t> dims(constant->dims().begin(), constant->dims().end());
  int axis = 0, num_axes = 0;
  const int rank = node.input_rank(constant_first ? 1 : 0);
  XTRAIN_CHECK(rank >= 0 && broadcast_axes(dims, rank, &axis, &num_axes), node.where(),
               ": the constant's non-unit axes must be one run inside the other operand's (a "
               "per-channel scale or bias)");
  LayerParameter& layer =
      node.add_layer(multiply ? "Scale" : "Bias", {input}, {node.node.output(0)});
  if (multiply) {
    layer.mutable_scale_param()->set_axis(axis);
    layer.mutable_scale_param()->set_num_axes(num_axes);
  } else {
    layer.mutable_bias_param()->set_axis(axis);
    layer.mutable_bias_param()->set_num_axes(num_axes);
  }
  std::vector<std::int64_t> blob_dims;
  for (std::int64_t dim : dims) {
    if (blob_dims.size() < static_cast<std::size_t>(num_axes) && (dim != 1 || !blob_dims.empty())) {
      blob_dims.push_back(dim);
    }
  }
  node.add_blob(layer, blob_dims, values);
  node.state.ranks[node.node.output(0)] = rank;
}

// Greater than a constant scalar, then Cast to float: Caffe's Threshold
// (1 where x > t, else 0). The Greater waits for its Cast.
void import_greater(NodeImport& node) {
  const onnx::TensorProto& threshold = node.required_constant(1, "threshold");
  XTRAIN_CHECK(element_count(threshold) == 1, node.where(),
               ": only a comparison with one constant (Caffe's Threshold) is imported");
  node.state.pending_thresholds[node.node.output(0)] = {node.node.input(0),
                                                        float_values(threshold)[0]};
}

// TopK (largest, sorted) by a constant k: remembered until its outputs are
// read (import_cast, import_top_k_values).
void import_top_k(NodeImport& node) {
  XTRAIN_CHECK(node.int_attribute("largest", 1) == 1 && node.int_attribute("sorted", 1) == 1,
               node.where(), ": only the largest values, sorted, are imported (Caffe's ArgMax)");
  const std::vector<std::int64_t> k = int64_values(node.required_constant(1, "k"));
  XTRAIN_CHECK(k.size() == 1, node.where(), ": k of ", k.size(), " values");
  PendingTopK pending;
  pending.source = node.node.input(0);
  const int rank = node.input_rank(0);
  const std::int64_t axis = node.int_attribute("axis", -1);
  XTRAIN_CHECK(axis >= 0 || rank >= 0, node.where(),
               ": a negative axis on a value of unknown rank");
  pending.axis = static_cast<int>(axis < 0 ? axis + rank : axis);
  pending.k = static_cast<int>(k[0]);
  pending.layer = node.name;
  node.state.pending_top_k_values[node.node.output(0)] = pending;
  if (node.node.output_size() > 1) node.state.pending_top_k_indices[node.node.output(1)] = pending;
}

LayerParameter& add_argmax(ImportState& state, const PendingTopK& top_k, const std::string& top,
                           const std::string& wanted_name) {
  LayerParameter& layer = *state.net.add_layer();
  std::string name = wanted_name;
  for (int suffix = 1; !state.layer_names.insert(name).second; ++suffix) {
    name = wanted_name + "_" + std::to_string(suffix);
  }
  layer.set_name(name);
  layer.set_type("ArgMax");
  layer.add_bottom(top_k.source);
  layer.add_top(top);
  layer.mutable_argmax_param()->set_axis(top_k.axis);
  layer.mutable_argmax_param()->set_top_k(static_cast<std::uint32_t>(top_k.k));
  return layer;
}

// Cast to float of a Greater (Threshold) or of TopK's indices (ArgMax).
void import_cast(NodeImport& node) {
  XTRAIN_CHECK(node.int_attribute("to", 0) == onnx::TensorProto::FLOAT, node.where(),
               ": only a Cast to float is imported");
  const std::string& input = node.node.input(0);
  const auto greater = node.state.pending_thresholds.find(input);
  if (greater != node.state.pending_thresholds.end()) {
    node.add_layer("Threshold", {greater->second.first}, {node.node.output(0)})
        .mutable_threshold_param()
        ->set_threshold(greater->second.second);
    return;
  }
  const auto top_k = node.state.pending_top_k_indices.find(input);
  XTRAIN_CHECK(top_k != node.state.pending_top_k_indices.end(), node.where(),
               ": only the Cast to float of a Greater (Caffe's Threshold) or of TopK's indices "
               "(Caffe's ArgMax) is imported");
  add_argmax(node.state, top_k->second, node.node.output(0), node.name);
}

}  // namespace

void import_top_k_values(ImportState& state, const std::string& value) {
  const auto top_k = state.pending_top_k_values.find(value);
  add_argmax(state, top_k->second, value, top_k->second.layer + "/values")
      .mutable_argmax_param()
      ->set_out_max_val(true);
  state.pending_top_k_values.erase(top_k);
}

namespace {

// Sum and Max of several values: Eltwise SUM and MAX.
void import_variadic(NodeImport& node) {
  std::vector<std::string> bottoms(node.node.input().begin(), node.node.input().end());
  for (int i = 0; i < node.node.input_size(); ++i) {
    XTRAIN_CHECK(node.constant(i) == nullptr, node.where(), ": constant operands are not imported");
  }
  LayerParameter& layer = node.add_layer("Eltwise", bottoms, {node.node.output(0)});
  layer.mutable_eltwise_param()->set_operation(
      node.node.op_type() == "Max" ? EltwiseParameter::MAX : EltwiseParameter::SUM);
}

// Softmax along `axis`. Before opset 13 ONNX flattened the input to 2-d at
// `axis` first, which is Caffe's softmax only along the last axis.
void import_softmax(NodeImport& node) {
  const int rank = node.input_rank(0);
  std::int64_t axis = node.int_attribute("axis", node.state.opset >= 13 ? -1 : 1);
  if (rank >= 0 && axis < 0) axis += rank;
  XTRAIN_CHECK(node.state.opset >= 13 || (rank >= 0 && axis == rank - 1), node.where(),
               ": before opset 13, Softmax flattens its input first; re-export with opset 13 or "
               "later, or a softmax over the last axis");
  one_to_one(node, "Softmax").mutable_softmax_param()->set_axis(static_cast<int>(axis));
}

void import_concat(NodeImport& node) {
  std::vector<std::string> bottoms(node.node.input().begin(), node.node.input().end());
  LayerParameter& layer = node.add_layer("Concat", bottoms, {node.node.output(0)});
  layer.mutable_concat_param()->set_axis(static_cast<int>(node.int_attribute("axis", 0)));
}

// Split: Caffe's Slice at the running sums of the sizes (equal parts when
// none are given).
void import_split(NodeImport& node) {
  std::vector<std::int64_t> sizes = node.ints_attribute("split");
  if (node.constant(1) != nullptr) sizes = int64_values(*node.constant(1));
  std::vector<std::string> tops(node.node.output().begin(), node.node.output().end());
  LayerParameter& layer = node.add_layer("Slice", {node.node.input(0)}, tops);
  SliceParameter* slice = layer.mutable_slice_param();
  slice->set_axis(static_cast<int>(node.int_attribute("axis", 0)));
  std::int64_t point = 0;
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    point += sizes[i];
    slice->add_slice_point(static_cast<std::uint32_t>(point));
  }
}

// Flatten at axis 1: Caffe's Flatten (which keeps axes before `axis` apart,
// so only axis 1 means the same).
void import_flatten(NodeImport& node) {
  XTRAIN_CHECK(node.int_attribute("axis", 1) == 1, node.where(),
               ": only Flatten at axis 1 is "
               "imported");
  one_to_one(node, "Flatten");
  node.state.ranks[node.node.output(0)] = 2;
}

// Reshape to a constant shape: 0 copies the input's axis and -1 is
// inferred, as in Caffe's Reshape. A first dim equal to the input's first
// axis becomes 0: the same at the file's size, and the batch size a traced
// export froze into the shape (ShuffleNet's channel shuffle, a folded
// x.view(x.size(0), -1)) follows the net's batch when it is fine-tuned.
void import_reshape(NodeImport& node) {
  XTRAIN_CHECK(node.int_attribute("allowzero", 0) == 0, node.where(),
               ": allowzero is not imported");
  const std::vector<std::int64_t> shape = int64_values(node.required_constant(1, "shape"));
  std::vector<std::int64_t> dims = shape;
  if (!dims.empty() && dims[0] > 0 && node.constant(0) == nullptr &&
      dims[0] == imported_blob_shape(node.state, node.node.input(0)).at(0)) {
    dims[0] = 0;
  }
  LayerParameter& layer = one_to_one(node, "Reshape");
  for (std::int64_t dim : dims) layer.mutable_reshape_param()->mutable_shape()->add_dim(dim);
  node.state.ranks[node.node.output(0)] = static_cast<int>(shape.size());
  node.state.reshape_dims[node.node.output(0)] = shape;  // ONNX's, for import_second_bottom
}

// Transpose: SSD's Permute, whose order is ONNX's perm (the default, the
// axes reversed, needs the rank).
void import_transpose(NodeImport& node) {
  std::vector<std::int64_t> perm = node.ints_attribute("perm");
  const int rank = node.input_rank(0);
  if (perm.empty()) {
    XTRAIN_CHECK(rank > 0, node.where(),
                 ": without perm it reverses the axes of an input of unknown rank; give perm");
    for (int axis = rank - 1; axis >= 0; --axis) perm.push_back(axis);
  }
  PermuteParameter* permute = one_to_one(node, "Permute").mutable_permute_param();
  for (std::int64_t axis : perm) {
    XTRAIN_CHECK(axis >= 0 && axis < static_cast<std::int64_t>(perm.size()), node.where(),
                 ": perm names axis ", axis, " of ", perm.size());
    permute->add_order(static_cast<std::uint32_t>(axis));
  }
  node.state.ranks[node.node.output(0)] = static_cast<int>(perm.size());
}

// ArgMax with keepdims: Caffe's ArgMax along the axis, top_k 1 (the indices
// come out as floats).
void import_argmax(NodeImport& node) {
  XTRAIN_CHECK(
      node.int_attribute("keepdims", 1) == 1 && node.int_attribute("select_last_index", 0) == 0,
      node.where(), ": only keepdims 1 and the first index of ties are imported");
  one_to_one(node, "ArgMax")
      .mutable_argmax_param()
      ->set_axis(static_cast<int>(node.int_attribute("axis", 0)));
}

}  // namespace

NodeImporter find_elementwise_importer(const std::string& op_type) {
  static const std::map<std::string, NodeImporter> kImporters = {
      {"Relu", import_relu},         {"LeakyRelu", import_leaky_relu},
      {"PRelu", import_prelu},       {"Elu", import_elu},
      {"Sigmoid", import_sigmoid},   {"Tanh", import_tanh},
      {"Abs", import_abs},           {"Exp", import_exp},
      {"Log", import_log},           {"Softplus", import_softplus},
      {"Sqrt", import_sqrt},         {"Pow", import_pow},
      {"Add", import_arithmetic},    {"Sub", import_arithmetic},
      {"Mul", import_arithmetic},    {"Div", import_arithmetic},
      {"Sum", import_variadic},      {"Max", import_variadic},
      {"Softmax", import_softmax},   {"Concat", import_concat},
      {"Split", import_split},       {"Flatten", import_flatten},
      {"Reshape", import_reshape},   {"Dropout", import_dropout},
      {"Identity", import_identity}, {"ArgMax", import_argmax},
      {"Greater", import_greater},   {"Cast", import_cast},
      {"TopK", import_top_k},        {"Transpose", import_transpose},
  };
  const auto found = kImporters.find(op_type);
  return found == kImporters.end() ? nullptr : found->second;
}

}  // namespace xtrain::interchange
