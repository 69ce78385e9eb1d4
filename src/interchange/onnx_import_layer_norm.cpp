// LayerNormalization (opset 17; PyTorch's nn.LayerNorm, over the last axes
// from `axis`): Caffe has no such layer (MVN normalises a whole item or
// each channel's map), so it is composed of Caffe's layers, with the
// per-position statistics as second bottoms that Scale and Bias broadcast
// over the normalised axes:
//   mean = Reduction MEAN (x, axis)           shape x[:axis]
//   c    = Bias (x, Power(mean, scale -1))    x - mean
//   var  = Reduction MEAN (Power(c, 2), axis)
//   y    = Scale (c, Power(var, shift eps, power -1/2)), then Scale (gamma,
//          bias beta) over the axes from `axis` on.
// Earlier opsets' exports write the same as ReduceMean, Sub, Pow, ReduceMean,
// Add, Sqrt, Div nodes, which import one by one (onnx_import_nodes.cpp,
// onnx_import_elementwise.cpp) to the same arithmetic.
#include "interchange/onnx_node_import.hpp"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {

void import_layer_normalization(NodeImport& node) {
  const int rank = node.input_rank(0);
  XTRAIN_CHECK(rank > 0, node.where(), ": its input's rank is unknown");
  std::int64_t axis = node.int_attribute("axis", -1);
  if (axis < 0) axis += rank;
  XTRAIN_CHECK(axis > 0 && axis < rank, node.where(), ": axis ", node.int_attribute("axis", -1),
               " of ", rank,
               "; only a normalisation over the last axes, not the first, is "
               "imported");
  XTRAIN_CHECK(node.node.output_size() == 1 ||
                   (node.node.output(1).empty() &&
                    (node.node.output_size() < 3 || node.node.output(2).empty())),
               node.where(), ": the mean and inverse deviation outputs are not imported");
  const float eps = node.float_attribute("epsilon", 1e-5f);
  const std::string& x = node.node.input(0);
  const std::string& y = node.node.output(0);
  const std::string at = y + "/";
  auto mean_of = [&](const std::string& input, const std::string& name) {
    LayerParameter& mean =
        node.add_layer("Reduction", {input}, {at + name}, node.name + "/" + name);
    mean.mutable_reduction_param()->set_operation(ReductionParameter::MEAN);
    mean.mutable_reduction_param()->set_axis(static_cast<int>(axis));
    return at + name;
  };
  auto power = [&](const std::string& input, const std::string& name, float exponent, float scale,
                   float shift) {
    PowerParameter* p =
        node.add_layer("Power", {input}, {at + name}, node.name + "/" + name).mutable_power_param();
    p->set_power(exponent);
    p->set_scale(scale);
    p->set_shift(shift);
    return at + name;
  };
  const std::string negated = power(mean_of(x, "mean"), "negated_mean", 1.0f, -1.0f, 0.0f);
  node.add_layer("Bias", {x, negated}, {at + "centred"}, node.name + "/centred")
      .mutable_bias_param()
      ->set_axis(0);
  const std::string variance =
      mean_of(power(at + "centred", "squared", 2.0f, 1.0f, 0.0f), "variance");
  const std::string inverse = power(variance, "inverse_deviation", -0.5f, 1.0f, eps);
  node.add_layer("Scale", {at + "centred", inverse}, {at + "normalised"}, node.name + "/normalised")
      .mutable_scale_param()
      ->set_axis(0);
  // gamma (and beta): shaped like the normalised axes.
  const onnx::TensorProto& gamma = node.required_constant(1, "scale");
  std::vector<std::int64_t> dims(gamma.dims().begin(), gamma.dims().end());
  LayerParameter& affine = node.add_layer("Scale", {at + "normalised"}, {y});
  ScaleParameter* scale = affine.mutable_scale_param();
  scale->set_axis(static_cast<int>(axis));
  scale->set_num_axes(static_cast<int>(rank - axis));
  std::vector<std::int64_t> blob_dims(dims.begin(), dims.end());
  while (static_cast<std::int64_t>(blob_dims.size()) < rank - axis)
    blob_dims.insert(blob_dims.begin(), 1);
  node.add_blob(affine, blob_dims, float_values(gamma));
  if (node.has_input(2)) {
    scale->set_bias_term(true);
    node.add_blob(affine, blob_dims, float_values(node.required_constant(2, "bias")));
  }
  node.state.ranks[y] = rank;
}

}  // namespace xtrain::interchange
