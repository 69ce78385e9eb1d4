#include "xtrain/detector.hpp"

#include <algorithm>
#include <string>

#include "data/letterbox.hpp"
#include "inference/classifier_input.hpp"
#include "inference/image_deploy_net.hpp"
#include "layers/detection_blobs.hpp"
#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

// label -> display_name (or name) of an SSD label map.
std::map<int, std::string> read_label_names(const std::string& path) {
  check_input_file(path, "the label map");
  LabelMap map;
  read_proto_from_text_file(path, &map);
  XTRAIN_CHECK(map.item_size() > 0, "the label map '", path,
               "' has no item; write item { name: \"cat\" label: 1 } per class");
  std::map<int, std::string> names;
  for (const LabelMapItem& item : map.item()) {
    XTRAIN_CHECK(item.has_label(), "the label map '", path, "': item \"", item.name(),
                 "\" has no label; give every item its label number");
    names[item.label()] = item.display_name().empty() ? item.name() : item.display_name();
  }
  return names;
}

}  // namespace

Detector::Detector(const std::string& deploy_prototxt, const std::string& weights,
                   const DetectorOptions& options)
    : options_(options) {
  net_ = open_image_deploy_net(deploy_prototxt, options.device, "a detector");
  const Blob& input = *net_->input_blobs().front();
  for (int i = static_cast<int>(net_->layers().size()) - 1; i >= 0; --i) {
    const std::string type = net_->layers()[i]->type();
    if (type == "DetectionOutput" || type == "YoloDetectionOutput") {
      detection_layer_ = net_->layer_names()[i];
      detection_top_ = i;
      break;
    }
  }
  XTRAIN_CHECK(!detection_layer_.empty(), "net '", deploy_prototxt,
               "' has no DetectionOutput or YoloDetectionOutput layer; give the deploy net of a "
               "detector, whose last such layer's top holds the detections");
  input_ =
      std::make_unique<ClassifierInput>(input.channels(), input.height(), input.width(), options);

  load_deploy_weights(*net_, weights, options.allow_missing_weights);
  if (!options.label_map_file.empty()) label_names_ = read_label_names(options.label_map_file);
}

Detector::~Detector() = default;

std::string Detector::name_of(int label) const {
  const auto found = label_names_.find(label);
  return found != label_names_.end() ? found->second : std::to_string(label);
}

ImageDetections Detector::detect(const std::string& image_path) {
  Blob& input = *net_->input_blobs().front();
  if (input.num() != 1) {
    input.reshape({1, input.channels(), input.height(), input.width()});
    net_->reshape();
  }
  const Image image = input_->read(image_path);
  if (options_.letterbox) {
    input_->fill_letterboxed(image, options_.pad_value, input.mutable_cpu_data());
  } else {
    input_->fill(image, input.mutable_cpu_data());
  }
  net_->forward();

  const Blob& rows = *net_->top_vecs()[detection_top_].front();
  const auto by_item =
      detection::read_detections(rows, "layer '" + detection_layer_ + "'", "its top");
  ImageDetections result;
  result.width = image.width;
  result.height = image.height;
  const auto found = by_item.find(0);
  if (found == by_item.end()) return result;

  // Net-input fractions -> image pixels: x_image = x * scale_x - offset_x.
  float scale_x = static_cast<float>(image.width);
  float scale_y = static_cast<float>(image.height);
  float offset_x = 0;
  float offset_y = 0;
  if (options_.letterbox) {
    const LetterboxPlacement placed =
        letterbox_placement(image.width, image.height, input.width(), input.height());
    const float per_x = static_cast<float>(image.width) / placed.width;
    const float per_y = static_cast<float>(image.height) / placed.height;
    scale_x = input.width() * per_x;
    scale_y = input.height() * per_y;
    offset_x = placed.left * per_x;
    offset_y = placed.top * per_y;
  }
  const auto to_image = [](float value, float scale, float offset, int size) {
    return std::clamp(value * scale - offset, 0.0f, static_cast<float>(size));
  };
  for (const detection::Detection& d : found->second) {
    if (d.score < options_.confidence_threshold) continue;
    DetectedObject object;
    object.label = d.label;
    object.name = name_of(d.label);
    object.score = d.score;
    object.xmin = to_image(d.box.xmin, scale_x, offset_x, image.width);
    object.ymin = to_image(d.box.ymin, scale_y, offset_y, image.height);
    object.xmax = to_image(d.box.xmax, scale_x, offset_x, image.width);
    object.ymax = to_image(d.box.ymax, scale_y, offset_y, image.height);
    result.objects.push_back(object);
  }
  return result;
}

}  // namespace xtrain
