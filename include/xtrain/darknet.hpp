// Darknet in and out: a Darknet `.cfg` (YOLOv3, YOLOv3-tiny, Darknet-53 and
// nets built from the same sections) as xtrain nets, its `.weights` as a
// .caffemodel, and trained weights back as a `.weights` file that Darknet
// loads. docs/detection.md ("Darknet models") lists the sections and keys
// converted and where the arithmetic differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

struct XTRAIN_API DarknetImportOptions {
  // The train/test net's AnnotatedData layers (LMDBs of convert_annoset).
  std::string train_source;
  std::string test_source;
  std::string label_map_file;  // optional: annotated_data_param.label_map_file
  // Images per training batch; 0: the cfg's batch / subdivisions.
  int train_batch_size = 0;
  int test_batch_size = 1;
  // The deploy net's YoloDetectionOutput keeps boxes scoring at least this
  // (Darknet's `detect` draws those above 0.5); the test net's keeps those
  // above 0.005 for the mean average precision (Darknet's `valid`).
  float deploy_confidence_threshold = 0.5f;
  // Accept a .weights file that ends between two convolutional layers before
  // the last one (a backbone such as darknet53.conv.74): the layers it covers
  // get its values, the rest keep their fillers'.
  bool allow_partial_weights = false;
};

struct XTRAIN_API DarknetImport {
  // Input layer ([net]'s channels, height, width; batch 1), the layers, and
  // one YoloDetectionOutput over every [yolo] head and the input.
  NetParameter deploy;
  // AnnotatedData in TRAIN and TEST, the layers, a YoloLoss per head
  // (TRAIN), YoloDetectionOutput and DetectionEvaluate (TEST). No layers
  // when the cfg has no [yolo] head (a classifier such as darknet53.cfg).
  NetParameter train_test;
  // The .weights as blobs of the layers that learn (a .caffemodel's
  // message); no layers when no .weights was read.
  NetParameter weights;
  // What the conversion left out or changed, one sentence each (settings of
  // Darknet's training that have no place in a net, a partial .weights).
  std::vector<std::string> notes;
};

// Converts the cfg at `cfg_path`, and the .weights at `weights_path` unless
// it is empty. Throws xtrain::Error naming the file, line and section of a
// key or section that is not converted (docs/detection.md lists those that
// are), and, for a .weights that does not fit the cfg, the floats the cfg's
// layers need against those the file holds and the layer where they part.
XTRAIN_API DarknetImport import_darknet(const std::string& cfg_path,
                                        const std::string& weights_path,
                                        const DarknetImportOptions& options = {});

// Writes `weights` (a .caffemodel or .caffemodel.h5 of a net converted from
// `cfg_path`, trained or not: layers are matched by name) as a Darknet
// .weights file at `darknet_weights_path` (atomically), with `images_seen`
// in its header (Darknet's `seen`, which its learning-rate schedule reads).
// BatchNorm statistics are divided by their moving-average factor, as the
// layer does. Throws xtrain::Error naming the layer and blob that is missing
// or has another shape than the cfg says.
XTRAIN_API void export_darknet_weights(const std::string& cfg_path, const std::string& weights_path,
                                       const std::string& darknet_weights_path,
                                       std::uint64_t images_seen = 0);

}  // namespace xtrain
