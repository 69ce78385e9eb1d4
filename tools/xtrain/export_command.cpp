// xtrain export: a trained deploy net as an ONNX model, or the weights of a
// net converted from a Darknet cfg as a Darknet .weights file.
//
//   xtrain export --model=deploy.prototxt --weights=net.caffemodel --output=net.onnx
//                 [--opset=13] [--dynamic_batch]
//   xtrain export --darknet_cfg=yolov3-tiny.cfg --weights=net.caffemodel
//                 --darknet_weights=net.weights
#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/darknet.hpp"
#include "xtrain/error.hpp"
#include "xtrain/onnx.hpp"

namespace xtrain::cli {

int export_command() {
  if (!FLAGS_darknet_weights.empty()) {
    XTRAIN_CHECK(!FLAGS_darknet_cfg.empty(),
                 "--darknet_weights needs --darknet_cfg (the cfg the net was converted from)");
    XTRAIN_CHECK(!FLAGS_weights.empty(),
                 "--darknet_weights needs --weights=net.caffemodel (the weights to write)");
    export_darknet_weights(FLAGS_darknet_cfg, FLAGS_weights, FLAGS_darknet_weights);
    std::printf("Wrote '%s' from '%s' (the layers of '%s')\n", FLAGS_darknet_weights.c_str(),
                FLAGS_weights.c_str(), FLAGS_darknet_cfg.c_str());
    return 0;
  }
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
