#include "data/data_transformer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <utility>

#include "data/image_header.hpp"
#include "data/imdecode_flags.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// One output row: target[w] (or target[width - 1 - w] when mirrored) =
// (source[w] - mean) * scale, with the mean a row of the mean file or one
// value. The four variants are compiled apart so that each loop has no
// branch and vectorises. Mirrored rows are computed forwards into a small
// buffer and then copied reversed: a reversed store of converted bytes does
// not vectorise and made mirroring four times slower.
template <bool kMeanFile, typename Value>
void transform_span(const Value* __restrict source, const float* __restrict mean_row,
                    float channel_mean, float scale, float* __restrict target, int width) {
  for (int w = 0; w < width; ++w) {
    const float mean = kMeanFile ? mean_row[w] : channel_mean;
    target[w] = (static_cast<float>(source[w]) - mean) * scale;
  }
}

template <bool kMirror, bool kMeanFile, typename Value>
void transform_row(const Value* source, const float* mean_row, float channel_mean, float scale,
                   float* target, int width) {
  if constexpr (!kMirror) {
    transform_span<kMeanFile>(source, mean_row, channel_mean, scale, target, width);
  } else {
    constexpr int kChunk = 64;
    float buffer[kChunk];
    for (int start = 0; start < width; start += kChunk) {
      const int count = std::min(kChunk, width - start);
      transform_span<kMeanFile>(source + start, kMeanFile ? mean_row + start : nullptr,
                                channel_mean, scale, buffer, count);
      float* last = target + (width - 1 - start);
      for (int w = 0; w < count; ++w) last[-w] = buffer[w];
    }
  }
}

template <typename Value>
using RowFunction = void (*)(const Value*, const float*, float, float, float*, int);

template <typename Value>
RowFunction<Value> pick_row(bool mirror, bool mean_file) {
  if (mirror) {
    return mean_file ? transform_row<true, true, Value> : transform_row<true, false, Value>;
  }
  return mean_file ? transform_row<false, true, Value> : transform_row<false, false, Value>;
}

}  // namespace

PixelSource PixelSource::planar(const std::uint8_t* pixels, const DatumShape& shape) {
  PixelSource source;
  source.bytes = pixels;
  source.shape = shape;
  return source;
}

PixelSource PixelSource::planar(const float* pixels, const DatumShape& shape) {
  PixelSource source;
  source.floats = pixels;
  source.shape = shape;
  return source;
}

PixelSource PixelSource::of(const Image& image) {
  return planar(image.pixels.data(), DatumShape{image.channels, image.height, image.width});
}

DataTransformer::DataTransformer(const TransformationParameter& param, Phase phase,
                                 std::string owner)
    : param_(param), phase_(phase), owner_(std::move(owner)), resize_(param_, owner_) {
  XTRAIN_CHECK(!(param_.force_color() && param_.force_gray()), owner_,
               ": transform_param sets both force_color and force_gray; set at most one "
               "(force_color decodes encoded images as 3 channels, force_gray as 1)");
  if (param_.force_color()) color_mode_ = ColorMode::kColor;
  if (param_.force_gray()) color_mode_ = ColorMode::kGray;
  crop_ = static_cast<int>(param_.crop_size());
  scale_ = param_.scale();
  // A scale of inf or nan (1e39 is inf as a float) makes every input nan.
  XTRAIN_CHECK(std::isfinite(scale_), owner_, ": transform_param's scale is ", scale_,
               ", not a finite number; give e.g. `scale: 0.00390625` (1/256) or leave it out (1)");
  for (float mean : param_.mean_value()) {
    XTRAIN_CHECK(std::isfinite(mean), owner_, ": transform_param has mean_value: ", mean,
                 ", not a finite number; give the channel's mean pixel value");
  }
  uses_random_ = param_.mirror() || (crop_ > 0 && phase_ == TRAIN) || resize_.enabled();
  mean_values_.assign(param_.mean_value().begin(), param_.mean_value().end());

  has_mean_file_ = param_.has_mean_file();
  XTRAIN_CHECK(!(has_mean_file_ && !mean_values_.empty()), owner_,
               ": transform_param has both mean_file and mean_value; give one of them");
  if (has_mean_file_) {
    try {
      mean_image_ = read_mean_file(param_.mean_file());
    } catch (const Error& error) {
      throw Error(owner_ + ": " + error.what());
    }
  }
}

void DataTransformer::check_input_shape(const DatumShape& input) const {
  XTRAIN_CHECK(resize_.allows_upscale() || (crop_ <= input.height && crop_ <= input.width), owner_,
               ": crop_size ", crop_, " is larger than the images (", input.to_string(),
               "); use a crop_size of at most ", std::min(input.height, input.width),
               resize_.enabled() ? " (or allow_upscale: true, to enlarge them to the crop)" : "");
  const std::size_t means = mean_values_.size();
  XTRAIN_CHECK(means == 0 || means == 1 || means == static_cast<std::size_t>(input.channels),
               owner_, ": ", means, " mean_value entries for images with ", input.channels,
               " channels; give one mean_value for all channels or one per channel");
  if (has_mean_file_) {
    try {
      if (resize_.enabled()) {
        mean_image_.check_covers(input.channels, crop_);
      } else {
        mean_image_.check_matches(input);
      }
    } catch (const Error& error) {
      throw Error(owner_ + ": " + error.what());
    }
  }
}

DatumShape DataTransformer::output_shape(const DatumShape& input) const {
  if (crop_ == 0) return input;
  return DatumShape{input.channels, crop_, crop_};
}

bool DataTransformer::batchable_with(const DatumShape& first, const DatumShape& shape) const {
  if (resize_.enabled()) {
    return shape.channels == first.channels && shape.height > 0 && shape.width > 0 &&
           (resize_.allows_upscale() || (shape.height >= crop_ && shape.width >= crop_));
  }
  if (shape == first) return true;
  if (crop_ == 0 || has_mean_file_) return false;
  return shape.channels == first.channels && shape.height >= crop_ && shape.width >= crop_;
}

PixelSource DataTransformer::pixels_of(const Datum& datum, Scratch& scratch) const {
  if (!datum.encoded()) {
    const DatumShape shape = datum_shape(datum);
    if (!datum.data().empty()) {
      return PixelSource::planar(reinterpret_cast<const std::uint8_t*>(datum.data().data()), shape);
    }
    return PixelSource::planar(datum.float_data().data(), shape);
  }
  const std::string& bytes = datum.data();
  XTRAIN_CHECK(
      !bytes.empty() && bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
      "the encoded image holds ", bytes.size(), " bytes");
  check_image_header(bytes, "the encoded image (" + std::to_string(bytes.size()) + " bytes)");
  const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8UC1,
                        const_cast<char*>(bytes.data()));
  try {
    // Decoding into the same Mat reuses its buffer when the size repeats.
    cv::imdecode(encoded, imdecode_flags(color_mode_), &scratch.decoded);
  } catch (const cv::Exception& error) {
    XTRAIN_CHECK(false, "the encoded image (", bytes.size(),
                 " bytes) could not be decoded: ", error.what());
  }
  XTRAIN_CHECK(!scratch.decoded.empty(), "the encoded image (", bytes.size(),
               " bytes) is not an image OpenCV can decode (JPEG, PNG, BMP, ...); the "
               "database is damaged or was not written by convert_imageset");
  const cv::Mat& decoded = scratch.decoded;
  XTRAIN_ASSERT(decoded.depth() == CV_8U && (decoded.channels() == 1 || decoded.channels() == 3) &&
                    decoded.isContinuous(),
                "decoded image of type ", decoded.type());
  const DatumShape shape{decoded.channels(), decoded.rows, decoded.cols};
  if (shape.channels == 1) return PixelSource::planar(decoded.data, shape);
  // OpenCV's split deinterleaves with SIMD, into planes that are views of
  // the scratch buffer (so split does not allocate them).
  scratch.planes.resize(shape.count());
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  cv::Mat planes[3];
  for (int c = 0; c < 3; ++c) {
    planes[c] = cv::Mat(shape.height, shape.width, CV_8UC1, scratch.planes.data() + c * plane);
  }
  cv::split(decoded, planes);
  XTRAIN_ASSERT(planes[0].data == scratch.planes.data(), "cv::split reallocated a plane");
  return PixelSource::planar(scratch.planes.data(), shape);
}

DatumShape DataTransformer::decoded_shape(const Datum& datum) const {
  Scratch scratch;
  return pixels_of(datum, scratch).shape;
}

void DataTransformer::place_crop(const DatumShape& input, RandomStream& random,
                                 Placement* at) const {
  if (crop_ == 0) return;
  if (phase_ == TRAIN) {
    at->h_off =
        static_cast<int>(random.engine()() % static_cast<unsigned>(input.height - crop_ + 1));
    at->w_off =
        static_cast<int>(random.engine()() % static_cast<unsigned>(input.width - crop_ + 1));
  } else {
    at->h_off = (input.height - crop_) / 2;
    at->w_off = (input.width - crop_) / 2;
  }
}

void DataTransformer::transform(const PixelSource& source, RandomStream& random, float* out) const {
  if (resize_.enabled()) {
    Scratch scratch;
    transform_resized(source, random, scratch, out);
  } else {
    transform_in_place(source, random, out);
  }
}

void DataTransformer::transform(const PixelSource& source, RandomStream& random, Scratch& scratch,
                                float* out) const {
  if (resize_.enabled()) {
    transform_resized(source, random, scratch, out);
  } else {
    transform_in_place(source, random, out);
  }
}

void DataTransformer::transform_in_place(const PixelSource& source, RandomStream& random,
                                         float* out) const {
  // Draw order matters for reproducibility: mirror first, then the offsets.
  Placement at;
  at.mirror = param_.mirror() && random.engine()() % 2 != 0;
  place_crop(source.shape, random, &at);
  // The mean file has the image's shape and is indexed where the image is.
  const MeanWindow mean{source.shape.height, source.shape.width, at.h_off, at.w_off};
  if (source.bytes != nullptr) {
    transform_planar(source.bytes, source.shape, at, mean, out);
  } else {
    transform_planar(source.floats, source.shape, at, mean, out);
  }
}

// Mirror, the resize, then the crop in the resized image; the mean file's
// centre (check_input_shape made sure it covers the crop).
void DataTransformer::transform_resized(const PixelSource& source, RandomStream& random,
                                        Scratch& scratch, float* out) const {
  Placement at;
  at.mirror = param_.mirror() && random.engine()() % 2 != 0;
  const PlaneSize from{source.shape.height, source.shape.width};
  const PlaneSize to = resize_.draw(from.height, from.width, random);
  const DatumShape resized{source.shape.channels, to.height, to.width};
  place_crop(resized, random, &at);
  MeanWindow mean;
  if (has_mean_file_) {
    mean.height = mean_image_.shape[2];
    mean.width = mean_image_.shape[3];
    mean.h_off = (mean.height - crop_) / 2;
    mean.w_off = (mean.width - crop_) / 2;
  }
  if (source.bytes != nullptr) {
    const std::uint8_t* values = source.bytes;
    if (!(to == from)) {
      resize_.resize(values, resized.channels, from, to, scratch.resize, &scratch.resized_bytes);
      values = scratch.resized_bytes.data();
    }
    transform_planar(values, resized, at, mean, out);
  } else {
    const float* values = source.floats;
    if (!(to == from)) {
      resize_.resize(values, resized.channels, from, to, scratch.resize, &scratch.resized_floats);
      values = scratch.resized_floats.data();
    }
    transform_planar(values, resized, at, mean, out);
  }
}

void DataTransformer::transform(const Datum& datum, RandomStream& random, float* out) const {
  Scratch scratch;
  transform(pixels_of(datum, scratch), random, scratch, out);
}

template <typename Value>
void DataTransformer::transform_planar(const Value* values, const DatumShape& input, Placement at,
                                       MeanWindow mean_window, float* out) const {
  const DatumShape output = output_shape(input);
  const RowFunction<Value> row = pick_row<Value>(at.mirror, has_mean_file_);
  const float* mean = mean_image_.values.data();
  for (int c = 0; c < input.channels; ++c) {
    const float channel_mean =
        mean_values_.empty() ? 0.0f : mean_values_[mean_values_.size() == 1 ? 0 : c];
    for (int h = 0; h < output.height; ++h) {
      const std::size_t source_row =
          (static_cast<std::size_t>(c) * input.height + at.h_off + h) * input.width + at.w_off;
      const std::size_t mean_row =
          (static_cast<std::size_t>(c) * mean_window.height + mean_window.h_off + h) *
              mean_window.width +
          mean_window.w_off;
      float* target = out + (static_cast<std::size_t>(c) * output.height + h) * output.width;
      row(values + source_row, has_mean_file_ ? mean + mean_row : nullptr, channel_mean, scale_,
          target, output.width);
    }
  }
}

}  // namespace xtrain
