#include "data/random_resize.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "data/image_header.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// A [lower, upper] pair of transform_param: finite, lower <= upper, and
// (for the stretches) above 0. `name` is the fields' common part.
void check_range(const std::string& owner, const std::string& name, float lower, float upper,
                 bool positive) {
  XTRAIN_CHECK(std::isfinite(lower) && std::isfinite(upper), owner, ": transform_param's ", name,
               "_lower ", lower, " and ", name, "_upper ", upper, " must be finite numbers");
  XTRAIN_CHECK(!positive || (lower > 0 && upper > 0), owner, ": transform_param's ", name,
               "_lower ", lower, " and ", name, "_upper ", upper,
               " must be above 0 (each side is multiplied by a factor drawn between them; 1 and "
               "1, the default, leave it as it is)");
  XTRAIN_CHECK(lower <= upper, owner, ": transform_param's ", name, "_lower ", lower,
               " is above its ", name, "_upper ", upper, "; give lower <= upper");
}

}  // namespace

bool asks_for_random_resize(const TransformationParameter& param) {
  return param.img_rand_resize_lower() != 0 || param.img_rand_resize_upper() != 0 ||
         param.has_rand_resize_ratio_lower() || param.has_rand_resize_ratio_upper() ||
         param.has_vertical_stretch_lower() || param.has_vertical_stretch_upper() ||
         param.has_horizontal_stretch_lower() || param.has_horizontal_stretch_upper();
}

RandomResize::RandomResize(const TransformationParameter& param, const std::string& owner)
    : crop_(static_cast<int>(param.crop_size())),
      size_lower_(
          static_cast<int>(std::min<std::uint32_t>(param.img_rand_resize_lower(), INT_MAX))),
      size_upper_(
          static_cast<int>(std::min<std::uint32_t>(param.img_rand_resize_upper(), INT_MAX))),
      ratio_lower_(param.rand_resize_ratio_lower()),
      ratio_upper_(param.rand_resize_ratio_upper()),
      vertical_lower_(param.vertical_stretch_lower()),
      vertical_upper_(param.vertical_stretch_upper()),
      horizontal_lower_(param.horizontal_stretch_lower()),
      horizontal_upper_(param.horizontal_stretch_upper()),
      // The proto's enum has OpenCV's numbers (INTER_NEAREST 0 ... INTER_AREA 3).
      interpolation_down_(static_cast<int>(param.interpolation_algo_down())),
      interpolation_up_(static_cast<int>(param.interpolation_algo_up())),
      allow_upscale_(param.allow_upscale()) {
  static_assert(static_cast<int>(TransformationParameter::INTER_NEAREST) == cv::INTER_NEAREST &&
                static_cast<int>(TransformationParameter::INTER_LINEAR) == cv::INTER_LINEAR &&
                static_cast<int>(TransformationParameter::INTER_CUBIC) == cv::INTER_CUBIC &&
                static_cast<int>(TransformationParameter::INTER_AREA) == cv::INTER_AREA);
  enabled_ = asks_for_random_resize(param);
  if (!enabled_) return;
  XTRAIN_CHECK(crop_ > 0, owner,
               ": transform_param resizes images at random (img_rand_resize_*, "
               "rand_resize_ratio_*, *_stretch_*), which gives every image its own size; give a "
               "crop_size (the size of the images the layer outputs), as NVIDIA Caffe requires");
  XTRAIN_CHECK((size_lower_ > 0) == (size_upper_ > 0), owner,
               ": transform_param has img_rand_resize_lower ", size_lower_,
               " and img_rand_resize_upper ", size_upper_,
               "; give both (> 0): the shorter side is resized to a size drawn between them");
  XTRAIN_CHECK(size_lower_ <= size_upper_, owner, ": transform_param's img_rand_resize_lower ",
               size_lower_, " is above its img_rand_resize_upper ", size_upper_,
               "; give lower <= upper");
  if (ratio_lower_ != 0 || ratio_upper_ != 0) {
    check_range(owner, "rand_resize_ratio", ratio_lower_, ratio_upper_, false);
    XTRAIN_CHECK(ratio_lower_ >= 1, owner, ": transform_param's rand_resize_ratio_lower ",
                 ratio_lower_,
                 " is below 1; the ratio is the longer side's length over the shorter's (NVIDIA "
                 "Caffe ignores ratios below 1; leave both out for none)");
  }
  check_range(owner, "vertical_stretch", vertical_lower_, vertical_upper_, true);
  check_range(owner, "horizontal_stretch", horizontal_lower_, horizontal_upper_, true);
}

float RandomResize::uniform(float lower, float upper, RandomStream& random) {
  if (lower == upper) return lower;
  const double draw = static_cast<double>(random.engine()());
  return static_cast<float>(lower + (static_cast<double>(upper) - lower) * draw /
                                        static_cast<double>(UINT_MAX));
}

PlaneSize RandomResize::draw(int height, int width, RandomStream& random) const {
  int shorter = std::min(height, width);
  if (size_lower_ > 0) {
    shorter =
        size_lower_ + static_cast<int>(random.engine()() %
                                       static_cast<std::uint32_t>(size_upper_ - size_lower_ + 1));
  }
  const float factor =
      static_cast<float>(shorter) / static_cast<float>(width >= height ? height : width);
  float new_height = factor * static_cast<float>(height);
  float new_width = factor * static_cast<float>(width);
  if (ratio_lower_ >= 1 && ratio_upper_ > 1) {
    const float ratio = uniform(ratio_lower_, ratio_upper_, random);
    if (new_width > new_height) {
      new_width = new_height * ratio;
    } else if (new_width < new_height) {
      new_height = new_width * ratio;
    } else if (random.engine()() % 2 != 0) {
      new_width = new_height * ratio;
    } else {
      new_height = new_width * ratio;
    }
  }
  new_height *= uniform(vertical_lower_, vertical_upper_, random);
  new_width *= uniform(horizontal_lower_, horizontal_upper_, random);
  // lround of a float past the int range is undefined: such sizes are
  // refused by resize() anyway, so clamp them first.
  const auto rounded = [this](float value) {
    const float bounded = std::min(value, static_cast<float>(INT_MAX / 2));
    return std::max(crop_, static_cast<int>(std::lround(bounded)));
  };
  PlaneSize size{rounded(new_height), rounded(new_width)};
  if (!allow_upscale_) {
    size.height = std::min(size.height, height);
    size.width = std::min(size.width, width);
  }
  return size;
}

template <typename Value>
void RandomResize::resize_planes(const Value* planes, int channels, PlaneSize from, PlaneSize to,
                                 ResizeBuffers& buffers, std::vector<Value>* resized) const {
  XTRAIN_CHECK(static_cast<std::uint64_t>(to.height) * static_cast<std::uint64_t>(to.width) <=
                   kMaxDecodedPixels,
               "transform_param's random resize made an image of ", to.height, "x", to.width,
               ": more pixels than an image xtrain decodes (2^30); lower img_rand_resize_upper "
               "or the stretches");
  XTRAIN_CHECK(channels >= 1 && channels <= CV_CN_MAX, "cannot resize an image of ", channels,
               " channels (OpenCV takes 1 to ", CV_CN_MAX, ")");
  constexpr int kDepth = sizeof(Value) == 1 ? CV_8U : CV_32F;
  const std::size_t from_plane = static_cast<std::size_t>(from.height) * from.width;
  const std::size_t to_plane = static_cast<std::size_t>(to.height) * to.width;
  resized->resize(to_plane * static_cast<std::size_t>(channels));
  const int interpolation =
      to.height <= from.height && to.width <= from.width ? interpolation_down_ : interpolation_up_;
  // OpenCV's headers are not const-aware; the source planes are only read.
  std::vector<cv::Mat> source(static_cast<std::size_t>(channels));
  std::vector<cv::Mat> target(static_cast<std::size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    source[c] = cv::Mat(from.height, from.width, CV_MAKETYPE(kDepth, 1),
                        const_cast<Value*>(planes + static_cast<std::size_t>(c) * from_plane));
    target[c] = cv::Mat(to.height, to.width, CV_MAKETYPE(kDepth, 1),
                        resized->data() + static_cast<std::size_t>(c) * to_plane);
  }
  const cv::Size size(to.width, to.height);
  if (channels == 1) {
    cv::resize(source[0], target[0], size, 0, 0, interpolation);
  } else {
    // Merging into and resizing into Mats of the same size and type reuses them.
    cv::merge(source, buffers.interleaved);
    cv::resize(buffers.interleaved, buffers.resized, size, 0, 0, interpolation);
    cv::split(buffers.resized, target);
  }
  for (int c = 0; c < channels; ++c) {
    XTRAIN_ASSERT(target[c].data == reinterpret_cast<uchar*>(
                                        resized->data() + static_cast<std::size_t>(c) * to_plane),
                  "OpenCV reallocated a resized plane");
  }
}

void RandomResize::resize(const std::uint8_t* planes, int channels, PlaneSize from, PlaneSize to,
                          ResizeBuffers& buffers, std::vector<std::uint8_t>* resized) const {
  resize_planes(planes, channels, from, to, buffers, resized);
}

void RandomResize::resize(const float* planes, int channels, PlaneSize from, PlaneSize to,
                          ResizeBuffers& buffers, std::vector<float>* resized) const {
  resize_planes(planes, channels, from, to, buffers, resized);
}

}  // namespace xtrain
