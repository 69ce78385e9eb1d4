// ONNX nodes for the layers newer than Caffe 1.0's zoo that imports of
// PyTorch's models produce, so that such a net exports again:
// - Clip (Caffe master): Clip with its bounds as inputs (opset 11 on);
// - Swish (Caffe master): x · Sigmoid(beta x);
// - GELU (xtrain's): Div by sqrt(2), Erf, Add 1, Mul by x, Mul by 0.5, the
//   nodes torch.onnx.export writes for nn.GELU() (which the import reads
//   back as one GELU layer);
// - Permute (SSD): Transpose, the axes `order` leaves out after it in
//   their order;
// - Upsample (the YOLOv3 forks'): Resize, nearest, each value an s x s
//   block (coordinate_transformation_mode asymmetric, nearest_mode floor).
#include <map>

#include "interchange/onnx_layer_export.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

void export_clip(LayerExport& layer) {
  const ClipParameter& clip = layer.param.clip_param();
  layer.node("Clip",
             {layer.inputs[0], layer.graph.add_scalar(layer.param.name() + "/min", clip.min()),
              layer.graph.add_scalar(layer.param.name() + "/max", clip.max())},
             layer.outputs);
}

void export_swish(LayerExport& layer) {
  const float beta = layer.param.swish_param().beta();
  std::string scaled = layer.inputs[0];
  if (beta != 1.0f) {
    scaled = layer.local("beta_x");
    layer.node("Mul", {layer.inputs[0], layer.graph.add_scalar(layer.param.name() + "/beta", beta)},
               {scaled}, "beta");
  }
  const std::string gate = layer.local("sigmoid");
  layer.node("Sigmoid", {scaled}, {gate}, "sigmoid");
  layer.node("Mul", {layer.inputs[0], gate}, layer.outputs);
}

void export_gelu(LayerExport& layer) {
  const std::string& name = layer.param.name();
  const std::string& x = layer.inputs[0];
  const std::string scaled = layer.local("over_sqrt2");
  const std::string erf = layer.local("erf");
  const std::string cdf_twice = layer.local("one_plus_erf");
  const std::string product = layer.local("x_times");
  layer.node("Div", {x, layer.graph.add_scalar(name + "/sqrt2", 1.41421356237309505f)}, {scaled},
             "div");
  layer.node("Erf", {scaled}, {erf}, "erf");
  layer.node("Add", {erf, layer.graph.add_scalar(name + "/one", 1.0f)}, {cdf_twice}, "add");
  layer.node("Mul", {x, cdf_twice}, {product}, "mul");
  layer.node("Mul", {product, layer.graph.add_scalar(name + "/half", 0.5f)}, layer.outputs);
}

void export_permute(LayerExport& layer) {
  const int rank = static_cast<int>(layer.input_shapes[0].size());
  std::vector<std::int64_t> perm;
  std::vector<bool> named(rank, false);
  for (std::uint32_t axis : layer.param.permute_param().order()) {
    XTRAIN_CHECK(static_cast<int>(axis) < rank && !named[axis], layer.where(),
                 ": order names axis ", axis, " twice or of ", rank);
    named[axis] = true;
    perm.push_back(axis);
  }
  for (int axis = 0; axis < rank; ++axis) {
    if (!named[axis]) perm.push_back(axis);
  }
  set_attribute(layer.node("Transpose", {layer.inputs[0]}, layer.outputs), "perm", perm);
}

void export_upsample(LayerExport& layer) {
  XTRAIN_CHECK(layer.input_shapes[0].size() == 4, layer.where(), ": a ",
               layer.input_shapes[0].size(), "-d input; Resize is written for 4-d ones");
  const auto scale = static_cast<float>(layer.param.upsample_param().scale());
  onnx::NodeProto& resize = layer.node(
      "Resize",
      {layer.inputs[0], "",
       layer.graph.add_floats(layer.param.name() + "/scales", {4}, {1.0f, 1.0f, scale, scale})},
      layer.outputs);
  set_attribute(resize, "mode", std::string("nearest"));
  set_attribute(resize, "coordinate_transformation_mode", std::string("asymmetric"));
  set_attribute(resize, "nearest_mode", std::string("floor"));
}

}  // namespace

LayerExporter find_newer_layer_exporter(const std::string& type) {
  static const std::map<std::string, LayerExporter> kExporters = {
      {"Clip", export_clip},       {"Swish", export_swish},       {"GELU", export_gelu},
      {"Permute", export_permute}, {"Upsample", export_upsample},
  };
  const auto found = kExporters.find(type);
  return found == kExporters.end() ? nullptr : found->second;
}

}  // namespace xtrain::interchange
