// xtrain import: an ONNX model as a net prototxt and its weights, to
// fine-tune with `xtrain train --weights` or run with `xtrain test`.
//
//   xtrain import --onnx=model.onnx --output_model=net.prototxt
//                 --output_weights=net.caffemodel
#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/onnx.hpp"

namespace xtrain::cli {

int import_command() {
  XTRAIN_CHECK(!FLAGS_onnx.empty(), "xtrain import needs --onnx=model.onnx");
  XTRAIN_CHECK(!FLAGS_output_model.empty() && !FLAGS_output_weights.empty(),
               "xtrain import needs --output_model=net.prototxt and "
               "--output_weights=net.caffemodel (where to write the net and its weights)");
  import_onnx(FLAGS_onnx, FLAGS_output_model, FLAGS_output_weights);
  std::printf("Wrote '%s' and '%s' from '%s'\n", FLAGS_output_model.c_str(),
              FLAGS_output_weights.c_str(), FLAGS_onnx.c_str());
  return 0;
}

}  // namespace xtrain::cli
