// Resize (opset 11 and later) and Upsample (opsets 7 to 9) in nearest mode
// by one whole factor on both spatial axes: the Upsample layer (each value
// an s x s block), which is what ONNX computes for PyTorch's
// nn.Upsample(scale_factor=s, mode="nearest"): coordinate_transformation_mode
// "asymmetric" and nearest_mode "floor" take output x from input floor(x /
// s). Other modes and fractional or uneven factors are refused naming the
// attribute, as Upsample cannot compute them.
#include <cmath>

#include "interchange/onnx_node_import.hpp"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

// The factors of the four axes: a `scales` constant, or `sizes` against
// the input's shape.
std::vector<float> resize_factors(NodeImport& node) {
  const bool resize = node.node.op_type() == "Resize";
  const int scales_input = resize ? 2 : 1;
  if (!resize && node.state.opset < 9) {
    std::vector<float> scales;
    const onnx::AttributeProto* attribute = node.attribute("scales");
    if (attribute != nullptr) scales.assign(attribute->floats().begin(), attribute->floats().end());
    return scales;
  }
  const onnx::TensorProto* scales = node.constant(scales_input);
  if (scales != nullptr && element_count(*scales) > 0) return float_values(*scales);
  XTRAIN_CHECK(resize && node.has_input(3), node.where(),
               ": its scales or sizes must be constants");
  const std::vector<std::int64_t> sizes = int64_values(node.required_constant(3, "sizes"));
  const std::vector<int> shape = imported_blob_shape(node.state, node.node.input(0));
  XTRAIN_CHECK(sizes.size() == shape.size(), node.where(), ": ", sizes.size(),
               " sizes for a value of ", shape.size(), " axes");
  std::vector<float> factors;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    factors.push_back(static_cast<float>(sizes[i]) / static_cast<float>(shape[i]));
  }
  return factors;
}

void import_resize(NodeImport& node) {
  XTRAIN_CHECK(node.string_attribute("mode", "nearest") == "nearest", node.where(), ": mode '",
               node.string_attribute("mode", "nearest"),
               "'; only nearest (Caffe's Upsample) is imported");
  if (node.node.op_type() == "Resize") {
    const std::string transform =
        node.string_attribute("coordinate_transformation_mode", "half_pixel");
    const std::string rounding = node.string_attribute("nearest_mode", "round_prefer_floor");
    XTRAIN_CHECK(transform == "asymmetric" && rounding == "floor", node.where(),
                 ": coordinate_transformation_mode '", transform, "' with nearest_mode '", rounding,
                 "'; only 'asymmetric' with 'floor' (PyTorch's nearest upsampling, each value "
                 "an s x s block) is imported");
  }
  const std::vector<float> factors = resize_factors(node);
  XTRAIN_CHECK(factors.size() == 4 && factors[0] == 1.0f && factors[1] == 1.0f &&
                   factors[2] == factors[3] && factors[2] >= 1.0f &&
                   factors[2] == std::floor(factors[2]),
               node.where(),
               ": only one whole factor on both spatial axes of a 4-d value (Upsample's scale) "
               "is imported");
  node.add_layer("Upsample", {node.node.input(0)}, {node.node.output(0)})
      .mutable_upsample_param()
      ->set_scale(static_cast<int>(factors[2]));
}

}  // namespace

NodeImporter find_resize_importer(const std::string& op_type) {
  return op_type == "Resize" || op_type == "Upsample" ? import_resize : nullptr;
}

}  // namespace xtrain::interchange
