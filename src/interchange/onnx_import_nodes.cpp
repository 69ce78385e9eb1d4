// Caffe layers for ONNX's learned and windowed operators: Conv,
// ConvTranspose, MaxPool, AveragePool (with a Pad in front), the global
// pools, BatchNormalization, Gemm, MatMul, LRN, the reductions and Tile.
#include <algorithm>
#include <map>

#include "interchange/onnx_node_import.hpp"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {

const onnx::AttributeProto* NodeImport::attribute(const std::string& attribute_name) const {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == attribute_name) return &attribute;
  }
  return nullptr;
}

std::int64_t NodeImport::int_attribute(const std::string& attribute_name,
                                       std::int64_t fallback) const {
  const onnx::AttributeProto* found = attribute(attribute_name);
  return found == nullptr ? fallback : found->i();
}

float NodeImport::float_attribute(const std::string& attribute_name, float fallback) const {
  const onnx::AttributeProto* found = attribute(attribute_name);
  return found == nullptr ? fallback : found->f();
}

std::string NodeImport::string_attribute(const std::string& attribute_name,
                                         const std::string& fallback) const {
  const onnx::AttributeProto* found = attribute(attribute_name);
  return found == nullptr ? fallback : found->s();
}

std::vector<std::int64_t> NodeImport::ints_attribute(const std::string& attribute_name) const {
  const onnx::AttributeProto* found = attribute(attribute_name);
  if (found == nullptr) return {};
  return std::vector<std::int64_t>(found->ints().begin(), found->ints().end());
}

const onnx::TensorProto* NodeImport::constant(int input_index) const {
  if (!has_input(input_index)) return nullptr;
  const auto found = state.constants.find(node.input(input_index));
  return found == state.constants.end() ? nullptr : found->second;
}

const onnx::TensorProto& NodeImport::required_constant(int input_index, const char* what) const {
  const onnx::TensorProto* tensor = constant(input_index);
  XTRAIN_CHECK(tensor != nullptr, where(), ": input ", input_index, " (", what,
               ") must be a constant (an initializer or a Constant node) to become a Caffe "
               "layer's ",
               what);
  return *tensor;
}

int NodeImport::input_rank(int input_index) const {
  if (!has_input(input_index)) return -1;
  const auto found = state.ranks.find(node.input(input_index));
  return found == state.ranks.end() ? -1 : found->second;
}

LayerParameter& NodeImport::add_layer(const std::string& type,
                                      const std::vector<std::string>& bottoms,
                                      const std::vector<std::string>& tops,
                                      const std::string& layer_name) {
  LayerParameter& layer = *state.net.add_layer();
  std::string wanted = layer_name.empty() ? name : layer_name;
  std::string unique = wanted;
  for (int suffix = 1; !state.layer_names.insert(unique).second; ++suffix) {
    unique = wanted + "_" + std::to_string(suffix);
  }
  layer.set_name(unique);
  layer.set_type(type);
  for (const std::string& bottom : bottoms) layer.add_bottom(bottom);
  for (const std::string& top : tops) layer.add_top(top);
  return layer;
}

void NodeImport::add_blob(const LayerParameter& layer, const std::vector<std::int64_t>& dims,
                          const std::vector<float>& values) {
  NetParameter& weights = state.weights;
  LayerParameter* entry = nullptr;
  if (weights.layer_size() > 0 && weights.layer(weights.layer_size() - 1).name() == layer.name()) {
    entry = weights.mutable_layer(weights.layer_size() - 1);
  } else {
    entry = weights.add_layer();
    entry->set_name(layer.name());
    entry->set_type(layer.type());
  }
  BlobProto* blob = entry->add_blobs();
  blob->mutable_shape();  // present even for a scalar (no dims)
  for (std::int64_t dim : dims) blob->mutable_shape()->add_dim(dim);
  blob->mutable_data()->Add(values.begin(), values.end());
}

namespace {

std::vector<std::int64_t> dims_of(const onnx::TensorProto& tensor) {
  return std::vector<std::int64_t>(tensor.dims().begin(), tensor.dims().end());
}

void check_no_auto_pad(const NodeImport& node) {
  const std::string auto_pad = node.string_attribute("auto_pad", "NOTSET");
  XTRAIN_CHECK(auto_pad == "NOTSET" || auto_pad == "VALID", node.where(), ": auto_pad ", auto_pad,
               " is not imported; export with explicit pads");
}

// Caffe's repeated field: one value when all axes agree, else one each.
template <typename Field>
void set_per_axis(Field* field, const std::vector<std::int64_t>& values) {
  const bool same =
      std::all_of(values.begin(), values.end(), [&](std::int64_t v) { return v == values[0]; });
  for (std::size_t i = 0; i < (same ? 1 : values.size()); ++i) {
    field->Add(static_cast<std::uint32_t>(values[i]));
  }
}

// Conv / ConvTranspose: Caffe's Convolution / Deconvolution with the same
// weight layout; pads must be symmetric (Caffe pads both ends alike).
void import_convolution(NodeImport& node) {
  check_no_auto_pad(node);
  const bool transposed = node.node.op_type() == "ConvTranspose";
  const onnx::TensorProto& weights = node.required_constant(1, "weights");
  XTRAIN_CHECK(weights.dims_size() >= 3, node.where(), ": weights of ", weights.dims_size(),
               " axes (a convolution's have 3 or more)");
  const int axes = weights.dims_size() - 2;
  std::vector<std::int64_t> kernel = node.ints_attribute("kernel_shape");
  if (kernel.empty()) kernel.assign(weights.dims().begin() + 2, weights.dims().end());
  std::vector<std::int64_t> strides = node.ints_attribute("strides");
  std::vector<std::int64_t> dilations = node.ints_attribute("dilations");
  std::vector<std::int64_t> pads = node.ints_attribute("pads");
  strides.resize(axes, 1);
  dilations.resize(axes, 1);
  pads.resize(2 * axes, 0);
  for (int i = 0; i < axes; ++i) {
    XTRAIN_CHECK(pads[i] == pads[axes + i], node.where(), ": pads ", pads[i], " and ",
                 pads[axes + i], " differ at the two ends of axis ", 2 + i,
                 "; Caffe pads both ends alike");
  }
  if (transposed) {
    for (std::int64_t padding : node.ints_attribute("output_padding")) {
      XTRAIN_CHECK(padding == 0, node.where(), ": output_padding is not imported");
    }
    XTRAIN_CHECK(node.attribute("output_shape") == nullptr, node.where(),
                 ": output_shape is not imported; give pads");
  }
  // A zero Pad in front (TensorFlow's and others' exports): Caffe's pad.
  std::string input = node.node.input(0);
  const auto pending = node.state.pending_pads.find(input);
  if (!transposed && pending != node.state.pending_pads.end()) {
    XTRAIN_CHECK(axes == 2, node.where(), ": a Pad in front is folded only into a 2-d Conv");
    for (int i = 0; i < 2; ++i) {
      pads[i] += pending->second.pad[i];
      pads[axes + i] += pending->second.pad[i];
    }
    input = pending->second.source;
  }
  const std::int64_t group = node.int_attribute("group", 1);
  LayerParameter& layer =
      node.add_layer(transposed ? "Deconvolution" : "Convolution", {input}, {node.node.output(0)});
  ConvolutionParameter* conv = layer.mutable_convolution_param();
  conv->set_num_output(
      static_cast<std::uint32_t>(transposed ? weights.dims(1) * group : weights.dims(0)));
  set_per_axis(conv->mutable_kernel_size(), kernel);
  if (std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p != 0; })) {
    set_per_axis(conv->mutable_pad(), std::vector<std::int64_t>(pads.begin(), pads.begin() + axes));
  }
  set_per_axis(conv->mutable_stride(), strides);
  if (std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; })) {
    set_per_axis(conv->mutable_dilation(), dilations);
  }
  if (group != 1) conv->set_group(static_cast<std::uint32_t>(group));
  const bool bias = node.has_input(2);
  conv->set_bias_term(bias);
  node.add_blob(layer, dims_of(weights), float_values(weights));
  if (bias) {
    const onnx::TensorProto& b = node.required_constant(2, "bias");
    node.add_blob(layer, {element_count(b)}, float_values(b));
  }
}

// Pad (constant zeros of the spatial axes): remembered for the AveragePool
// or Conv that reads it, which becomes one Caffe pooling or convolution
// with the pads added.
void import_pad(NodeImport& node) {
  XTRAIN_CHECK(node.string_attribute("mode", "constant") == "constant", node.where(),
               ": only constant padding is imported");
  const std::vector<std::int64_t> pads = node.state.opset >= 11
                                             ? int64_values(node.required_constant(1, "pads"))
                                             : node.ints_attribute("pads");
  float value = node.float_attribute("value", 0.0f);
  if (node.constant(2) != nullptr) value = float_values(*node.constant(2)).at(0);
  XTRAIN_CHECK(value == 0.0f && pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 &&
                   pads[5] == 0 && pads[2] == pads[6] && pads[3] == pads[7],
               node.where(),
               ": only a zero Pad of the two spatial axes, alike at both ends, in "
               "front of an AveragePool or a Conv is imported (Caffe's pooling or "
               "convolution pad)");
  PendingPad pending;
  pending.source = node.node.input(0);
  pending.pad[0] = static_cast<int>(pads[2]);
  pending.pad[1] = static_cast<int>(pads[3]);
  pending.node = node.where();
  node.state.pending_pads[node.node.output(0)] = pending;
}

// MaxPool / AveragePool (2-d): Caffe pooling with pad = begin pad (+ the
// Pad in front); whether its windows and divisors are ONNX's is checked
// once the shapes are known (onnx_import.cpp). ceil_mode 0 with the same
// pad at both ends (what PyTorch writes) is round_mode FLOOR, the same
// windows at every input size; other pads (our exports' longer end pad,
// which keeps Caffe 1.0's windows) and ceil_mode 1 are CEIL.
void import_pooling(NodeImport& node) {
  check_no_auto_pad(node);
  const bool average = node.node.op_type() == "AveragePool";
  XTRAIN_CHECK(node.node.output_size() == 1 || node.node.output(1).empty(), node.where(),
               ": the indices output is not imported");
  std::vector<std::int64_t> kernel = node.ints_attribute("kernel_shape");
  XTRAIN_CHECK(kernel.size() == 2, node.where(),
               ": only 2-d pooling is imported (kernel_shape has ", kernel.size(), " axes)");
  for (std::int64_t d : node.ints_attribute("dilations")) {
    XTRAIN_CHECK(d == 1, node.where(), ": dilated pooling is not imported");
  }
  std::vector<std::int64_t> strides = node.ints_attribute("strides");
  std::vector<std::int64_t> pads = node.ints_attribute("pads");
  strides.resize(2, 1);
  pads.resize(4, 0);
  std::string input = node.node.input(0);
  int pre[2] = {0, 0};
  const auto pending = node.state.pending_pads.find(input);
  if (average && pending != node.state.pending_pads.end()) {
    pre[0] = pending->second.pad[0];
    pre[1] = pending->second.pad[1];
    input = pending->second.source;
  }
  LayerParameter& layer = node.add_layer("Pooling", {input}, {node.node.output(0)});
  PoolingParameter* pool = layer.mutable_pooling_param();
  pool->set_pool(average ? PoolingParameter::AVE : PoolingParameter::MAX);
  PoolingCheck check;
  check.layer = layer.name();
  check.node = node.where();
  check.average = average;
  for (int i = 0; i < 2; ++i) {
    OnnxPoolingAxis& axis = check.axes[i];
    axis.kernel = static_cast<int>(kernel[i]);
    axis.stride = static_cast<int>(strides[i]);
    axis.begin_pad = static_cast<int>(pads[i]);
    axis.end_pad = static_cast<int>(pads[2 + i]);
    axis.pre_padding = pre[i];
    axis.ceil_mode = node.int_attribute("ceil_mode", 0) != 0;
    axis.count_include_pad = node.int_attribute("count_include_pad", 0) != 0;
  }
  const auto as_u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  if (kernel[0] == kernel[1]) {
    pool->set_kernel_size(as_u32(kernel[0]));
  } else {
    pool->set_kernel_h(as_u32(kernel[0]));
    pool->set_kernel_w(as_u32(kernel[1]));
  }
  if (strides[0] == strides[1]) {
    pool->set_stride(as_u32(strides[0]));
  } else {
    pool->set_stride_h(as_u32(strides[0]));
    pool->set_stride_w(as_u32(strides[1]));
  }
  const bool floor_rounding =
      node.int_attribute("ceil_mode", 0) == 0 && pads[0] == pads[2] && pads[1] == pads[3];
  check.round_up = !floor_rounding;
  if (floor_rounding) pool->set_round_mode(PoolingParameter::FLOOR);
  const std::int64_t pad_h = pads[0] + pre[0], pad_w = pads[1] + pre[1];
  if (pad_h == pad_w && pad_h != 0) pool->set_pad(as_u32(pad_h));
  if (pad_h != pad_w) {
    pool->set_pad_h(as_u32(pad_h));
    pool->set_pad_w(as_u32(pad_w));
  }
  if (average) node.state.average_pools[node.node.output(0)] = node.state.pooling_checks.size();
  node.state.pooling_checks.push_back(check);
}

void import_global_pooling(NodeImport& node) {
  LayerParameter& layer = node.add_layer("Pooling", {node.node.input(0)}, {node.node.output(0)});
  layer.mutable_pooling_param()->set_pool(
      node.node.op_type() == "GlobalMaxPool" ? PoolingParameter::MAX : PoolingParameter::AVE);
  layer.mutable_pooling_param()->set_global_pooling(true);
}

// ReduceSum, ReduceL1, ReduceSumSquare, ReduceMean over the axes from one
// on, dropped: Caffe's Reduction; a ReduceMean over the spatial axes of a
// 4-d value: global AVE pooling (then a Flatten when the axes are dropped).
void import_reduce(NodeImport& node) {
  const std::string& op = node.node.op_type();
  if (op == "ReduceMean" && import_mvn_pattern(node)) return;
  const int rank = node.input_rank(0);
  std::vector<std::int64_t> axes = node.ints_attribute("axes");
  if (axes.empty() && node.constant(1) != nullptr) axes = int64_values(*node.constant(1));
  for (std::int64_t& axis : axes) axis = axis < 0 ? axis + rank : axis;
  std::sort(axes.begin(), axes.end());
  const bool keep = node.int_attribute("keepdims", 1) != 0;
  const std::string& top = node.node.output(0);
  if (op == "ReduceMean" && rank == 4 && axes == std::vector<std::int64_t>({2, 3})) {
    const std::string pooled = keep ? top : top + "/pooled";
    LayerParameter& layer = node.add_layer("Pooling", {node.node.input(0)}, {pooled});
    layer.mutable_pooling_param()->set_pool(PoolingParameter::AVE);
    layer.mutable_pooling_param()->set_global_pooling(true);
    if (!keep) {
      node.add_layer("Flatten", {pooled}, {top}, node.name + "/flatten");
      node.state.ranks[top] = 2;
    }
    return;
  }
  bool trailing = rank > 0 && !axes.empty() && (!keep || axes.front() > 0);
  for (std::size_t i = 0; trailing && i < axes.size(); ++i) {
    trailing = axes[i] == rank - static_cast<std::int64_t>(axes.size() - i);
  }
  XTRAIN_CHECK(trailing, node.where(),
               ": only a reduction over the last axes (not the first) of a value of known rank "
               "(Caffe's Reduction), or a mean over the spatial axes of a 4-d value, is imported");
  static const std::map<std::string, ReductionParameter::ReductionOp> kOperations = {
      {"ReduceSum", ReductionParameter::SUM},
      {"ReduceL1", ReductionParameter::ASUM},
      {"ReduceSumSquare", ReductionParameter::SUMSQ},
      {"ReduceMean", ReductionParameter::MEAN}};
  // keepdims 1 (LayerNorm's statistics): the reduced axes come back as 1s
  // through a Reshape (0 keeps an axis).
  const std::string reduced = keep ? top + "/reduced" : top;
  LayerParameter& layer = node.add_layer("Reduction", {node.node.input(0)}, {reduced});
  layer.mutable_reduction_param()->set_operation(kOperations.at(op));
  layer.mutable_reduction_param()->set_axis(static_cast<int>(axes.front()));
  node.state.ranks[top] = keep ? rank : static_cast<int>(axes.front());
  if (!keep) return;
  BlobShape* shape = node.add_layer("Reshape", {reduced}, {top}, node.name + "/keepdims")
                         .mutable_reshape_param()
                         ->mutable_shape();
  for (int axis = 0; axis < rank; ++axis) shape->add_dim(axis < axes.front() ? 0 : 1);
}

// Tile along one axis: Caffe's Tile.
void import_tile(NodeImport& node) {
  const std::vector<std::int64_t> repeats = int64_values(node.required_constant(1, "repeats"));
  int axis = -1;
  for (int i = 0; i < static_cast<int>(repeats.size()); ++i) {
    if (repeats[i] == 1) continue;
    XTRAIN_CHECK(axis < 0, node.where(), ": only tiling along one axis is imported");
    axis = i;
  }
  LayerParameter& layer =
      node.add_layer(axis < 0 ? "Split" : "Tile", {node.node.input(0)}, {node.node.output(0)});
  if (axis < 0) return;  // all ones: the identity
  layer.mutable_tile_param()->set_axis(axis);
  layer.mutable_tile_param()->set_tiles(static_cast<int>(repeats[axis]));
}

// BatchNormalization (inference): Caffe's BatchNorm with its scale factor
// 1, and a Scale with bias for gamma and beta unless they are 1 and 0.
void import_batch_norm(NodeImport& node) {
  XTRAIN_CHECK(node.int_attribute("training_mode", 0) == 0 && node.node.output_size() == 1,
               node.where(), ": training-mode batch normalisation is not imported");
  const std::vector<float> gamma = float_values(node.required_constant(1, "scale"));
  const std::vector<float> beta = float_values(node.required_constant(2, "bias"));
  const std::vector<float> mean = float_values(node.required_constant(3, "mean"));
  const std::vector<float> variance = float_values(node.required_constant(4, "variance"));
  const std::int64_t channels = static_cast<std::int64_t>(mean.size());
  const std::string& top = node.node.output(0);
  LayerParameter& bn = node.add_layer("BatchNorm", {node.node.input(0)}, {top});
  bn.mutable_batch_norm_param()->set_eps(node.float_attribute("epsilon", 1e-5f));
  node.add_blob(bn, {channels}, mean);
  node.add_blob(bn, {channels}, variance);
  node.add_blob(bn, {1}, {1.0f});
  const bool identity = std::all_of(gamma.begin(), gamma.end(), [](float g) { return g == 1; }) &&
                        std::all_of(beta.begin(), beta.end(), [](float b) { return b == 0; });
  if (identity) return;
  LayerParameter& scale = node.add_layer("Scale", {top}, {top}, node.name + "/scale");
  scale.mutable_scale_param()->set_bias_term(true);
  node.add_blob(scale, {channels}, gamma);
  node.add_blob(scale, {channels}, beta);
}

// Gemm: alpha A B' + beta C with B, C constant and A not transposed, an
// InnerProduct (transpose when B is (K, N), as Caffe's transpose stores it).
void import_gemm(NodeImport& node) {
  XTRAIN_CHECK(node.int_attribute("transA", 0) == 0, node.where(), ": transA is not imported");
  const onnx::TensorProto& b = node.required_constant(1, "weights");
  XTRAIN_CHECK(b.dims_size() == 2, node.where(), ": weights of ", b.dims_size(), " axes");
  const bool trans_b = node.int_attribute("transB", 0) != 0;
  const float alpha = node.float_attribute("alpha", 1.0f),
              beta = node.float_attribute("beta", 1.0f);
  const std::int64_t outputs = trans_b ? b.dims(0) : b.dims(1);
  LayerParameter& layer =
      node.add_layer("InnerProduct", {node.node.input(0)}, {node.node.output(0)});
  InnerProductParameter* ip = layer.mutable_inner_product_param();
  ip->set_num_output(static_cast<std::uint32_t>(outputs));
  ip->set_transpose(!trans_b);
  ip->set_bias_term(node.has_input(2));
  std::vector<float> weights = float_values(b);
  for (float& w : weights) w *= alpha;
  node.add_blob(layer, dims_of(b), weights);
  if (node.has_input(2)) {
    const onnx::TensorProto& c = node.required_constant(2, "bias");
    XTRAIN_CHECK(element_count(c) == outputs, node.where(), ": a bias C of ", element_count(c),
                 " values for ", outputs, " outputs (only a per-output bias is imported)");
    std::vector<float> bias = float_values(c);
    for (float& value : bias) value *= beta;
    node.add_blob(layer, {outputs}, bias);
  }
  node.state.ranks[node.node.output(0)] = 2;
}

// MatMul by a constant (K, N): an InnerProduct over the last axis.
void import_matmul(NodeImport& node) {
  XTRAIN_CHECK(node.constant(1) != nullptr, node.where(),
               ": a product of two computed values (attention's queries by keys, say) has no "
               "Caffe layer; InnerProduct multiplies by learned weights only");
  const onnx::TensorProto& b = node.required_constant(1, "weights");
  const int rank = node.input_rank(0);
  XTRAIN_CHECK(b.dims_size() == 2 && rank >= 2, node.where(),
               ": only a product of a value of known rank >= 2 by a constant matrix is imported");
  LayerParameter& layer =
      node.add_layer("InnerProduct", {node.node.input(0)}, {node.node.output(0)});
  InnerProductParameter* ip = layer.mutable_inner_product_param();
  ip->set_num_output(static_cast<std::uint32_t>(b.dims(1)));
  ip->set_transpose(true);
  ip->set_bias_term(false);
  ip->set_axis(rank - 1);
  node.add_blob(layer, dims_of(b), float_values(b));
}

// LRN: Caffe's ACROSS_CHANNELS LRN, bias as k.
void import_lrn(NodeImport& node) {
  LayerParameter& layer = node.add_layer("LRN", {node.node.input(0)}, {node.node.output(0)});
  LRNParameter* lrn = layer.mutable_lrn_param();
  lrn->set_local_size(static_cast<std::uint32_t>(node.int_attribute("size", 5)));
  lrn->set_alpha(node.float_attribute("alpha", 1e-4f));
  lrn->set_beta(node.float_attribute("beta", 0.75f));
  lrn->set_k(node.float_attribute("bias", 1.0f));
}

}  // namespace

NodeImporter find_node_importer(const std::string& op_type) {
  static const std::map<std::string, NodeImporter> kImporters = {
      {"Conv", import_convolution},
      {"ConvTranspose", import_convolution},
      {"Pad", import_pad},
      {"MaxPool", import_pooling},
      {"AveragePool", import_pooling},
      {"GlobalAveragePool", import_global_pooling},
      {"GlobalMaxPool", import_global_pooling},
      {"ReduceMean", import_reduce},
      {"ReduceSum", import_reduce},
      {"ReduceL1", import_reduce},
      {"ReduceSumSquare", import_reduce},
      {"Tile", import_tile},
      {"Slice", import_slice},
      {"BatchNormalization", import_batch_norm},
      {"Gemm", import_gemm},
      {"MatMul", import_matmul},
      {"LRN", import_lrn},
      {"LayerNormalization", import_layer_normalization},
  };
  const auto found = kImporters.find(op_type);
  if (found != kImporters.end()) return found->second;
  for (const auto finder :
       {find_elementwise_importer, find_activation_importer, find_resize_importer}) {
    if (const NodeImporter importer = finder(op_type)) return importer;
  }
  return nullptr;
}

}  // namespace xtrain::interchange
