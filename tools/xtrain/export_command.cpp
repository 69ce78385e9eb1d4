// xtrain export: a trained deploy net as an ONNX model.
//
//   xtrain export --model=deploy.prototxt --weights=net.caffemodel --output=net.onnx
//                 [--opset=13] [--dynamic_batch]
#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/onnx.hpp"

namespace xtrain::cli {

int export_command() {
  XTRAIN_CHECK(!FLAGS_model.empty(), "xtrain export needs --model=deploy.prototxt");
  XTRAIN_CHECK(!FLAGS_weights.empty(),
               "xtrain export needs --weights=net.caffemodel (the trained weights to export)");
  XTRAIN_CHECK(!FLAGS_output.empty(), "xtrain export needs --output=net.onnx");
  OnnxExportOptions options;
  options.opset = FLAGS_opset;
  options.dynamic_batch = FLAGS_dynamic_batch;
  const OnnxExportSummary summary = export_onnx(FLAGS_model, FLAGS_weights, FLAGS_output, options);
  std::string inputs, outputs;
  for (const std::string& name : summary.inputs) inputs += (inputs.empty() ? "" : ", ") + name;
  for (const std::string& name : summary.outputs) outputs += (outputs.empty() ? "" : ", ") + name;
  std::printf(
      "Wrote '%s': opset %d, %d nodes, %d initializers, %lld bytes; inputs %s; outputs %s\n",
      FLAGS_output.c_str(), options.opset, summary.nodes, summary.initializers,
      static_cast<long long>(summary.file_bytes), inputs.c_str(), outputs.c_str());
  return 0;
}

}  // namespace xtrain::cli
