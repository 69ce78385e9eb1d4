// OnnxGraphBuilder: appends nodes, attributes and constant tensors to an
// ONNX graph, keeping every value and node name unique (ONNX values are
// written once; Caffe's in-place layers write a blob many times).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "interchange/onnx.pb.h"

namespace xtrain::interchange {

class OnnxGraphBuilder {
 public:
  explicit OnnxGraphBuilder(onnx::GraphProto* graph) : graph_(graph) {}

  // `wanted` if no value or node has that name yet, else `wanted` with the
  // first free suffix "_1", "_2", ...
  std::string unique_name(const std::string& wanted);
  // Marks a name as taken (graph inputs, names chosen ahead).
  void reserve_name(const std::string& name) { names_.insert(name); }

  onnx::NodeProto& add_node(const std::string& op_type, const std::string& name,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs);

  // Constant tensors (initializers); each returns the unique name it got.
  std::string add_floats(const std::string& name, const std::vector<std::int64_t>& dims,
                         const float* values);
  std::string add_floats(const std::string& name, const std::vector<std::int64_t>& dims,
                         const std::vector<float>& values) {
    return add_floats(name, dims, values.data());
  }
  std::string add_scalar(const std::string& name, float value) {
    return add_floats(name, {}, &value);
  }
  std::string add_int64s(const std::string& name, const std::vector<std::int64_t>& values);

  onnx::GraphProto& graph() { return *graph_; }

 private:
  onnx::GraphProto* graph_;
  std::set<std::string> names_;
};

void set_attribute(onnx::NodeProto& node, const std::string& name, std::int64_t value);
void set_attribute(onnx::NodeProto& node, const std::string& name, float value);
void set_attribute(onnx::NodeProto& node, const std::string& name, const std::string& value);
void set_attribute(onnx::NodeProto& node, const std::string& name,
                   const std::vector<std::int64_t>& values);

// A graph input or output of float elements; a negative dimension is the
// symbolic batch "N".
void set_float_value_info(onnx::ValueInfoProto* info, const std::string& name,
                          const std::vector<std::int64_t>& dims);

}  // namespace xtrain::interchange
