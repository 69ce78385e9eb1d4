#include "data/jitter_placement.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <opencv2/imgproc.hpp>

#include "data/box_sampling.hpp"

namespace xtrain {
namespace {

// An integer drawn uniformly from the whole numbers between 0 and `end`
// (either sign), both included.
int offset_draw(RandomStream& random, int end) {
  const int low = std::min(0, end);
  const int span = std::abs(end);
  return low + static_cast<int>(random.below(static_cast<std::uint32_t>(span) + 1));
}

int whole_pixels(double size) { return std::max(1, static_cast<int>(std::lround(size))); }

}  // namespace

JitterPlacement draw_jitter_placement(const JitterParameter& param, int image_width,
                                      int image_height, RandomStream& random) {
  const float w = static_cast<float>(image_width);
  const float h = static_cast<float>(image_height);
  const float dw = param.jitter() * w;
  const float dh = param.jitter() * h;
  const float new_width = w + uniform_draw(random, -dw, dw);
  const float new_height = h + uniform_draw(random, -dh, dh);
  const double aspect = static_cast<double>(new_width) / new_height;
  const double scale = uniform_draw(random, param.min_scale(), param.max_scale());
  JitterPlacement placement;
  if (aspect < 1) {
    placement.height = whole_pixels(scale * param.height());
    placement.width = whole_pixels(scale * param.height() * aspect);
  } else {
    placement.width = whole_pixels(scale * param.width());
    placement.height = whole_pixels(scale * param.width() / aspect);
  }
  placement.x = offset_draw(random, static_cast<int>(param.width()) - placement.width);
  placement.y = offset_draw(random, static_cast<int>(param.height()) - placement.height);
  return placement;
}

void place_annotated(const JitterPlacement& placement, int width, int height,
                     const cv::Scalar& fill, const EmitConstraint* emit, AnnotatedImage* image) {
  cv::Mat resized;
  cv::resize(image->pixels, resized, cv::Size(placement.width, placement.height), 0, 0,
             cv::INTER_LINEAR);
  cv::Mat canvas(height, width, image->pixels.type(), fill);
  // The part of the placed image that falls on the canvas.
  const cv::Rect on_canvas = cv::Rect(placement.x, placement.y, placement.width, placement.height) &
                             cv::Rect(0, 0, width, height);
  if (on_canvas.area() > 0) {
    const cv::Rect in_image = on_canvas - cv::Point(placement.x, placement.y);
    resized(in_image).copyTo(canvas(on_canvas));
  }
  image->pixels = canvas;
  const float pw = static_cast<float>(placement.width);
  const float ph = static_cast<float>(placement.height);
  const NormalizedBox frame{-placement.x / pw, -placement.y / ph, (width - placement.x) / pw,
                            (height - placement.y) / ph};
  image->objects = project_annotations(image->objects, frame, emit);
}

void jitter_annotated(const JitterParameter& param, const cv::Scalar& fill,
                      const EmitConstraint* emit, RandomStream& random, AnnotatedImage* image) {
  const int width = static_cast<int>(param.width());
  const int height = static_cast<int>(param.height());
  const float draw = uniform_draw(random, 0.0f, 1.0f);
  if (param.prob() < 1 && !(draw < param.prob())) {
    cv::resize(image->pixels, image->pixels, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
    return;
  }
  const JitterPlacement placement =
      draw_jitter_placement(param, image->pixels.cols, image->pixels.rows, random);
  place_annotated(placement, width, height, fill, emit, image);
}

}  // namespace xtrain
