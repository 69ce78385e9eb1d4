// Detector: a trained object detector that finds boxes in image files, the
// library behind `xtrain detect` (docs/detection.md).
//
// The net is a deploy prototxt with one Input layer giving the image shape
// N x C x H x W (C = 1: grey, C = 3: colour in OpenCV's B, G, R order) and a
// DetectionOutput (SSD) or YoloDetectionOutput (YOLOv3) layer; the top of the
// last such layer holds the detections, rows (image, label, score, xmin,
// ymin, xmax, ymax) normalized to the net input. Each image is read,
// converted to C channels and brought to H x W, either stretched (SSD's
// WARP, the default) or letterboxed (`letterbox`: scaled to fit inside with
// its aspect ratio kept and centred on a canvas of `pad_value`, as SSD's
// FIT_LARGE_SIZE_AND_PAD and Darknet's letterbox do), then, as Classifier does,
//
//   input[c][h][w] = (pixel[c][h][w] - mean[c][h][w]) * scale
//
// One forward; each box is mapped back to the pixels of the image as read
// (the letterbox undone) and clipped to the image:
//
//   stretched:    x_image = x * image_width
//   letterboxed:  x_image = (x * W - left) * image_width / placed_width
//
// (y likewise), where the image was placed at `left` with `placed_width`
// (data/letterbox.hpp). Coordinates are continuous: the image spans 0 to
// its width and height.
//
// One Detector runs one net: use it from one thread at a time. Every user
// error (a missing or damaged file, a net without a detection layer, a label
// map that does not parse) throws xtrain::Error naming the file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/device.hpp"
#include "xtrain/export.hpp"
#include "xtrain/image_input_options.hpp"

namespace xtrain {

class Net;
class ClassifierInput;

// As ClassifierOptions: the mean image of the input's shape, or per-channel
// means (not both), the scale applied after the mean, the device and
// allow_missing_weights (xtrain/image_input_options.hpp), and:
struct XTRAIN_API DetectorOptions : ImageInputOptions {
  // Letterbox instead of stretching the images to the net's input.
  bool letterbox = false;
  // The letterbox's padding, a pixel value (Darknet pads with grey 0.5).
  float pad_value = 127.5f;
  // SSD's label map (a LabelMap prototxt, item { name label display_name });
  // a detection is named by its label's display_name, else its name. Empty,
  // or a label the map lacks: the label number as text.
  std::string label_map_file;
  // Detections scoring below this are left out (after the net's own
  // confidence_threshold).
  float confidence_threshold = 0;
};

struct XTRAIN_API DetectedObject {
  int label = 0;
  std::string name;  // from the label map, or the label as text
  float score = 0;
  // Pixels of the image as read, clipped to it.
  float xmin = 0;
  float ymin = 0;
  float xmax = 0;
  float ymax = 0;
};

struct XTRAIN_API ImageDetections {
  int width = 0;  // the image as read
  int height = 0;
  // In the order of the net's rows: labels ascending, within a label by
  // descending score.
  std::vector<DetectedObject> objects;
};

class XTRAIN_API Detector {
 public:
  // Builds the net of `deploy_prototxt` (TEST phase), finds its detection
  // layer and loads `weights` (.caffemodel). Throws xtrain::Error if a file
  // is missing or does not fit.
  Detector(const std::string& deploy_prototxt, const std::string& weights,
           const DetectorOptions& options = {});
  ~Detector();
  Detector(const Detector&) = delete;
  Detector& operator=(const Detector&) = delete;

  // The objects found in one image file.
  ImageDetections detect(const std::string& image_path);

  // The name of the layer whose top is read ("detection_out").
  const std::string& detection_layer() const { return detection_layer_; }
  const Net& net() const { return *net_; }

 private:
  std::string name_of(int label) const;

  std::unique_ptr<Net> net_;
  std::unique_ptr<ClassifierInput> input_;
  DetectorOptions options_;
  std::string detection_layer_;
  int detection_top_ = 0;  // index into the net's top_vecs()
  std::map<int, std::string> label_names_;
};

}  // namespace xtrain
