// What the export of one Caffe layer to ONNX nodes sees and writes.
//
// The driver (onnx_export.cpp) names the ONNX values of the layer's bottoms
// and tops and gives their shapes (from a Net built of the deploy prototxt);
// an exporter appends the nodes and constants that compute the tops from the
// bottoms with Caffe's arithmetic. Exporters live in onnx_export_*.cpp,
// found by layer type through find_layer_exporter().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interchange/onnx_graph_builder.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::interchange {

struct LayerExport {
  const LayerParameter& param;
  const Layer& layer;               // its learned blobs (weights, biases, statistics)
  std::vector<std::string> inputs;  // ONNX values of the bottoms
  std::vector<std::vector<int>> input_shapes;
  std::vector<std::string> outputs;  // ONNX values to write, one per top
  std::vector<std::vector<int>> output_shapes;
  OnnxGraphBuilder& graph;
  // BatchNorm only: the learned Scale right after it, folded into the one
  // BatchNormalization node (outputs are then the Scale's).
  const Layer* folded_scale = nullptr;

  // A fresh name for a value or constant inside this layer's nodes.
  std::string local(const std::string& suffix) const {
    return graph.unique_name(param.name() + "/" + suffix);
  }
  // A node named after the layer (a helper node: after the layer and `suffix`).
  onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& in,
                        const std::vector<std::string>& out, const std::string& suffix = "") {
    return graph.add_node(op_type, suffix.empty() ? param.name() : param.name() + "/" + suffix, in,
                          out);
  }
  // A learned blob as a constant, reshaped to `dims` (its own shape if empty).
  std::string blob(int index, const std::string& suffix, std::vector<std::int64_t> dims = {}) const;
  // "layer 'conv1' (Convolution)" for messages.
  std::string where() const;
};

using LayerExporter = void (*)(LayerExport& layer);

// The exporter of a Caffe layer type, or nullptr when it has no ONNX form.
LayerExporter find_layer_exporter(const std::string& type);

// Exporters of the arithmetic and shape layers (onnx_export_elementwise.cpp,
// onnx_export_shapes.cpp) and of the learned and windowed ones
// (onnx_export_layers.cpp), by type.
LayerExporter find_elementwise_exporter(const std::string& type);
LayerExporter find_shape_exporter(const std::string& type);
// Clip, Swish, GELU, Permute, Upsample (onnx_export_newer_layers.cpp).
LayerExporter find_newer_layer_exporter(const std::string& type);

// Helpers shared by the exporters.
std::vector<std::int64_t> to_int64(const std::vector<int>& values);
// `axis` of a blob of `rank` axes, negative counting from the end, checked.
int canonical_axis(const LayerExport& layer, int axis, int rank);

}  // namespace xtrain::interchange
