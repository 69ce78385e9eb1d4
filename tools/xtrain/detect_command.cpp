// xtrain detect: find objects in image files with a trained detector (a
// deploy net ending in SSD's DetectionOutput or YOLOv3's YoloDetectionOutput),
// printing one line per object, in pixels of the image:
//   shoe.png "Ankle boot" 0.9123 12.5 40.0 87.5 96.0
// as IMAGE LABEL SCORE XMIN YMIN XMAX YMAX (the label quoted only when it
// holds a space), and with --draw a copy of the image with the boxes drawn.
#include <algorithm>
#include <cstdio>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "flags.hpp"
#include "image_command.hpp"
#include "xtrain/detector.hpp"
#include "xtrain/error.hpp"

DEFINE_string(label_map, "",
              "detect: SSD's label map (labelmap.prototxt) that names the labels; empty: print "
              "label numbers");
DEFINE_double(confidence, 0.25, "detect: leave out objects scoring below this");
DEFINE_bool(letterbox, false,
            "detect: scale each image to fit the net's input keeping its aspect ratio and pad "
            "the rest (for nets trained so: resize_mode FIT_LARGE_SIZE_AND_PAD, YOLO), instead "
            "of stretching it to the input's size");
DEFINE_double(pad_value, 127.5, "detect: the pixel value of the letterbox's padding");
DEFINE_string(draw, "",
              "detect: write a copy of the image with its boxes drawn to this file (.png, "
              ".jpg); with several images OUT_1.png, OUT_2.png, ... in their order");

namespace xtrain::cli {
namespace {

// "out.png" for the only image; "out_1.png", "out_2.png", ... for several.
std::string drawing_path(const std::string& draw, std::size_t index, std::size_t images) {
  if (images == 1) return draw;
  const std::size_t slash = draw.find_last_of('/');
  const std::size_t dot = draw.find_last_of('.');
  const bool has_extension =
      dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::size_t stem_end = has_extension ? dot : draw.size();
  return draw.substr(0, stem_end) + "_" + std::to_string(index + 1) + draw.substr(stem_end);
}

// A colour per label, far apart for neighbouring labels (B, G, R).
cv::Scalar label_colour(int label) {
  static const cv::Scalar kColours[] = {{0, 0, 255},   {0, 200, 0},   {255, 0, 0},
                                        {0, 200, 255}, {255, 0, 255}, {255, 200, 0}};
  const int count = static_cast<int>(sizeof(kColours) / sizeof(kColours[0]));
  return kColours[((label % count) + count) % count];
}

void draw_objects(const std::string& image_path, const ImageDetections& found,
                  const std::string& out_path) {
  cv::Mat image = cv::imread(image_path, cv::IMREAD_COLOR);
  XTRAIN_CHECK(!image.empty(), "cannot read image '", image_path, "' again to draw on it");
  XTRAIN_ASSERT(image.cols == found.width && image.rows == found.height, "image '", image_path,
                "' read as ", image.cols, "x", image.rows, " and ", found.width, "x", found.height);
  const int thickness = std::max(1, std::min(image.cols, image.rows) / 200);
  std::vector<cv::Rect> bands;  // the labels drawn so far
  for (const DetectedObject& object : found.objects) {
    const cv::Scalar colour = label_colour(object.label);
    cv::rectangle(image, cv::Point(static_cast<int>(object.xmin), static_cast<int>(object.ymin)),
                  cv::Point(static_cast<int>(object.xmax), static_cast<int>(object.ymax)), colour,
                  thickness);
    char score[16];
    std::snprintf(score, sizeof(score), " %.2f", object.score);
    const std::string text = object.name + score;
    const double font_scale = 0.4 * thickness;
    int baseline = 0;
    const cv::Size size =
        cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, font_scale, thickness, &baseline);
    // The label on a filled band above the box (inside it at the image's
    // top), moved down past the labels of boxes drawn at the same place.
    cv::Rect band(static_cast<int>(object.xmin),
                  std::max(0, static_cast<int>(object.ymin) - size.height - baseline), size.width,
                  size.height + baseline);
    for (bool moved = true; moved;) {
      moved = false;
      for (const cv::Rect& other : bands) {
        if ((band & other).area() == 0) continue;
        band.y = other.y + other.height;  // only ever down: this ends
        moved = true;
      }
    }
    bands.push_back(band);
    cv::rectangle(image, band, colour, cv::FILLED);
    cv::putText(image, text, cv::Point(band.x, band.y + size.height), cv::FONT_HERSHEY_SIMPLEX,
                font_scale, cv::Scalar(255, 255, 255), thickness);
  }
  bool written = false;
  try {
    written = cv::imwrite(out_path, image);
  } catch (const cv::Exception& error) {
    XTRAIN_CHECK(false, "cannot write the drawing '", out_path, "': ", error.what(),
                 " (give a .png or .jpg path)");
  }
  XTRAIN_CHECK(written, "cannot write the drawing '", out_path,
               "'; give a .png or .jpg path in an existing, writable folder");
}

// The label as one word: quoted when it holds a space.
std::string printable(const std::string& name) {
  return name.find(' ') == std::string::npos ? name : "\"" + name + "\"";
}

}  // namespace

int detect_command(const std::vector<std::string>& images) {
  require_image_command_inputs("detect", images);
  configure_compute();
  DetectorOptions options;
  read_image_input_flags(&options);
  options.letterbox = FLAGS_letterbox;
  options.pad_value = static_cast<float>(FLAGS_pad_value);
  options.label_map_file = FLAGS_label_map;
  options.confidence_threshold = static_cast<float>(FLAGS_confidence);
  Detector detector(FLAGS_model, FLAGS_weights, options);

  for (std::size_t i = 0; i < images.size(); ++i) {
    const ImageDetections found = detector.detect(images[i]);
    for (const DetectedObject& object : found.objects) {
      std::printf("%s %s %.4f %.1f %.1f %.1f %.1f\n", images[i].c_str(),
                  printable(object.name).c_str(), object.score, object.xmin, object.ymin,
                  object.xmax, object.ymax);
    }
    std::fflush(stdout);
    if (!FLAGS_draw.empty()) {
      draw_objects(images[i], found, drawing_path(FLAGS_draw, i, images.size()));
    }
  }
  return 0;
}

}  // namespace xtrain::cli
