// RandomResize: NVIDIA Caffe 0.17's resizing of images of any size before
// the crop (transform_param's img_rand_resize_lower/upper,
// rand_resize_ratio_lower/upper, vertical/horizontal_stretch_lower/upper,
// interpolation_algo_down/up, allow_upscale). For an image of H x W and
// crop size K, in the order of the random draws:
//
//   1. the shorter side S = min(H, W) becomes D = lower + r() % (upper - lower + 1)
//      (D = S without img_rand_resize_*): both sides times f = D / S, in float;
//   2. with rand_resize_ratio (1 <= lower <= upper, upper > 1): a ratio R =
//      u(lower, upper) sets the longer side to the shorter times R (a square
//      image draws r() % 2 for which side: 1 the width, 0 the height);
//   3. the height times u(vertical_stretch_lower, vertical_stretch_upper),
//      then the width times u(horizontal_stretch_lower, horizontal_stretch_upper);
//   4. each side rounded (lround) and raised to K; without allow_upscale,
//      lowered to the image's own;
//   5. cv::resize to that size with interpolation_algo_down when neither side
//      grows, else interpolation_algo_up (a size already the image's: no resize).
//
// r() is one 32-bit draw; u(a, b) = a + (b - a) * r() / (2^32 - 1) in double,
// rounded to float, and no draw when a == b (so the default stretches of 1
// draw nothing). The resize is enabled, as in NVIDIA Caffe, when
// img_rand_resize_lower or _upper is non-zero or any ratio or stretch field
// is set, in both phases (the crop that follows is random in TRAIN and
// centred in TEST). The planes are interleaved and resized together, as
// NVIDIA Caffe resizes its OpenCV image: resizing each plane alone gives
// other pixels with INTER_CUBIC (OpenCV takes another path for one
// channel).
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "xtrain/datum_io.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

struct PlaneSize {
  int height = 0;
  int width = 0;
  bool operator==(const PlaneSize& other) const {
    return height == other.height && width == other.width;
  }
};

// Whether `param` asks for the random resize (NVIDIA Caffe's condition: a
// non-zero img_rand_resize_lower or _upper, or any ratio or stretch field set).
bool asks_for_random_resize(const TransformationParameter& param);

// OpenCV images a thread reuses from resize to resize.
struct ResizeBuffers {
  cv::Mat interleaved;
  cv::Mat resized;
};

class RandomResize {
 public:
  // Throws xtrain::Error naming `owner` and the field for settings that
  // cannot be applied (a lower bound above its upper bound, a stretch of 0
  // or less, a ratio below 1, only one of img_rand_resize_lower/upper, the
  // resize without a crop_size).
  RandomResize(const TransformationParameter& param, const std::string& owner);

  bool enabled() const { return enabled_; }
  // Whether images need not be at least the crop (they are raised to it).
  bool allows_upscale() const { return allow_upscale_; }

  // The size an image of `height` x `width` is resized to (steps 1-4).
  PlaneSize draw(int height, int width, RandomStream& random) const;

  // Resizes `channels` planes of from.height x from.width values (uint8 or
  // float) to `to` into `resized` (channels planes of to's size), with the
  // interpolation of step 5. Throws if the result would pass the pixels an
  // image may have (image_header.hpp).
  void resize(const std::uint8_t* planes, int channels, PlaneSize from, PlaneSize to,
              ResizeBuffers& buffers, std::vector<std::uint8_t>* resized) const;
  void resize(const float* planes, int channels, PlaneSize from, PlaneSize to,
              ResizeBuffers& buffers, std::vector<float>* resized) const;

 private:
  template <typename Value>
  void resize_planes(const Value* planes, int channels, PlaneSize from, PlaneSize to,
                     ResizeBuffers& buffers, std::vector<Value>* resized) const;
  // u(lower, upper) above.
  static float uniform(float lower, float upper, RandomStream& random);

  bool enabled_ = false;
  int crop_ = 0;
  int size_lower_ = 0;
  int size_upper_ = 0;
  float ratio_lower_ = 0;
  float ratio_upper_ = 0;
  float vertical_lower_ = 1;
  float vertical_upper_ = 1;
  float horizontal_lower_ = 1;
  float horizontal_upper_ = 1;
  int interpolation_down_ = 0;  // OpenCV's cv::InterpolationFlags
  int interpolation_up_ = 0;
  bool allow_upscale_ = false;
};

}  // namespace xtrain
