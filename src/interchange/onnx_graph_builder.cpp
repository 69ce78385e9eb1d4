#include "interchange/onnx_graph_builder.hpp"

#include <cstring>

namespace xtrain::interchange {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "TensorProto.raw_data is little-endian; a big-endian host would need byte swaps");

std::string OnnxGraphBuilder::unique_name(const std::string& wanted) {
  std::string name = wanted;
  for (int suffix = 1; names_.count(name) != 0; ++suffix) {
    name = wanted + "_" + std::to_string(suffix);
  }
  names_.insert(name);
  return name;
}

onnx::NodeProto& OnnxGraphBuilder::add_node(const std::string& op_type, const std::string& name,
                                            const std::vector<std::string>& inputs,
                                            const std::vector<std::string>& outputs) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op_type);
  node->set_name(unique_name(name));
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return *node;
}

std::string OnnxGraphBuilder::add_floats(const std::string& name,
                                         const std::vector<std::int64_t>& dims,
                                         const float* values) {
  onnx::TensorProto* tensor = graph_->add_initializer();
  tensor->set_name(unique_name(name));
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  std::int64_t count = 1;
  for (std::int64_t dim : dims) {
    tensor->add_dims(dim);
    count *= dim;
  }
  tensor->set_raw_data(values, static_cast<std::size_t>(count) * sizeof(float));
  return tensor->name();
}

std::string OnnxGraphBuilder::add_int64s(const std::string& name,
                                         const std::vector<std::int64_t>& values) {
  onnx::TensorProto* tensor = graph_->add_initializer();
  tensor->set_name(unique_name(name));
  tensor->set_data_type(onnx::TensorProto::INT64);
  tensor->add_dims(static_cast<std::int64_t>(values.size()));
  tensor->set_raw_data(values.data(), values.size() * sizeof(std::int64_t));
  return tensor->name();
}

void set_attribute(onnx::NodeProto& node, const std::string& name, std::int64_t value) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

void set_attribute(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::FLOAT);
  attribute->set_f(value);
}

void set_attribute(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::STRING);
  attribute->set_s(value);
}

void set_attribute(onnx::NodeProto& node, const std::string& name,
                   const std::vector<std::int64_t>& values) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (std::int64_t value : values) attribute->add_ints(value);
}

void set_float_value_info(onnx::ValueInfoProto* info, const std::string& name,
                          const std::vector<std::int64_t>& dims) {
  info->set_name(name);
  onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (std::int64_t dim : dims) {
    if (dim < 0) {
      shape->add_dim()->set_dim_param("N");
    } else {
      shape->add_dim()->set_dim_value(dim);
    }
  }
}

}  // namespace xtrain::interchange
