// xtrain import: an ONNX model, or a Darknet cfg and its weights, as a net
// prototxt and its weights, to fine-tune with `xtrain train --weights` or run
// with `xtrain test`.
//
//   xtrain import --onnx=model.onnx --output_model=net.prototxt
//                 --output_weights=net.caffemodel
//   xtrain import --darknet_cfg=yolov3-tiny.cfg [--darknet_weights=yolov3-tiny.weights
//                 --output_weights=net.caffemodel] --output_model=deploy.prototxt
//                 [--output_train_net=train_test.prototxt --train_source=... ...]
#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/atomic_file.hpp"
#include "xtrain/darknet.hpp"
#include "xtrain/error.hpp"
#include "xtrain/onnx.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::cli {
namespace {

int import_darknet_command() {
  XTRAIN_CHECK(FLAGS_onnx.empty(), "give --onnx or --darknet_cfg, not both");
  XTRAIN_CHECK(!FLAGS_output_model.empty(),
               "xtrain import needs --output_model=deploy.prototxt (where to write the net)");
  XTRAIN_CHECK(FLAGS_darknet_weights.empty() == FLAGS_output_weights.empty(),
               FLAGS_darknet_weights.empty()
                   ? "--output_weights needs --darknet_weights (the .weights to convert)"
                   : "--darknet_weights needs --output_weights=net.caffemodel (where to write "
                     "them)");
  // Every output before the first is written: a wrong last path must not
  // leave the first files behind looking imported.
  for (const std::string* output :
       {&FLAGS_output_model, &FLAGS_output_train_net, &FLAGS_output_weights}) {
    if (!output->empty()) check_file_can_be_written(*output);
  }
  DarknetImportOptions options;
  options.train_source = FLAGS_train_source;
  options.test_source = FLAGS_test_source;
  options.label_map_file = FLAGS_label_map_file;
  options.train_batch_size = FLAGS_train_batch_size;
  options.test_batch_size = FLAGS_test_batch_size;
  options.allow_partial_weights = FLAGS_darknet_partial;
  const DarknetImport imported = import_darknet(FLAGS_darknet_cfg, FLAGS_darknet_weights, options);
  XTRAIN_CHECK(FLAGS_output_train_net.empty() || imported.train_test.layer_size() > 0, "'",
               FLAGS_darknet_cfg,
               "' has no [yolo] layer: --output_train_net writes the train net of a YOLO detector");
  for (const std::string& note : imported.notes) std::printf("Note: %s\n", note.c_str());
  write_proto_to_text_file(imported.deploy, FLAGS_output_model);
  std::printf("Wrote '%s' (%d layers) from '%s'\n", FLAGS_output_model.c_str(),
              imported.deploy.layer_size(), FLAGS_darknet_cfg.c_str());
  if (!FLAGS_output_train_net.empty()) {
    write_proto_to_text_file(imported.train_test, FLAGS_output_train_net);
    std::printf("Wrote '%s' (%d layers)\n", FLAGS_output_train_net.c_str(),
                imported.train_test.layer_size());
  }
  if (!FLAGS_output_weights.empty()) {
    write_proto_to_binary_file(imported.weights, FLAGS_output_weights);
    std::printf("Wrote '%s' (%d layers with weights) from '%s'\n", FLAGS_output_weights.c_str(),
                imported.weights.layer_size(), FLAGS_darknet_weights.c_str());
  }
  return 0;
}

}  // namespace

int import_command() {
  if (!FLAGS_darknet_cfg.empty()) return import_darknet_command();
  XTRAIN_CHECK(!FLAGS_onnx.empty(),
               "xtrain import needs --onnx=model.onnx or --darknet_cfg=net.cfg");
  XTRAIN_CHECK(!FLAGS_output_model.empty() && !FLAGS_output_weights.empty(),
               "xtrain import needs --output_model=net.prototxt and "
               "--output_weights=net.caffemodel (where to write the net and its weights)");
  import_onnx(FLAGS_onnx, FLAGS_output_model, FLAGS_output_weights);
  std::printf("Wrote '%s' and '%s' from '%s'\n", FLAGS_output_model.c_str(),
              FLAGS_output_weights.c_str(), FLAGS_onnx.c_str());
  return 0;
}

}  // namespace xtrain::cli
