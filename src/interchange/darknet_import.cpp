// import_darknet, export_darknet_weights: the layers of a cfg
// (darknet_model.hpp) with an input and YOLO's output layers as a deploy
// net, with data, loss and evaluation layers as a train/test net (as
// examples/detection/ssd/train_test.prototxt is built), and its .weights
// (darknet_weights.hpp) both ways.
#include <algorithm>
#include <cmath>

#include "core/weights_file.hpp"
#include "interchange/darknet_model.hpp"
#include "interchange/darknet_weights.hpp"
#include "xtrain/atomic_file.hpp"
#include "xtrain/darknet.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using interchange::DarknetHead;
using interchange::DarknetModel;

// Darknet reads images as values in [0, 1].
constexpr float kPixelScale = 1.0f / 255.0f;
// Darknet's letterbox fill (0.5 of the range) and NMS threshold (`detect`, `valid`).
constexpr float kLetterboxFill = 127.5f;
constexpr float kNmsThreshold = 0.45f;
// The test net's YoloDetectionOutput keeps what Darknet's `valid` writes.
constexpr float kEvaluationConfidence = 0.005f;

std::string net_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// The settings every head shares: one YoloDetectionOutput reads them all.
YoloParameter shared_yolo_param(const DarknetModel& model) {
  const DarknetHead& first = model.heads.front();
  for (const DarknetHead& head : model.heads) {
    XTRAIN_CHECK(head.classes == first.classes && head.anchors == first.anchors, "'", model.source,
                 "' line ", head.line, ", [yolo] (layer ", head.layer,
                 "): its classes and anchors differ from those of the [yolo] at line ", first.line,
                 "; the heads of one net share them");
  }
  YoloParameter param;
  param.set_num_classes(first.classes);
  for (float anchor : first.anchors) param.add_anchors(anchor);
  return param;
}

void add_detection_output(NetParameter& net, const DarknetModel& model, float confidence) {
  LayerParameter& layer = *net.add_layer();
  layer.set_name("detection_out");
  layer.set_type("YoloDetectionOutput");
  YoloParameter& param = *layer.mutable_yolo_param();
  param = shared_yolo_param(model);
  for (const DarknetHead& head : model.heads) {
    layer.add_bottom(head.predictions);
    for (int anchor : head.mask) param.add_mask(anchor);
  }
  layer.add_bottom("data");
  layer.add_top("detection_out");
  param.set_confidence_threshold(confidence);
  param.mutable_nms_param()->set_nms_threshold(kNmsThreshold);
}

NetParameter deploy_net(const DarknetModel& model, const DarknetImportOptions& options) {
  NetParameter net;
  net.set_name(net_name(model.source));
  LayerParameter& input = *net.add_layer();
  input.set_name("data");
  input.set_type("Input");
  input.add_top("data");
  BlobShape& shape = *input.mutable_input_param()->add_shape();
  for (int dim : {1, model.channels, model.height, model.width}) shape.add_dim(dim);
  for (const LayerParameter& layer : model.layers.layer()) *net.add_layer() = layer;
  if (!model.heads.empty()) add_detection_output(net, model, options.deploy_confidence_threshold);
  return net;
}

// Darknet's training of a layer: weights uniform in +-sqrt(2 / fan-in) and
// decayed; biases and BN scales start at 0 and 1 and are not decayed.
void add_training_settings(LayerParameter& layer, const DarknetModel& model) {
  if (layer.type() == "Convolution") {
    const auto conv = std::find_if(
        model.convolutions.begin(), model.convolutions.end(),
        [&](const interchange::DarknetConvolution& c) { return c.convolution == layer.name(); });
    XTRAIN_ASSERT(conv != model.convolutions.end(), "no [convolutional] made ", layer.name());
    ConvolutionParameter& param = *layer.mutable_convolution_param();
    const float bound =
        std::sqrt(2.0f / (conv->size * conv->size * (conv->channels / conv->groups)));
    FillerParameter& filler = *param.mutable_weight_filler();
    filler.set_type("uniform");
    filler.set_min(-bound);
    filler.set_max(bound);
    ParamSpec& weights = *layer.add_param();
    weights.set_lr_mult(1);
    weights.set_decay_mult(1);
    if (param.bias_term()) {
      ParamSpec& bias = *layer.add_param();
      bias.set_lr_mult(1);
      bias.set_decay_mult(0);
    }
  } else if (layer.type() == "Scale") {
    for (int i = 0; i < 2; ++i) {
      ParamSpec& param = *layer.add_param();
      param.set_lr_mult(1);
      param.set_decay_mult(0);
    }
  }
}

void add_data_layer(NetParameter& net, const DarknetModel& model,
                    const DarknetImportOptions& options, Phase phase) {
  LayerParameter& layer = *net.add_layer();
  layer.set_name("data");
  layer.set_type("AnnotatedData");
  layer.add_top("data");
  layer.add_top("label");
  layer.add_include()->set_phase(phase);
  TransformationParameter& transform = *layer.mutable_transform_param();
  transform.set_scale(kPixelScale);
  DataParameter& data = *layer.mutable_data_param();
  data.set_backend(DataParameter::LMDB);
  if (phase == TRAIN) {
    // Darknet's detection training: a left-right flip of half the images and
    // the [yolo] layers' jitter (random aspect, scale and place).
    transform.set_mirror(true);
    JitterParameter& jitter = *transform.mutable_jitter_param();
    jitter.set_jitter(model.heads.front().jitter);
    jitter.set_height(model.height);
    jitter.set_width(model.width);
    data.set_source(options.train_source);
    const int batch = options.train_batch_size > 0 ? options.train_batch_size
                                                   : std::max(1, model.batch / model.subdivisions);
    data.set_batch_size(batch);
  } else {
    // Darknet's validation letterboxes: the aspect kept, grey around.
    ResizeParameter& resize = *transform.mutable_resize_param();
    resize.set_resize_mode(ResizeParameter::FIT_LARGE_SIZE_AND_PAD);
    resize.set_height(model.height);
    resize.set_width(model.width);
    resize.add_pad_value(kLetterboxFill);
    data.set_source(options.test_source);
    data.set_batch_size(options.test_batch_size);
  }
  if (!options.label_map_file.empty()) {
    layer.mutable_annotated_data_param()->set_label_map_file(options.label_map_file);
  }
}

NetParameter train_test_net(const DarknetModel& model, const DarknetImportOptions& options) {
  NetParameter net;
  if (model.heads.empty()) return net;
  net.set_name(net_name(model.source));
  add_data_layer(net, model, options, TRAIN);
  add_data_layer(net, model, options, TEST);
  for (const LayerParameter& source : model.layers.layer()) {
    LayerParameter& layer = *net.add_layer();
    layer = source;
    add_training_settings(layer, model);
  }
  const YoloParameter shared = shared_yolo_param(model);
  for (const DarknetHead& head : model.heads) {
    LayerParameter& loss = *net.add_layer();
    loss.set_name("yolo" + std::to_string(head.layer) + "_loss");
    loss.set_type("YoloLoss");
    loss.add_bottom(head.predictions);
    loss.add_bottom("label");
    loss.add_bottom("data");
    loss.add_top(loss.name());
    loss.add_include()->set_phase(TRAIN);
    YoloParameter& param = *loss.mutable_yolo_param();
    param = shared;
    for (int anchor : head.mask) param.add_mask(anchor);
    param.set_ignore_thresh(head.ignore_thresh);
    param.set_truth_thresh(head.truth_thresh);
  }
  add_detection_output(net, model, kEvaluationConfidence);
  net.mutable_layer(net.layer_size() - 1)->add_include()->set_phase(TEST);
  LayerParameter& evaluate = *net.add_layer();
  evaluate.set_name("detection_eval");
  evaluate.set_type("DetectionEvaluate");
  evaluate.add_bottom("detection_out");
  evaluate.add_bottom("label");
  evaluate.add_top("detection_eval");
  evaluate.add_include()->set_phase(TEST);
  DetectionEvaluateParameter& param = *evaluate.mutable_detection_evaluate_param();
  param.set_num_classes(shared.num_classes() + 1);  // with the label map's background 0
  param.set_background_label_id(0);
  param.set_overlap_threshold(0.5f);
  param.set_evaluate_difficult_gt(false);
  return net;
}

}  // namespace

DarknetImport import_darknet(const std::string& cfg_path, const std::string& weights_path,
                             const DarknetImportOptions& options) {
  const DarknetModel model = interchange::read_darknet_cfg(cfg_path);
  DarknetImport imported;
  imported.notes = model.notes;
  imported.deploy = deploy_net(model, options);
  imported.train_test = train_test_net(model, options);
  if (!weights_path.empty()) {
    imported.weights = interchange::read_darknet_weights(
        model, weights_path, options.allow_partial_weights, &imported.notes);
    imported.weights.set_name(imported.deploy.name());
  }
  return imported;
}

void export_darknet_weights(const std::string& cfg_path, const std::string& weights_path,
                            const std::string& darknet_weights_path, std::uint64_t images_seen) {
  const DarknetModel model = interchange::read_darknet_cfg(cfg_path);
  const NetParameter weights = read_weights_file(weights_path);
  write_file_atomically(darknet_weights_path, interchange::darknet_weights_bytes(
                                                  model, weights, weights_path, images_seen));
}

}  // namespace xtrain
