// ONNX nodes for Caffe's learned and windowed layers: Convolution,
// Deconvolution, Pooling, LRN, InnerProduct, BatchNorm (with a folded
// Scale), Scale, Bias and PReLU. The arithmetic of each is stated beside it.
#include <cmath>
#include <map>

#include "interchange/onnx_layer_export.hpp"
#include "interchange/pooling_geometry.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {

std::vector<std::int64_t> to_int64(const std::vector<int>& values) {
  return std::vector<std::int64_t>(values.begin(), values.end());
}

int canonical_axis(const LayerExport& layer, int axis, int rank) {
  XTRAIN_CHECK(axis >= -rank && axis < rank, layer.where(), ": axis ", axis,
               " is outside a blob of ", rank, " axes");
  return axis < 0 ? axis + rank : axis;
}

std::string LayerExport::where() const {
  return "layer '" + param.name() + "' (" + param.type() + ")";
}

std::string LayerExport::blob(int index, const std::string& suffix,
                              std::vector<std::int64_t> dims) const {
  XTRAIN_ASSERT(index < static_cast<int>(layer.blobs().size()), where(), " has no blob ", index);
  const Blob& values = *layer.blobs()[index];
  if (dims.empty() && values.num_axes() > 0) dims = to_int64(values.shape());
  return graph.add_floats(param.name() + "/" + suffix, dims, values.cpu_data());
}

namespace {

// One value per spatial axis from Caffe's repeated field (one value for
// all axes, or one each) or its _h/_w fields (2-d only).
std::vector<std::int64_t> spatial(const google::protobuf::RepeatedField<std::uint32_t>& values,
                                  bool has_hw, std::uint32_t h, std::uint32_t w, int axes,
                                  std::int64_t fallback) {
  if (has_hw) return {h, w};
  std::vector<std::int64_t> result(axes, fallback);
  for (int i = 0; i < axes && !values.empty(); ++i) {
    result[i] = values.size() == 1 ? values[0] : values[i];
  }
  return result;
}

// Convolution: y = W * x + b with Caffe's (out, in / group, k...) weights,
// ONNX's layout too; Deconvolution: its transpose, (in, out / group, k...)
// weights as ONNX's ConvTranspose reads them. Both pad symmetrically.
void export_convolution(LayerExport& layer) {
  const ConvolutionParameter& conv = layer.param.convolution_param();
  XTRAIN_CHECK(conv.axis() == 1, layer.where(), ": axis ", conv.axis(),
               " (ONNX convolutions take channels on axis 1)");
  const int axes = layer.layer.blobs()[0]->num_axes() - 2;
  std::vector<std::int64_t> kernel = to_int64(layer.layer.blobs()[0]->shape());
  kernel.erase(kernel.begin(), kernel.begin() + 2);
  const std::vector<std::int64_t> pad = spatial(conv.pad(), conv.has_pad_h() || conv.has_pad_w(),
                                                conv.pad_h(), conv.pad_w(), axes, 0);
  const std::vector<std::int64_t> stride =
      spatial(conv.stride(), conv.has_stride_h() || conv.has_stride_w(), conv.stride_h(),
              conv.stride_w(), axes, 1);
  const std::vector<std::int64_t> dilation = spatial(conv.dilation(), false, 0, 0, axes, 1);
  std::vector<std::string> inputs = {layer.inputs[0], layer.blob(0, "weights")};
  if (conv.bias_term()) inputs.push_back(layer.blob(1, "bias"));
  const bool transposed = layer.param.type() == "Deconvolution";
  onnx::NodeProto& node = layer.node(transposed ? "ConvTranspose" : "Conv", inputs, layer.outputs);
  std::vector<std::int64_t> pads = pad;
  pads.insert(pads.end(), pad.begin(), pad.end());
  set_attribute(node, "kernel_shape", kernel);
  set_attribute(node, "strides", stride);
  set_attribute(node, "pads", pads);
  set_attribute(node, "dilations", dilation);
  set_attribute(node, "group", static_cast<std::int64_t>(conv.group()));
}

// Pooling with Caffe's rounding (pooling_geometry.hpp): MaxPool or
// AveragePool (counting pads) with the end pads that keep Caffe's windows;
// AVE then multiplies by kernel size / Caffe's divisor where a window is
// clipped; global pooling is Global*Pool. round_mode FLOOR is ONNX's own
// rounding (ceil_mode 0) with Caffe's pad at both ends, for any input size;
// CEIL is written as floor rounding with a longer end pad, not as ceil_mode
// 1, because runtimes disagree on a ceil-mode window that starts in the
// padding.
void export_pooling(LayerExport& layer) {
  const PoolingParameter& pool = layer.param.pooling_param();
  XTRAIN_CHECK(pool.pool() != PoolingParameter::STOCHASTIC, layer.where(),
               ": STOCHASTIC pooling (a probability-weighted average at test time) has no ONNX "
               "operator; use MAX or AVE");
  const bool max = pool.pool() == PoolingParameter::MAX;
  if (pool.global_pooling()) {
    layer.node(max ? "GlobalMaxPool" : "GlobalAveragePool", {layer.inputs[0]}, layer.outputs);
    return;
  }
  const std::vector<int>& in = layer.input_shapes[0];
  const int pad[2] = {static_cast<int>(pool.has_pad_h() ? pool.pad_h() : pool.pad()),
                      static_cast<int>(pool.has_pad_h() ? pool.pad_w() : pool.pad())};
  const int kernel[2] = {
      static_cast<int>(pool.has_kernel_h() ? pool.kernel_h() : pool.kernel_size()),
      static_cast<int>(pool.has_kernel_h() ? pool.kernel_w() : pool.kernel_size())};
  const int stride[2] = {static_cast<int>(pool.has_stride_h() ? pool.stride_h() : pool.stride()),
                         static_cast<int>(pool.has_stride_h() ? pool.stride_w() : pool.stride())};
  const bool layer_pads = pad[0] > 0 || pad[1] > 0;
  const bool round_up = pool.round_mode() == PoolingParameter::CEIL;
  std::vector<std::int64_t> pads(4, 0);
  std::vector<int> divisors[2];
  bool clipped = false;
  for (int i = 0; i < 2; ++i) {
    const PoolingAxis axis{in[2 + i], kernel[i], stride[i], pad[i], layer_pads, round_up};
    pads[i] = pad[i];
    pads[2 + i] = round_up ? onnx_end_pad(axis, pad[i], 0) : pad[i];
    XTRAIN_ASSERT(
        onnx_pooled_length(in[2 + i], kernel[i], stride[i], pad[i], static_cast<int>(pads[2 + i]),
                           false) == layer.output_shapes[0][2 + i],
        layer.where(), ": ONNX pooling length differs from Caffe's on axis ", 2 + i);
    divisors[i] = caffe_average_divisors(axis);
    for (int divisor : divisors[i]) clipped |= divisor != kernel[i];
  }
  const bool correct = !max && clipped;
  const std::string pooled = correct ? layer.local("window_means") : layer.outputs[0];
  onnx::NodeProto& node = layer.node(max ? "MaxPool" : "AveragePool", {layer.inputs[0]}, {pooled},
                                     correct ? "pool" : "");
  set_attribute(node, "kernel_shape", std::vector<std::int64_t>{kernel[0], kernel[1]});
  set_attribute(node, "strides", std::vector<std::int64_t>{stride[0], stride[1]});
  set_attribute(node, "pads", pads);
  if (!max) set_attribute(node, "count_include_pad", std::int64_t{1});
  if (!correct) return;
  // Each output position's factor: kernel area / Caffe's clipped area.
  const std::int64_t rows = divisors[0].size(), columns = divisors[1].size();
  std::vector<float> factors(rows * columns);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < columns; ++c) {
      factors[r * columns + c] = static_cast<float>(kernel[0] * kernel[1]) /
                                 static_cast<float>(divisors[0][r] * divisors[1][c]);
    }
  }
  layer.node("Mul",
             {pooled, layer.graph.add_floats(layer.param.name() + "/divisor_factors",
                                             {rows, columns}, factors)},
             layer.outputs);
}

// LRN. ACROSS_CHANNELS: x / (k + alpha / n * sum of n squares)^beta, ONNX's
// LRN. WITHIN_CHANNEL: x * (1 + alpha * mean of the n x n squares)^-beta
// (Caffe ignores k there), the mean an AveragePool counting the zero pads.
void export_lrn(LayerExport& layer) {
  const LRNParameter& lrn = layer.param.lrn_param();
  if (lrn.norm_region() == LRNParameter::ACROSS_CHANNELS) {
    onnx::NodeProto& node = layer.node("LRN", {layer.inputs[0]}, layer.outputs);
    set_attribute(node, "size", static_cast<std::int64_t>(lrn.local_size()));
    set_attribute(node, "alpha", lrn.alpha());
    set_attribute(node, "beta", lrn.beta());
    set_attribute(node, "bias", lrn.k());
    return;
  }
  const std::int64_t n = lrn.local_size();
  const std::int64_t p = (n - 1) / 2;
  const std::string& x = layer.inputs[0];
  const std::string squares = layer.local("squares");
  layer.node("Mul", {x, x}, {squares}, "square");
  const std::string mean = layer.local("mean");
  onnx::NodeProto& pool = layer.node("AveragePool", {squares}, {mean}, "mean");
  set_attribute(pool, "kernel_shape", std::vector<std::int64_t>{n, n});
  set_attribute(pool, "pads", std::vector<std::int64_t>{p, p, p, p});
  set_attribute(pool, "count_include_pad", std::int64_t{1});
  const std::string scaled = layer.local("scaled");
  layer.node("Mul", {mean, layer.graph.add_scalar(layer.param.name() + "/alpha", lrn.alpha())},
             {scaled}, "alpha");
  const std::string shifted = layer.local("shifted");
  layer.node("Add", {scaled, layer.graph.add_scalar(layer.param.name() + "/one", 1.0f)}, {shifted},
             "shift");
  const std::string factor = layer.local("factor");
  layer.node("Pow", {shifted, layer.graph.add_scalar(layer.param.name() + "/beta", -lrn.beta())},
             {factor}, "power");
  layer.node("Mul", {x, factor}, layer.outputs);
}

// InnerProduct: y = x W^T + b, x flattened from `axis` (W is (out, K), or
// (K, out) with transpose). Axis 1: Flatten + Gemm; otherwise the leading
// axes stay: Reshape to (..., K), MatMul by W^T, Add b.
void export_inner_product(LayerExport& layer) {
  const InnerProductParameter& ip = layer.param.inner_product_param();
  const int rank = static_cast<int>(layer.input_shapes[0].size());
  const int axis = canonical_axis(layer, ip.axis(), rank);
  if (axis == 1) {
    std::string flat = layer.inputs[0];
    if (rank != 2) {
      flat = layer.local("flat");
      set_attribute(layer.node("Flatten", {layer.inputs[0]}, {flat}, "flatten"), "axis",
                    std::int64_t{1});
    }
    std::vector<std::string> inputs = {flat, layer.blob(0, "weights")};
    if (ip.bias_term()) inputs.push_back(layer.blob(1, "bias"));
    onnx::NodeProto& gemm = layer.node("Gemm", inputs, layer.outputs);
    set_attribute(gemm, "transB", std::int64_t{ip.transpose() ? 0 : 1});
    return;
  }
  const Blob& weights = *layer.layer.blobs()[0];
  const int outputs = static_cast<int>(ip.num_output());
  const int k = static_cast<int>(weights.count()) / outputs;
  // MatMul wants (K, out): W^T unless Caffe already stores it transposed.
  std::vector<float> k_by_out(weights.count());
  for (int o = 0; o < outputs; ++o) {
    for (int i = 0; i < k; ++i) {
      k_by_out[i * outputs + o] =
          ip.transpose() ? weights.cpu_data()[i * outputs + o] : weights.cpu_data()[o * k + i];
    }
  }
  std::vector<std::int64_t> shape(axis, 0);
  shape.push_back(-1);
  const std::string flat = layer.local("flat");
  layer.node("Reshape",
             {layer.inputs[0], layer.graph.add_int64s(layer.param.name() + "/shape", shape)},
             {flat}, "flatten");
  const std::string w =
      layer.graph.add_floats(layer.param.name() + "/weights", {k, outputs}, k_by_out);
  if (!ip.bias_term()) {
    layer.node("MatMul", {flat, w}, layer.outputs);
    return;
  }
  const std::string product = layer.local("product");
  layer.node("MatMul", {flat, w}, {product}, "matmul");
  layer.node("Add", {product, layer.blob(1, "bias", {outputs})}, layer.outputs);
}

// The shape a per-channel (or per-`axes`) parameter takes to broadcast
// against a blob of `rank` axes from `axis` on: its dims, then ones.
std::vector<std::int64_t> broadcast_dims(const std::vector<int>& blob_shape, int axis,
                                         int num_axes) {
  const int rank = static_cast<int>(blob_shape.size());
  const int end = num_axes < 0 ? rank : axis + num_axes;
  std::vector<std::int64_t> dims(blob_shape.begin() + axis, blob_shape.begin() + end);
  dims.resize(rank - axis, 1);
  return dims;
}

// BatchNorm at inference: (x - mean) / sqrt(var + eps) with Caffe's stored
// mean = blob0 / s, var = blob1 / s, s = blob2[0] (s = 0: both 0), then
// gamma * . + beta: NVIDIA Caffe's scale_bias blobs 3 and 4 (else 1 and 0),
// and a folded Scale's g and b after them (gamma' = g * gamma, beta' =
// g * beta + b).
void export_batch_norm(LayerExport& layer) {
  const BatchNormParameter& bn = layer.param.batch_norm_param();
  XTRAIN_CHECK(!bn.has_use_global_stats() || bn.use_global_stats(), layer.where(),
               ": use_global_stats: false normalises by each batch's own statistics, which ONNX's "
               "BatchNormalization does not; remove it from the deploy net");
  const auto& blobs = layer.layer.blobs();
  const std::int64_t channels = blobs[0]->count();
  const float s = blobs[2]->cpu_data()[0];
  const float factor = s == 0 ? 0.0f : 1.0f / s;
  std::vector<float> mean(channels), variance(channels), gamma(channels, 1.0f),
      beta(channels, 0.0f);
  for (std::int64_t c = 0; c < channels; ++c) {
    mean[c] = blobs[0]->cpu_data()[c] * factor;
    variance[c] = blobs[1]->cpu_data()[c] * factor;
  }
  const bool scale_bias = blobs.size() == 5;
  if (scale_bias) {
    for (std::int64_t c = 0; c < channels; ++c) {
      gamma[c] = blobs[3]->cpu_data()[c];
      beta[c] = blobs[4]->cpu_data()[c];
    }
  }
  if (layer.folded_scale != nullptr) {
    const auto& scale_blobs = layer.folded_scale->blobs();
    for (std::int64_t c = 0; c < channels; ++c) {
      const float g = scale_blobs[0]->cpu_data()[c];
      const float b = scale_blobs.size() > 1 ? scale_blobs[1]->cpu_data()[c] : 0.0f;
      gamma[c] = scale_bias ? g * gamma[c] : g;
      beta[c] = scale_bias ? g * beta[c] + b : b;
    }
  }
  const std::string& name = layer.param.name();
  onnx::NodeProto& node =
      layer.node("BatchNormalization",
                 {layer.inputs[0], layer.graph.add_floats(name + "/gamma", {channels}, gamma),
                  layer.graph.add_floats(name + "/beta", {channels}, beta),
                  layer.graph.add_floats(name + "/mean", {channels}, mean),
                  layer.graph.add_floats(name + "/variance", {channels}, variance)},
                 layer.outputs);
  set_attribute(node, "epsilon", bn.eps());
}

// Scale: y = x * s (+ b), s and b shaped like x's axes [axis, axis +
// num_axes), learned or (Scale only) a second bottom; Bias: y = x + b.
void export_scale_or_bias(LayerExport& layer) {
  const bool is_scale = layer.param.type() == "Scale";
  const int rank = static_cast<int>(layer.input_shapes[0].size());
  const int axis = canonical_axis(
      layer, is_scale ? layer.param.scale_param().axis() : layer.param.bias_param().axis(), rank);
  // With a second bottom Caffe ignores num_axes: that bottom's axes are the ones covered.
  const int num_axes = layer.inputs.size() > 1 ? static_cast<int>(layer.input_shapes[1].size())
                       : is_scale              ? layer.param.scale_param().num_axes()
                                               : layer.param.bias_param().num_axes();
  const std::vector<std::int64_t> dims = broadcast_dims(layer.input_shapes[0], axis, num_axes);
  std::string factor;
  if (layer.inputs.size() > 1) {
    factor = layer.local("factor");
    layer.node("Reshape",
               {layer.inputs[1], layer.graph.add_int64s(layer.param.name() + "/shape", dims)},
               {factor}, "reshape");
  } else {
    factor = layer.blob(0, is_scale ? "scale" : "bias", dims);
  }
  const bool bias_after = is_scale && layer.param.scale_param().bias_term();
  if (!bias_after) {
    layer.node(is_scale ? "Mul" : "Add", {layer.inputs[0], factor}, layer.outputs);
    return;
  }
  const std::string scaled = layer.local("scaled");
  layer.node("Mul", {layer.inputs[0], factor}, {scaled}, "scale");
  const int bias_blob = layer.inputs.size() > 1 ? 0 : 1;
  layer.node("Add", {scaled, layer.blob(bias_blob, "bias", dims)}, layer.outputs);
}

// PReLU: y = max(0, x) + a min(0, x), a per channel (axis 1) or one shared.
void export_prelu(LayerExport& layer) {
  const std::vector<std::int64_t> dims = layer.param.prelu_param().channel_shared()
                                             ? std::vector<std::int64_t>{1}
                                             : broadcast_dims(layer.input_shapes[0], 1, 1);
  layer.node("PRelu", {layer.inputs[0], layer.blob(0, "slope", dims)}, layer.outputs);
}

}  // namespace

LayerExporter find_layer_exporter(const std::string& type) {
  static const std::map<std::string, LayerExporter> kExporters = {
      {"Convolution", export_convolution},
      {"Deconvolution", export_convolution},
      {"Pooling", export_pooling},
      {"LRN", export_lrn},
      {"InnerProduct", export_inner_product},
      {"BatchNorm", export_batch_norm},
      {"Scale", export_scale_or_bias},
      {"Bias", export_scale_or_bias},
      {"PReLU", export_prelu},
  };
  const auto found = kExporters.find(type);
  if (found != kExporters.end()) return found->second;
  if (LayerExporter exporter = find_elementwise_exporter(type)) return exporter;
  if (LayerExporter exporter = find_newer_layer_exporter(type)) return exporter;
  return find_shape_exporter(type);
}

}  // namespace xtrain::interchange
