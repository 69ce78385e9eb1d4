// ONNX nodes for Caffe's layers that work along axes: Softmax, Concat,
// Slice, Flatten, Reshape, Crop, Tile, ArgMax, Reduction and MVN.
#include <map>
#include <numeric>

#include "interchange/onnx_layer_export.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

int rank_of(const LayerExport& layer) { return static_cast<int>(layer.input_shapes[0].size()); }

std::vector<std::int64_t> axes_from(int first, int rank) {
  std::vector<std::int64_t> axes(rank - first);
  std::iota(axes.begin(), axes.end(), first);
  return axes;
}

void export_softmax(LayerExport& layer) {
  set_attribute(
      layer.node("Softmax", {layer.inputs[0]}, layer.outputs), "axis",
      std::int64_t{canonical_axis(layer, layer.param.softmax_param().axis(), rank_of(layer))});
}

void export_concat(LayerExport& layer) {
  const ConcatParameter& concat = layer.param.concat_param();
  const int axis = concat.has_axis() || !concat.has_concat_dim()
                       ? concat.axis()
                       : static_cast<int>(concat.concat_dim());
  set_attribute(layer.node("Concat", layer.inputs, layer.outputs), "axis",
                std::int64_t{canonical_axis(layer, axis, rank_of(layer))});
}

// Slice: the parts between the slice points (or equal parts), ONNX's Split.
void export_slice(LayerExport& layer) {
  const SliceParameter& slice = layer.param.slice_param();
  const int axis = canonical_axis(layer,
                                  slice.has_axis() || !slice.has_slice_dim()
                                      ? slice.axis()
                                      : static_cast<int>(slice.slice_dim()),
                                  rank_of(layer));
  std::vector<std::int64_t> sizes;
  for (const std::vector<int>& shape : layer.output_shapes) sizes.push_back(shape[axis]);
  onnx::NodeProto& node = layer.node(
      "Split", {layer.inputs[0], layer.graph.add_int64s(layer.param.name() + "/sizes", sizes)},
      layer.outputs);
  set_attribute(node, "axis", std::int64_t{axis});
}

// A Reshape to the top's shape that keeps the leading `kept` axes as they
// come (0: any batch size) and infers axis `inferred` (-1).
void reshape_keeping(LayerExport& layer, int kept, int inferred) {
  std::vector<std::int64_t> shape = to_int64(layer.output_shapes[0]);
  for (int i = 0; i < kept; ++i) shape[i] = 0;
  if (inferred >= 0) shape[inferred] = -1;
  layer.node("Reshape",
             {layer.inputs[0], layer.graph.add_int64s(layer.param.name() + "/shape", shape)},
             layer.outputs);
}

// Flatten: axes [axis, end_axis] become one.
void export_flatten(LayerExport& layer) {
  const int rank = rank_of(layer);
  const int axis = canonical_axis(layer, layer.param.flatten_param().axis(), rank);
  const int end = canonical_axis(layer, layer.param.flatten_param().end_axis(), rank);
  if (axis == 1 && end == rank - 1) {
    set_attribute(layer.node("Flatten", {layer.inputs[0]}, layer.outputs), "axis", std::int64_t{1});
    return;
  }
  reshape_keeping(layer, axis, axis);
}

// Reshape: axes [axis, axis + num_axes) become the shape given, whose 0 copies
// the input's axis at the same place and -1 is inferred, as ONNX's Reshape
// reads them; the axes after are given as they are.
void export_reshape(LayerExport& layer) {
  const ReshapeParameter& reshape = layer.param.reshape_param();
  const int rank = rank_of(layer);
  const int start = reshape.axis() >= 0 ? reshape.axis() : rank + reshape.axis() + 1;
  XTRAIN_CHECK(start >= 0 && start <= rank, layer.where(), ": axis ", reshape.axis(),
               " is outside the bottom's ", rank, " axes");
  std::vector<std::int64_t> shape(start, 0);
  for (std::int64_t dim : reshape.shape().dim()) shape.push_back(dim);
  const std::vector<int>& top = layer.output_shapes[0];
  for (std::size_t i = shape.size(); i < top.size(); ++i) shape.push_back(top[i]);
  layer.node("Reshape",
             {layer.inputs[0], layer.graph.add_int64s(layer.param.name() + "/shape", shape)},
             layer.outputs);
}

// Crop: the first bottom cut to the second's size from `axis` on, starting
// at the offsets.
void export_crop(LayerExport& layer) {
  const CropParameter& crop = layer.param.crop_param();
  const int rank = rank_of(layer);
  const int axis = canonical_axis(layer, crop.axis(), rank);
  std::vector<std::int64_t> starts, ends;
  for (int i = axis; i < rank; ++i) {
    const std::int64_t offset = crop.offset_size() == 0   ? 0
                                : crop.offset_size() == 1 ? crop.offset(0)
                                                          : crop.offset(i - axis);
    starts.push_back(offset);
    ends.push_back(offset + layer.output_shapes[0][i]);
  }
  const std::string& name = layer.param.name();
  layer.node("Slice",
             {layer.inputs[0], layer.graph.add_int64s(name + "/starts", starts),
              layer.graph.add_int64s(name + "/ends", ends),
              layer.graph.add_int64s(name + "/axes", axes_from(axis, rank))},
             layer.outputs);
}

// Tile: the axes from `axis` on repeated `tiles` times along `axis`.
void export_tile(LayerExport& layer) {
  const int rank = rank_of(layer);
  std::vector<std::int64_t> repeats(rank, 1);
  repeats[canonical_axis(layer, layer.param.tile_param().axis(), rank)] =
      layer.param.tile_param().tiles();
  layer.node("Tile",
             {layer.inputs[0], layer.graph.add_int64s(layer.param.name() + "/repeats", repeats)},
             layer.outputs);
}

// ArgMax: the top_k indices (as floats) of the largest values along `axis`,
// or of each item flattened, then (N, 1, k, 1, ...); out_max_val: the values
// along `axis`, or indices and values as (N, 2, k, 1, ...).
void export_argmax(LayerExport& layer) {
  const ArgMaxParameter& argmax = layer.param.argmax_param();
  const std::string& name = layer.param.name();
  const bool has_axis = argmax.has_axis();
  std::string input = layer.inputs[0];
  int axis = 1;
  if (has_axis) {
    axis = canonical_axis(layer, argmax.axis(), rank_of(layer));
  } else if (rank_of(layer) != 2) {
    input = layer.local("flat");
    set_attribute(layer.node("Flatten", {layer.inputs[0]}, {input}, "flatten"), "axis",
                  std::int64_t{1});
  }
  const std::string values = layer.local("values"), indices = layer.local("indices");
  set_attribute(layer.node("TopK",
                           {input, layer.graph.add_int64s(
                                       name + "/k", {static_cast<std::int64_t>(argmax.top_k())})},
                           {values, indices}, "top_k"),
                "axis", std::int64_t{axis});
  if (has_axis && argmax.out_max_val()) {
    layer.node("Identity", {values}, layer.outputs);
    return;
  }
  const std::string float_indices = has_axis ? layer.outputs[0] : layer.local("float_indices");
  set_attribute(layer.node("Cast", {indices}, {float_indices}, has_axis ? "" : "cast"), "to",
                std::int64_t{onnx::TensorProto::FLOAT});
  if (has_axis) return;
  // Caffe's top keeps the bottom's rank: (N, 1 or 2, k, 1, ...).
  std::vector<std::int64_t> row_shape = to_int64(layer.output_shapes[0]);
  row_shape[0] = 0;
  row_shape[1] = 1;
  const std::string shape = layer.graph.add_int64s(name + "/shape", row_shape);
  if (!argmax.out_max_val()) {
    layer.node("Reshape", {float_indices, shape}, layer.outputs);
    return;
  }
  const std::string index_rows = layer.local("index_rows"), value_rows = layer.local("value_rows");
  layer.node("Reshape", {float_indices, shape}, {index_rows}, "index_rows");
  layer.node("Reshape", {values, shape}, {value_rows}, "value_rows");
  set_attribute(layer.node("Concat", {index_rows, value_rows}, layer.outputs), "axis",
                std::int64_t{1});
}

// Reduction: coeff times the SUM, ASUM, SUMSQ or MEAN over the axes from
// `axis` on (which disappear).
void export_reduction(LayerExport& layer) {
  const ReductionParameter& reduction = layer.param.reduction_param();
  const int rank = rank_of(layer);
  const std::vector<std::int64_t> axes =
      axes_from(canonical_axis(layer, reduction.axis(), rank), rank);
  const bool scaled = reduction.coeff() != 1.0f;
  const std::string reduced = scaled ? layer.local("reduced") : layer.outputs[0];
  onnx::NodeProto* node = nullptr;
  switch (reduction.operation()) {
    case ReductionParameter::SUM:  // axes are an input from opset 13 on
      node =
          &layer.node("ReduceSum",
                      {layer.inputs[0], layer.graph.add_int64s(layer.param.name() + "/axes", axes)},
                      {reduced}, scaled ? "reduce" : "");
      break;
    case ReductionParameter::ASUM:
      node = &layer.node("ReduceL1", {layer.inputs[0]}, {reduced}, scaled ? "reduce" : "");
      break;
    case ReductionParameter::SUMSQ:
      node = &layer.node("ReduceSumSquare", {layer.inputs[0]}, {reduced}, scaled ? "reduce" : "");
      break;
    case ReductionParameter::MEAN:
      node = &layer.node("ReduceMean", {layer.inputs[0]}, {reduced}, scaled ? "reduce" : "");
      break;
  }
  if (reduction.operation() != ReductionParameter::SUM) set_attribute(*node, "axes", axes);
  set_attribute(*node, "keepdims", std::int64_t{0});
  if (scaled) {
    layer.node("Mul",
               {reduced, layer.graph.add_scalar(layer.param.name() + "/coeff", reduction.coeff())},
               layer.outputs);
  }
}

// MVN: d = x - mean(x); normalize_variance: d / (sqrt(mean(d^2)) + eps),
// over (H, W) of each channel, or (C, H, W) across_channels.
void export_mvn(LayerExport& layer) {
  const MVNParameter& mvn = layer.param.mvn_param();
  const std::vector<std::int64_t> axes = axes_from(mvn.across_channels() ? 1 : 2, rank_of(layer));
  auto mean = [&](const std::string& x, const std::string& out, const std::string& suffix) {
    onnx::NodeProto& node = layer.node("ReduceMean", {x}, {out}, suffix);
    set_attribute(node, "axes", axes);
    set_attribute(node, "keepdims", std::int64_t{1});
  };
  const std::string mu = layer.local("mean");
  mean(layer.inputs[0], mu, "mean");
  if (!mvn.normalize_variance()) {
    layer.node("Sub", {layer.inputs[0], mu}, layer.outputs);
    return;
  }
  const std::string centred = layer.local("centred"), squares = layer.local("squares"),
                    variance = layer.local("variance"), sigma = layer.local("sigma"),
                    divisor = layer.local("divisor");
  layer.node("Sub", {layer.inputs[0], mu}, {centred}, "centre");
  layer.node("Mul", {centred, centred}, {squares}, "square");
  mean(squares, variance, "variance");
  layer.node("Sqrt", {variance}, {sigma}, "sigma");
  layer.node("Add", {sigma, layer.graph.add_scalar(layer.param.name() + "/eps", mvn.eps())},
             {divisor}, "eps");
  layer.node("Div", {centred, divisor}, layer.outputs);
}

// Silence: no node; it only takes blobs that nothing else reads (the parts
// an imported Slice cuts away, onnx_import_patterns.cpp).
void export_silence(LayerExport&) {}

}  // namespace

LayerExporter find_shape_exporter(const std::string& type) {
  static const std::map<std::string, LayerExporter> kExporters = {
      {"Softmax", export_softmax},     {"Concat", export_concat},   {"Slice", export_slice},
      {"Flatten", export_flatten},     {"Reshape", export_reshape}, {"Crop", export_crop},
      {"Silence", export_silence},     {"Tile", export_tile},       {"ArgMax", export_argmax},
      {"Reduction", export_reduction}, {"MVN", export_mvn},
  };
  const auto found = kExporters.find(type);
  return found == kExporters.end() ? nullptr : found->second;
}

}  // namespace xtrain::interchange
