// What the import of one ONNX node to Caffe layers sees and writes.
//
// The driver (onnx_import.cpp) walks the graph's nodes in order; an
// importer, found by operator through find_node_importer(), appends the
// layers (to `net`) and their learned blobs (to `weights`) that compute the
// node's outputs. ONNX value names become blob names. Constants
// (initializers, Constant nodes) are not layers: the importers read them as
// weights and attributes. A value's rank is tracked where it is known, for
// the broadcasts and axes that depend on it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interchange/onnx.pb.h"
#include "interchange/pooling_geometry.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::interchange {

// A zero Pad of the spatial axes, folded into the AveragePool that reads it.
struct PendingPad {
  std::string source;  // the value padded
  int pad[2] = {0, 0};
  std::string node;  // for messages
};

// A TopK's outputs, which become Caffe's ArgMax once read: the indices
// through a Cast to float (ArgMax), the values by anything (ArgMax with
// out_max_val).
struct PendingTopK {
  std::string source;  // the value searched
  int axis = 0;
  int k = 1;
  std::string layer;  // the name for the ArgMax layer
};

// An imported pooling layer's ONNX windows, checked against Caffe's once
// the blob shapes are known.
struct PoolingCheck {
  std::string layer;
  std::string node;  // "node 'x' (AveragePool)"
  bool average = false;
  bool round_up = true;     // the layer's round_mode: CEIL, or FLOOR
  OnnxPoolingAxis axes[2];  // .input filled in by the check
  // AVE: a Mul by a constant (rows, columns) right after the AveragePool,
  // folded in: the factors by which the average's divisors differ from
  // ONNX's (our exports write kernel area / Caffe's divisor).
  std::vector<float> factors;
};

struct ImportState {
  const onnx::GraphProto* graph = nullptr;
  // Nodes already imported as part of an earlier node's pattern (MVN's).
  std::set<int> absorbed;
  NetParameter net;
  NetParameter weights;
  int opset = 0;
  std::map<std::string, const onnx::TensorProto*> constants;
  std::map<std::string, int> ranks;  // absent: unknown
  std::map<std::string, PendingPad> pending_pads;
  std::vector<PoolingCheck> pooling_checks;
  // Greater(x, t) awaiting the Cast to float that makes it Caffe's
  // Threshold: its boolean output -> (x, t).
  std::map<std::string, std::pair<std::string, float>> pending_thresholds;
  // TopK outputs not yet read: values and indices, by value name.
  std::map<std::string, PendingTopK> pending_top_k_values;
  std::map<std::string, PendingTopK> pending_top_k_indices;
  // The output of each imported AveragePool not yet read, with its check.
  std::map<std::string, std::size_t> average_pools;
  std::set<std::string> layer_names;
  // Reshape outputs by their constant shapes (a Scale's or Bias's second
  // bottom is written reshaped to broadcast).
  std::map<std::string, std::vector<std::int64_t>> reshape_dims;
  // The shapes of the blobs imported so far that were asked for
  // (imported_blob_shape).
  std::map<std::string, std::vector<int>> blob_shapes;
  // The constants computed at import (onnx_constant_folding.cpp), which
  // `constants` points into (a deque: its elements never move).
  std::deque<onnx::TensorProto> folded_constants;
};

struct NodeImport {
  const onnx::NodeProto& node;
  ImportState& state;
  std::string name;  // of the (first) layer
  int index = 0;     // in the graph's nodes

  std::string where() const { return "node '" + node.name() + "' (" + node.op_type() + ")"; }
  const onnx::AttributeProto* attribute(const std::string& attribute_name) const;
  std::int64_t int_attribute(const std::string& attribute_name, std::int64_t fallback) const;
  float float_attribute(const std::string& attribute_name, float fallback) const;
  std::string string_attribute(const std::string& attribute_name,
                               const std::string& fallback) const;
  std::vector<std::int64_t> ints_attribute(const std::string& attribute_name) const;
  // Input `input_index` as a constant, or nullptr when it is computed (or
  // absent).
  const onnx::TensorProto* constant(int input_index) const;
  // The same, required: throws naming the node and `what` it holds.
  const onnx::TensorProto& required_constant(int input_index, const char* what) const;
  bool has_input(int input_index) const {
    return input_index < node.input_size() && !node.input(input_index).empty();
  }
  // The rank of input `input_index`, or -1 when unknown.
  int input_rank(int input_index) const;

  // A layer named `layer_name` (default: the node's), appended to the net.
  LayerParameter& add_layer(const std::string& type, const std::vector<std::string>& bottoms,
                            const std::vector<std::string>& tops,
                            const std::string& layer_name = "");
  // Appends a blob to the weights of `layer`.
  void add_blob(const LayerParameter& layer, const std::vector<std::int64_t>& dims,
                const std::vector<float>& values);
};

using NodeImporter = void (*)(NodeImport& node);

// Warnings and errors only on this thread while it lives, for the Nets the
// import builds: the layers' own set-up lines (a convolution's engine, say)
// would repeat for each (onnx_import_shapes.cpp).
class QuietLayerSetUp {
 public:
  QuietLayerSetUp();
  ~QuietLayerSetUp();
  QuietLayerSetUp(const QuietLayerSetUp&) = delete;
  QuietLayerSetUp& operator=(const QuietLayerSetUp&) = delete;

 private:
  LogSeverity before_;
};

// The shape of `blob`, which the layers imported so far compute
// (onnx_import_shapes.cpp); throws naming it when none does.
std::vector<int> imported_blob_shape(ImportState& state, const std::string& blob);

// A node whose outputs are known at import (an alias of a constant, shape
// arithmetic, any operator of constants it computes): records them as
// constants and returns true; false for a node that needs layers
// (onnx_constant_folding.cpp).
bool fold_constant_node(NodeImport& node);

// The importer of an ONNX operator, or nullptr when xtrain has no layer for it.
NodeImporter find_node_importer(const std::string& op_type);
// The arithmetic and shape operators (onnx_import_elementwise.cpp).
NodeImporter find_elementwise_importer(const std::string& op_type);
// Clip, HardSigmoid, HardSwish (onnx_import_activations.cpp).
NodeImporter find_activation_importer(const std::string& op_type);
// Resize and Upsample, nearest (onnx_import_resize.cpp).
NodeImporter find_resize_importer(const std::string& op_type);

// MVN's pattern as our exports write it (onnx_export_shapes.cpp), from its
// first ReduceMean: imports it and returns true, or returns false when the
// nodes after it are not that pattern (onnx_import_patterns.cpp).
bool import_mvn_pattern(NodeImport& node);
// GELU's five nodes as torch.onnx.export writes them, from the Div: imports
// them as one GELU layer and returns true, or returns false when the nodes
// are not that pattern (onnx_import_patterns.cpp).
bool import_gelu_pattern(NodeImport& node);
// LayerNormalization as Caffe layers (onnx_import_layer_norm.cpp).
void import_layer_normalization(NodeImport& node);
// Slice (our exports' Crop): Caffe Slice layers, one per axis it cuts.
void import_slice(NodeImport& node);

// The ArgMax (out_max_val) layer that writes the TopK values `value`, once
// something reads them.
void import_top_k_values(ImportState& state, const std::string& value);

}  // namespace xtrain::interchange
