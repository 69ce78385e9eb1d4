#include "data/photometric_distortion.hpp"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "data/box_sampling.hpp"

namespace xtrain {
namespace {

bool happens(float probability, RandomStream& random) {
  return uniform_draw(random, 0.0f, 1.0f) < probability;
}

void adjust_brightness(const DistortionParameter& p, RandomStream& random, cv::Mat* image) {
  if (!happens(p.brightness_prob(), random)) return;
  const float delta = uniform_draw(random, -p.brightness_delta(), p.brightness_delta());
  image->convertTo(*image, -1, 1.0, delta);
}

void adjust_contrast(const DistortionParameter& p, RandomStream& random, cv::Mat* image) {
  if (!happens(p.contrast_prob(), random)) return;
  const float alpha = uniform_draw(random, p.contrast_lower(), p.contrast_upper());
  image->convertTo(*image, -1, alpha, 0.0);
}

// Applies `change` to one HSV channel (0: hue, 1: saturation) of a colour image.
template <typename Change>
void change_hsv_channel(cv::Mat* image, int channel, Change change) {
  cv::Mat hsv;
  cv::cvtColor(*image, hsv, cv::COLOR_BGR2HSV);
  std::vector<cv::Mat> planes;
  cv::split(hsv, planes);
  change(planes[static_cast<std::size_t>(channel)]);
  cv::merge(planes, hsv);
  cv::cvtColor(hsv, *image, cv::COLOR_HSV2BGR);
}

void adjust_saturation(const DistortionParameter& p, RandomStream& random, cv::Mat* image) {
  if (!happens(p.saturation_prob(), random)) return;
  const float alpha = uniform_draw(random, p.saturation_lower(), p.saturation_upper());
  if (image->channels() != 3 || std::fabs(alpha - 1.0f) < 1e-3f) return;
  change_hsv_channel(image, 1, [&](cv::Mat& s) { s.convertTo(s, -1, alpha, 0.0); });
}

void adjust_hue(const DistortionParameter& p, RandomStream& random, cv::Mat* image) {
  if (!happens(p.hue_prob(), random)) return;
  const float delta = uniform_draw(random, -p.hue_delta(), p.hue_delta());
  if (image->channels() != 3 || delta == 0.0f) return;
  change_hsv_channel(image, 0, [&](cv::Mat& h) {
    // 8-bit hue is in [0, 180); shift it around the circle.
    for (int r = 0; r < h.rows; ++r) {
      std::uint8_t* row = h.ptr<std::uint8_t>(r);
      for (int c = 0; c < h.cols; ++c) {
        float shifted = std::fmod(static_cast<float>(row[c]) + delta, 180.0f);
        if (shifted < 0) shifted += 180.0f;
        row[c] = static_cast<std::uint8_t>(std::min(179.0f, std::round(shifted)));
      }
    }
  });
}

void reorder_channels(const DistortionParameter& p, RandomStream& random, cv::Mat* image) {
  if (!happens(p.random_order_prob(), random)) return;
  std::vector<cv::Mat> planes;
  cv::split(*image, planes);
  // Fisher-Yates with the stream's draws, so the order is the seed's.
  for (std::size_t i = planes.size(); i > 1; --i) {
    std::swap(planes[i - 1], planes[random.below(static_cast<std::uint32_t>(i))]);
  }
  cv::merge(planes, *image);
}

}  // namespace

void distort_photometrically(const DistortionParameter& param, RandomStream& random,
                             cv::Mat* image) {
  const bool contrast_first = uniform_draw(random, 0.0f, 1.0f) > 0.5f;
  adjust_brightness(param, random, image);
  if (contrast_first) adjust_contrast(param, random, image);
  adjust_saturation(param, random, image);
  adjust_hue(param, random, image);
  if (!contrast_first) adjust_contrast(param, random, image);
  reorder_channels(param, random, image);
}

}  // namespace xtrain
