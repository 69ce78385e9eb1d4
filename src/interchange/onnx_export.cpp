// export_onnx: a deploy net and its weights as an ONNX model.
//
// A Net built from the prototxt (TEST phase) gives every blob's shape and,
// once the weights are copied in, every layer's learned blobs; the layers
// are then written in the prototxt's order, each by the exporter of its type
// (onnx_layer_export.hpp). ONNX values are written once, so a blob that
// in-place layers rewrite gets one value per writer: the last writer's
// keeps the blob's name (so the net's outputs keep theirs), the others are
// "blob@layer". Input layers' tops are the graph's inputs and keep their
// names.
#include <map>
#include <set>

#include "xtrain/atomic_file.hpp"
#include "interchange/onnx_layer_export.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"
#include "xtrain/onnx.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/weights_coverage.hpp"

namespace xtrain {
namespace {

using interchange::LayerExport;
using interchange::OnnxGraphBuilder;

constexpr int kMinOpset = 13;
constexpr int kMaxOpset = 17;

// Whether the layer after BatchNorm `index` is a learned Scale that reads
// only its output, so both become one BatchNormalization node.
bool folds_scale(const NetParameter& net, int index) {
  if (index + 1 >= net.layer_size()) return false;
  const LayerParameter& bn = net.layer(index);
  const LayerParameter& scale = net.layer(index + 1);
  if (scale.type() != "Scale" || scale.bottom_size() != 1 || bn.top_size() != 1 ||
      scale.bottom(0) != bn.top(0) || scale.scale_param().axis() != 1 ||
      scale.scale_param().num_axes() != 1) {
    return false;
  }
  if (scale.top(0) == scale.bottom(0)) return true;  // in place: nothing else sees BN's output
  for (int j = index + 2; j < net.layer_size(); ++j) {
    for (const std::string& bottom : net.layer(j).bottom()) {
      if (bottom == bn.top(0)) return false;
    }
  }
  return true;
}

std::vector<std::int64_t> value_dims(const Blob& blob, bool dynamic_batch) {
  std::vector<std::int64_t> dims(blob.shape().begin(), blob.shape().end());
  if (dynamic_batch && !dims.empty()) dims[0] = -1;
  return dims;
}

std::int64_t ir_version_for(int opset) { return opset == 13 ? 7 : 8; }

}  // namespace

OnnxExportSummary export_onnx(const NetParameter& deploy, const std::string& weights_path,
                              const std::string& onnx_path, const OnnxExportOptions& options) {
  XTRAIN_CHECK(options.opset >= kMinOpset && options.opset <= kMaxOpset, "--opset ", options.opset,
               " is not one xtrain writes; choose ", kMinOpset, " to ", kMaxOpset);
  NetParameter param = deploy;
  param.mutable_state()->set_phase(TEST);
  const NetParameter layers = filter_net(param);
  // Before building the Net, which would open a data layer's database.
  for (const LayerParameter& layer : layers.layer()) {
    XTRAIN_CHECK(
        layer.type() == "Input" || interchange::find_layer_exporter(layer.type()) != nullptr,
        "layer '", layer.name(), "' (", layer.type(),
        ") has no ONNX equivalent; export a deploy net (Input layers, no data, loss or "
        "accuracy layers) whose layers docs/onnx.md lists");
  }
  NetOptions net_options;
  net_options.verbose = false;
  net_options.fuse_layers = false;
  net_options.share_kept_copies = false;
  net_options.channel_blocked_activations = false;
  Net net(param, net_options);
  if (!weights_path.empty()) {
    const std::vector<std::string> missing = copy_weights_reporting_missing(net, {weights_path});
    XTRAIN_CHECK(missing.empty(), describe_missing_weights(net, missing, {weights_path}),
                 "; export the weights trained for this deploy net");
  }

  onnx::ModelProto model;
  model.set_ir_version(ir_version_for(options.opset));
  model.set_producer_name("xtrain");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(param.name().empty() ? "net" : param.name());
  OnnxGraphBuilder builder(graph);

  // The last writer of each blob; the inputs' names are taken by the graph's inputs.
  std::map<std::string, int> last_writer;
  std::set<std::string> inputs;
  for (int i = 0; i < layers.layer_size(); ++i) {
    for (const std::string& top : layers.layer(i).top()) {
      if (layers.layer(i).type() == "Input") inputs.insert(top);
      last_writer[top] = i;
    }
  }
  for (const auto& [blob, writer] : last_writer) builder.reserve_name(blob);
  auto value_name = [&](const std::string& top, int writer, const std::string& layer_name) {
    if (last_writer[top] == writer && inputs.count(top) == 0) return top;
    return builder.unique_name(top + "@" + layer_name);
  };

  std::map<std::string, std::string> current;  // blob -> its ONNX value now
  for (int i = 0; i < layers.layer_size(); ++i) {
    const LayerParameter& layer = layers.layer(i);
    if (layer.type() == "Input") {
      for (const std::string& top : layer.top()) {
        current[top] = top;
        interchange::set_float_value_info(
            graph->add_input(), top, value_dims(*net.blob_by_name(top), options.dynamic_batch));
      }
      continue;
    }
    const interchange::LayerExporter exporter = interchange::find_layer_exporter(layer.type());
    const bool fold = layer.type() == "BatchNorm" && folds_scale(layers, i);
    const LayerParameter& last = fold ? layers.layer(i + 1) : layer;
    LayerExport context{layer, *net.layer_by_name(layer.name()), {}, {}, {}, {}, builder};
    for (const std::string& bottom : layer.bottom()) {
      XTRAIN_ASSERT(current.count(bottom) != 0, "bottom '", bottom, "' of layer '", layer.name(),
                    "' is written by no earlier layer");
      context.inputs.push_back(current[bottom]);
      context.input_shapes.push_back(net.blob_by_name(bottom)->shape());
    }
    const int writer = fold ? i + 1 : i;
    for (const std::string& top : last.top()) {
      context.outputs.push_back(value_name(top, writer, last.name()));
      context.output_shapes.push_back(net.blob_by_name(top)->shape());
    }
    if (fold) context.folded_scale = net.layer_by_name(last.name()).get();
    exporter(context);
    for (int t = 0; t < last.top_size(); ++t) current[last.top(t)] = context.outputs[t];
    if (fold) ++i;
  }

  OnnxExportSummary summary;
  for (std::size_t j = 0; j < net.output_blobs().size(); ++j) {
    const std::string& name = net.blob_names()[net.output_blob_indices()[j]];
    interchange::set_float_value_info(graph->add_output(), current[name],
                                      value_dims(*net.output_blobs()[j], options.dynamic_batch));
    summary.outputs.push_back(current[name]);
  }
  for (const auto& input : graph->input()) summary.inputs.push_back(input.name());
  std::string bytes;
  XTRAIN_CHECK(model.SerializeToString(&bytes), "the ONNX model of '", param.name(),
               "' is over protobuf's 2 GB limit; ONNX's external data files are not written yet");
  write_file_atomically(onnx_path, bytes);
  summary.nodes = graph->node_size();
  summary.initializers = graph->initializer_size();
  summary.file_bytes = static_cast<std::int64_t>(bytes.size());
  return summary;
}

OnnxExportSummary export_onnx(const std::string& deploy_path, const std::string& weights_path,
                              const std::string& onnx_path, const OnnxExportOptions& options) {
  return export_onnx(read_net_params_from_text_file(deploy_path), weights_path, onnx_path, options);
}

}  // namespace xtrain
