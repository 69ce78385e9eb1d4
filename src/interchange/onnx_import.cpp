// import_onnx: an ONNX model as a net and its weights.
//
// Graph inputs become Input layers (a symbolic dimension, such as a dynamic
// batch, becomes 1: the prototxt's batch is changed like any other); each
// node becomes the layers of its importer (onnx_node_import.hpp), or
// constants when its outputs are known at import (onnx_constant_folding.cpp). The
// windows of imported pooling layers are checked against ONNX's once a Net
// built from the result gives the blob shapes.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "interchange/onnx_node_import.hpp"
#include "xtrain/atomic_file.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"
#include "xtrain/onnx.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using interchange::ImportState;
using interchange::NodeImport;

onnx::ModelProto read_model(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  XTRAIN_CHECK(file.good(), "cannot open '", path, "': no such file or not readable");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  onnx::ModelProto model;
  XTRAIN_CHECK(model.ParseFromString(bytes.str()) && model.has_graph(), "'", path,
               "' is not an ONNX model (no ModelProto with a graph parses from it)");
  return model;
}

int default_domain_opset(const onnx::ModelProto& model, const std::string& path) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      return static_cast<int>(opset.version());
    }
  }
  XTRAIN_CHECK(false, "'", path, "' imports no version of the default ONNX operator set");
  return 0;
}

void add_input_layer(ImportState& state, const onnx::ValueInfoProto& input) {
  LayerParameter& layer = *state.net.add_layer();
  layer.set_name(input.name());
  state.layer_names.insert(input.name());
  layer.set_type("Input");
  layer.add_top(input.name());
  BlobShape* shape = layer.mutable_input_param()->add_shape();
  const auto& dims = input.type().tensor_type().shape().dim();
  for (const auto& dim : dims) shape->add_dim(dim.has_dim_value() ? dim.dim_value() : 1);
  state.ranks[input.name()] = dims.size();
}

void import_node(ImportState& state, const onnx::NodeProto& node, int index) {
  XTRAIN_CHECK(node.output_size() >= 1 && (node.op_type() == "Constant" ||
                                           (node.input_size() >= 1 && !node.input(0).empty())),
               "node '", node.name(), "' (", node.op_type(), ") has no ",
               node.output_size() == 0 ? "output" : "input");
  if (node.op_type() == "Constant") {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.name() == "value" && attribute.has_t()) {
        state.constants[node.output(0)] = &attribute.t();
        return;
      }
    }
    XTRAIN_CHECK(false, "node '", node.name(), "' (Constant): only a tensor 'value' is imported");
  }
  for (int i = 0; i < node.input_size(); ++i) {
    // An AveragePool's output read by anything but its factors' Mul is final.
    if (node.op_type() != "Mul" || i != 0) state.average_pools.erase(node.input(i));
    XTRAIN_CHECK(state.pending_thresholds.count(node.input(i)) == 0 || node.op_type() == "Cast",
                 "node '", node.name(), "' (", node.op_type(), ") reads the comparison '",
                 node.input(i),
                 "'; a Greater is imported only with a Cast to float after it "
                 "(Caffe's Threshold)");
    XTRAIN_CHECK(state.pending_top_k_indices.count(node.input(i)) == 0 || node.op_type() == "Cast",
                 "node '", node.name(), "' (", node.op_type(), ") reads the indices '",
                 node.input(i),
                 "' of a TopK; they are imported only through a Cast to float "
                 "(Caffe's ArgMax)");
    if (state.pending_top_k_values.count(node.input(i)) != 0) {
      interchange::import_top_k_values(state, node.input(i));
    }
    const auto pad = state.pending_pads.find(node.input(i));
    XTRAIN_CHECK(
        pad == state.pending_pads.end() ||
            ((node.op_type() == "AveragePool" || node.op_type() == "Conv") && i == 0),
        pad->second.node, " is read by node '", node.name(), "' (", node.op_type(),
        "); a Pad is imported only in front of an AveragePool or a Conv (Caffe's pooling or "
        "convolution pad)");
  }
  XTRAIN_CHECK(node.domain().empty() || node.domain() == "ai.onnx", "node '", node.name(), "' (",
               node.op_type(), ") is from operator set '", node.domain(),
               "', which xtrain does not import");
  NodeImport context{
      node, state, node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name(),
      index};
  if (interchange::fold_constant_node(context)) return;
  const interchange::NodeImporter importer = interchange::find_node_importer(node.op_type());
  XTRAIN_CHECK(importer != nullptr, "node '", node.name(), "' (", node.op_type(),
               ") has no xtrain layer; docs/onnx.md lists the operators xtrain imports");
  if (node.input_size() > 0) {
    const auto rank = state.ranks.find(node.input(0));
    for (const std::string& output : node.output()) {
      if (rank != state.ranks.end()) state.ranks[output] = rank->second;
    }
  }
  importer(context);
}

// Whether the AVE divisors of ONNX's windows (divided by the folded
// factors) are Caffe's, window by window.
bool same_divisors(const interchange::PoolingCheck& check,
                   const interchange::OnnxPoolingAxis (&axes)[2], bool layer_pads) {
  std::vector<int> onnx[2], caffe[2];
  for (int i = 0; i < 2; ++i) {
    onnx[i] = interchange::onnx_average_divisors(axes[i]);
    caffe[i] = interchange::caffe_average_divisors({axes[i].input, axes[i].kernel, axes[i].stride,
                                                    axes[i].begin_pad + axes[i].pre_padding,
                                                    layer_pads, check.round_up});
    if (onnx[i].size() != caffe[i].size()) return false;
  }
  const std::size_t rows = caffe[0].size(), columns = caffe[1].size();
  if (!check.factors.empty() && check.factors.size() != rows * columns) return false;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < columns; ++c) {
      const double factor = check.factors.empty() ? 1.0 : check.factors[r * columns + c];
      const double divisor = onnx[0][r] * onnx[1][c] / factor;
      if (std::abs(divisor - caffe[0][r] * caffe[1][c]) > 1e-4 * divisor) return false;
    }
  }
  return true;
}

// Checks each imported pooling layer's windows against the ONNX node's,
// with the blob shapes of a Net built from the imported layers.
void check_pooling_windows(const ImportState& state, const std::string& path) {
  if (state.pooling_checks.empty()) return;
  NetParameter param = state.net;
  param.mutable_state()->set_phase(TEST);
  NetOptions options;
  options.verbose = false;
  const interchange::QuietLayerSetUp quiet;
  const Net net(param, options);
  for (const interchange::PoolingCheck& check : state.pooling_checks) {
    const LayerParameter& layer = net.layer_by_name(check.layer)->layer_param();
    const std::vector<int>& shape = net.blob_by_name(layer.bottom(0))->shape();
    interchange::OnnxPoolingAxis axes[2] = {check.axes[0], check.axes[1]};
    const bool layer_pads =
        axes[0].begin_pad + axes[0].pre_padding > 0 || axes[1].begin_pad + axes[1].pre_padding > 0;
    bool same = true;
    for (int i = 0; i < 2; ++i) {
      axes[i].input = shape[2 + i];
      same = same && interchange::caffe_has_same_windows(axes[i], layer_pads, check.round_up);
    }
    same = same && (!check.average || same_divisors(check, axes, layer_pads));
    XTRAIN_CHECK(same, "'", path, "': ", check.node, " on a ", shape[2], "x", shape[3],
                 " input (kernel ", axes[0].kernel, "x", axes[1].kernel, ", stride ",
                 axes[0].stride, "x", axes[1].stride, ", pads ", axes[0].begin_pad, ",",
                 axes[1].begin_pad, ",", axes[0].end_pad, ",", axes[1].end_pad, ", ceil_mode ",
                 axes[0].ceil_mode, ", count_include_pad ", axes[0].count_include_pad,
                 "): its windows or their divisors are not those of any Caffe pooling layer");
  }
}

}  // namespace

ImportedNet import_onnx(const std::string& onnx_path) {
  const onnx::ModelProto model = read_model(onnx_path);
  ImportState state;
  state.opset = default_domain_opset(model, onnx_path);
  const onnx::GraphProto& graph = model.graph();
  state.net.set_name(graph.name());
  state.weights.set_name(graph.name());
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    state.constants[initializer.name()] = &initializer;
  }
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (state.constants.count(input.name()) == 0) add_input_layer(state, input);
  }
  state.graph = &graph;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (state.absorbed.count(i) == 0) import_node(state, graph.node(i), i);
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    if (state.pending_top_k_values.count(output.name()) != 0) {
      interchange::import_top_k_values(state, output.name());
    }
    XTRAIN_CHECK(state.constants.count(output.name()) == 0, "'", onnx_path, "': output '",
                 output.name(), "' is a constant, which a Caffe net cannot output");
  }
  check_pooling_windows(state, onnx_path);
  // Every layer in the weights, in the net's order (as a saved net has
  // them), with its blobs if it learns any.
  std::map<std::string, const LayerParameter*> learned;
  for (const LayerParameter& layer : state.weights.layer()) learned[layer.name()] = &layer;
  NetParameter weights;
  weights.set_name(state.net.name());
  for (const LayerParameter& layer : state.net.layer()) {
    LayerParameter* entry = weights.add_layer();
    entry->set_name(layer.name());
    entry->set_type(layer.type());
    const auto found = learned.find(layer.name());
    if (found != learned.end()) *entry->mutable_blobs() = found->second->blobs();
  }
  return {state.net, weights};
}

void import_onnx(const std::string& onnx_path, const std::string& net_path,
                 const std::string& weights_path) {
  // Both paths before either file: a wrong weights path must not leave a net
  // behind that looks imported.
  check_file_can_be_written(net_path);
  check_file_can_be_written(weights_path);
  const ImportedNet imported = import_onnx(onnx_path);
  write_proto_to_text_file(imported.net, net_path);
  write_proto_to_binary_file(imported.weights, weights_path);
}

}  // namespace xtrain
