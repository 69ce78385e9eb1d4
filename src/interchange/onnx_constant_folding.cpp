// Nodes whose outputs are known when the model is read, folded into
// constants instead of layers:
// - aliases of constants: PyTorch's exporter stores parameters with equal
//   values once and names the others through Identity nodes (zero biases,
//   most often);
// - the shape arithmetic exporters write around a static-shape net:
//   Shape -> Gather -> Unsqueeze -> Concat -> Reshape for a flatten,
//   Shape -> Gather -> Add -> Div -> Mul -> Slice for torch.chunk. A Shape
//   of a computed value reads its shape from the layers imported so far
//   (onnx_import_shapes.cpp): the import is for the file's input size, as
//   the pooling checks are;
// - any other supported operator all of whose inputs are constants.
// The importers that need a constant input (a Reshape's shape, a Slice's
// bounds, a Conv's bias) then read these as they read initializers.
#include <algorithm>
#include <cmath>
#include <map>

#include "interchange/onnx_node_import.hpp"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

// A constant's values as doubles (exact for the int64 sizes and indices of
// shape arithmetic), its dims and whether it holds integers.
struct Values {
  std::vector<std::int64_t> dims;
  std::vector<double> data;
  bool integer = false;
};

bool is_integer_type(int type) {
  return type == onnx::TensorProto::INT64 || type == onnx::TensorProto::INT32;
}

Values values_of(const onnx::TensorProto& tensor) {
  Values v;
  v.dims.assign(tensor.dims().begin(), tensor.dims().end());
  v.integer = is_integer_type(tensor.data_type());
  if (v.integer) {
    for (std::int64_t x : int64_values(tensor)) v.data.push_back(static_cast<double>(x));
  } else {
    for (float x : float_values(tensor)) v.data.push_back(x);
  }
  return v;
}

void record(NodeImport& node, int output, const Values& v) {
  onnx::TensorProto tensor;
  tensor.set_name(node.node.output(output));
  for (std::int64_t dim : v.dims) tensor.add_dims(dim);
  if (v.integer) {
    tensor.set_data_type(onnx::TensorProto::INT64);
    for (double x : v.data) tensor.add_int64_data(static_cast<std::int64_t>(x));
  } else {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    for (double x : v.data) tensor.add_float_data(static_cast<float>(x));
  }
  node.state.folded_constants.push_back(std::move(tensor));
  node.state.constants[node.node.output(output)] = &node.state.folded_constants.back();
  node.state.ranks[node.node.output(output)] = static_cast<int>(v.dims.size());
}

// A folded node's input `index`: every named input is a constant here, but
// an optional one may be left empty or missing (an Add with one input), which
// these folders cannot compute without.
Values input_values(const NodeImport& node, int index) {
  const onnx::TensorProto* tensor = node.constant(index);
  XTRAIN_CHECK(tensor != nullptr, node.where(), ": input ", index, " of ", node.node.op_type(),
               " is missing; give the node all ", node.node.op_type(), "'s inputs");
  return values_of(*tensor);
}

// An axis of a tensor of `rank` axes, negative counting from the end.
std::int64_t resolve_axis(const NodeImport& node, std::int64_t axis, std::int64_t rank) {
  const std::int64_t resolved = axis < 0 ? axis + rank : axis;
  XTRAIN_CHECK(resolved >= 0 && resolved < rank, node.where(), ": axis ", axis, " is outside the ",
               rank, " axes of its constant input");
  return resolved;
}

Values fold_shape(NodeImport& node) {
  std::vector<std::int64_t> dims;
  if (node.constant(0) != nullptr) {
    dims = input_values(node, 0).dims;
  } else {
    for (int dim : imported_blob_shape(node.state, node.node.input(0))) dims.push_back(dim);
  }
  const auto rank = static_cast<std::int64_t>(dims.size());
  // Opset 15's start and end, clamped as ONNX says.
  auto clamp = [rank](std::int64_t at) {
    return std::clamp<std::int64_t>(at < 0 ? at + rank : at, 0, rank);
  };
  const std::int64_t start = clamp(node.int_attribute("start", 0));
  const std::int64_t end = clamp(node.int_attribute("end", rank));
  Values v;
  v.integer = true;
  for (std::int64_t i = start; i < end; ++i) v.data.push_back(static_cast<double>(dims[i]));
  v.dims = {static_cast<std::int64_t>(v.data.size())};
  return v;
}

// Gather along axis 0 of a 1-d constant (what shape arithmetic does).
Values fold_gather(NodeImport& node) {
  const Values data = input_values(node, 0);
  const Values indices = input_values(node, 1);
  XTRAIN_CHECK(data.dims.size() == 1 && node.int_attribute("axis", 0) == 0, node.where(),
               ": only a Gather from a 1-d constant (a shape) is computed at import");
  Values v;
  v.integer = data.integer;
  v.dims = indices.dims;
  const auto size = static_cast<std::int64_t>(data.data.size());
  for (double index : indices.data) {
    auto at = static_cast<std::int64_t>(index);
    if (at < 0) at += size;
    XTRAIN_CHECK(at >= 0 && at < size, node.where(), ": index ", index, " is outside the ", size,
                 " values it gathers from");
    v.data.push_back(data.data[at]);
  }
  return v;
}

// The axes of Unsqueeze and Squeeze: an attribute before opset 13, then an
// input.
std::vector<std::int64_t> axes_of(const NodeImport& node) {
  if (node.has_input(1)) return int64_values(node.required_constant(1, "axes"));
  return node.ints_attribute("axes");
}

Values fold_unsqueeze(NodeImport& node) {
  Values v = input_values(node, 0);
  const std::vector<std::int64_t> axes = axes_of(node);
  const auto rank = static_cast<std::int64_t>(v.dims.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (std::int64_t axis : axes) inserted[resolve_axis(node, axis, rank)] = true;
  std::vector<std::int64_t> dims;
  auto next = v.dims.begin();
  for (std::int64_t i = 0; i < rank; ++i) dims.push_back(inserted[i] ? 1 : *next++);
  v.dims = dims;
  return v;
}

Values fold_squeeze(NodeImport& node) {
  Values v = input_values(node, 0);
  const std::vector<std::int64_t> axes = axes_of(node);
  const auto rank = static_cast<std::int64_t>(v.dims.size());
  std::vector<bool> removed(rank, axes.empty());
  for (std::int64_t axis : axes) removed[resolve_axis(node, axis, rank)] = true;
  std::vector<std::int64_t> dims;
  for (std::int64_t i = 0; i < rank; ++i) {
    if (!removed[i] || v.dims[i] != 1) dims.push_back(v.dims[i]);
  }
  v.dims = dims;
  return v;
}

Values fold_concat(NodeImport& node) {
  Values v;
  v.dims = {0};
  for (int i = 0; i < node.node.input_size(); ++i) {
    const Values part = input_values(node, i);
    XTRAIN_CHECK(part.dims.size() == 1, node.where(),
                 ": only a Concat of 1-d constants (shapes) is computed at import");
    v.integer = part.integer;
    v.data.insert(v.data.end(), part.data.begin(), part.data.end());
  }
  v.dims[0] = static_cast<std::int64_t>(v.data.size());
  return v;
}

// Add, Sub, Mul, Div of two constants, one of them a single value or both
// of the same shape. Integers divide as ONNX Runtime's (truncating).
Values fold_arithmetic(NodeImport& node) {
  const Values a = input_values(node, 0);
  const Values b = input_values(node, 1);
  XTRAIN_CHECK(a.data.size() == 1 || b.data.size() == 1 || a.dims == b.dims, node.where(),
               ": only constants of one shape, or one of a single value, are computed at import");
  Values v = a.data.size() >= b.data.size() ? a : b;
  v.integer = a.integer && b.integer;
  const std::string& op = node.node.op_type();
  for (std::size_t i = 0; i < v.data.size(); ++i) {
    const double x = a.data[a.data.size() == 1 ? 0 : i];
    const double y = b.data[b.data.size() == 1 ? 0 : i];
    double result = op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y;
    if (v.integer && op == "Div") {
      XTRAIN_CHECK(y != 0, node.where(), ": integer division by zero");
      result = std::trunc(result);
    }
    v.data[i] = result;
  }
  return v;
}

Values fold_cast(NodeImport& node) {
  Values v = input_values(node, 0);
  const std::int64_t to = node.int_attribute("to", onnx::TensorProto::FLOAT);
  XTRAIN_CHECK(is_integer_type(static_cast<int>(to)) || to == onnx::TensorProto::FLOAT ||
                   to == onnx::TensorProto::DOUBLE,
               node.where(), ": a Cast of a constant to type ", to,
               " is not computed at import (only to integers or floats)");
  v.integer = is_integer_type(static_cast<int>(to));
  if (v.integer) {
    for (double& x : v.data) x = std::trunc(x);
  }
  return v;
}

// Slice of a 1-d constant (a shape), steps of 1.
Values fold_slice(NodeImport& node) {
  const Values data = input_values(node, 0);
  XTRAIN_CHECK(data.dims.size() == 1 && !node.has_input(4), node.where(),
               ": only a Slice of a 1-d constant (a shape), steps of 1, is computed at import");
  const auto size = static_cast<std::int64_t>(data.data.size());
  auto clamp = [size](std::int64_t at) {
    return std::clamp<std::int64_t>(at < 0 ? at + size : at, 0, size);
  };
  const std::int64_t start = clamp(int64_values(node.required_constant(1, "starts")).at(0));
  const std::int64_t end = clamp(int64_values(node.required_constant(2, "ends")).at(0));
  Values v;
  v.integer = data.integer;
  for (std::int64_t i = start; i < end; ++i) v.data.push_back(data.data[i]);
  v.dims = {static_cast<std::int64_t>(v.data.size())};
  return v;
}

using Folder = Values (*)(NodeImport& node);

}  // namespace

bool fold_constant_node(NodeImport& node) {
  static const std::map<std::string, Folder> kFolders = {
      {"Gather", fold_gather},  {"Unsqueeze", fold_unsqueeze}, {"Squeeze", fold_squeeze},
      {"Concat", fold_concat},  {"Add", fold_arithmetic},      {"Sub", fold_arithmetic},
      {"Mul", fold_arithmetic}, {"Div", fold_arithmetic},      {"Cast", fold_cast},
      {"Slice", fold_slice}};
  const std::string& op = node.node.op_type();
  if (op == "Shape") {
    record(node, 0, fold_shape(node));
    return true;
  }
  bool all_constant = node.node.input_size() > 0;
  for (int i = 0; i < node.node.input_size(); ++i) {
    all_constant = all_constant && (node.node.input(i).empty() || node.constant(i) != nullptr);
  }
  if (!all_constant) return false;
  if (op == "Identity" || op == "Dropout") {
    // The same tensor under another name (Dropout: in inference).
    node.state.constants[node.node.output(0)] = node.constant(0);
    return true;
  }
  const auto folder = kFolders.find(op);
  if (folder == kFolders.end()) return false;
  record(node, 0, folder->second(node));
  return true;
}

}  // namespace xtrain::interchange
