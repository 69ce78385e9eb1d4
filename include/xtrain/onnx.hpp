// ONNX out and in: a trained deploy net to an ONNX model that ONNX Runtime,
// TensorRT, OpenVINO and inference servers run, and an ONNX classification
// model (from PyTorch, or one of ours) back to a net and weights that
// `xtrain train --weights` fine-tunes. docs/onnx.md lists the layer <->
// operator mapping and what each one reproduces of Caffe's arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

struct XTRAIN_API OnnxExportOptions {
  // The operator set version the model declares (13 to 17: the operators
  // used mean the same across that range).
  int opset = 13;
  // Declare the inputs' and outputs' first axis as the symbolic "N", so the
  // runtime takes any batch size; otherwise the deploy net's batch is fixed.
  bool dynamic_batch = false;
};

// What an export wrote.
struct XTRAIN_API OnnxExportSummary {
  int nodes = 0;
  int initializers = 0;
  std::int64_t file_bytes = 0;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

// Writes the TEST phase of `deploy` with the weights of `weights` (layers
// matched by name, as `xtrain test --weights` does) to `onnx_path`
// (atomically). An empty `weights` exports the fillers' values. Throws
// xtrain::Error naming the layer and its type when a layer has no ONNX
// equivalent (data and loss layers, STOCHASTIC pooling, ...), and naming the
// layers that `weights` has no blobs for.
XTRAIN_API OnnxExportSummary export_onnx(const NetParameter& deploy,
                                         const std::string& weights_path,
                                         const std::string& onnx_path,
                                         const OnnxExportOptions& options = {});
// The same from a prototxt file (old formats are upgraded as on load).
XTRAIN_API OnnxExportSummary export_onnx(const std::string& deploy_path,
                                         const std::string& weights_path,
                                         const std::string& onnx_path,
                                         const OnnxExportOptions& options = {});

// A net (Input layers for the graph's inputs, one layer per operator or per
// operator pattern) and its weights from the ONNX model at `onnx_path`.
// Throws xtrain::Error naming the node and its operator when an operator is
// outside the set docs/onnx.md lists, or its attributes ask for arithmetic
// the layer does not do.
struct XTRAIN_API ImportedNet {
  NetParameter net;      // layers and their parameters, no blobs
  NetParameter weights;  // the same layers' names with their blobs (.caffemodel)
};
XTRAIN_API ImportedNet import_onnx(const std::string& onnx_path);
// Writes the imported net as a prototxt and its weights as a .caffemodel;
// both paths are checked before either is written.
XTRAIN_API void import_onnx(const std::string& onnx_path, const std::string& net_path,
                            const std::string& weights_path);

}  // namespace xtrain
