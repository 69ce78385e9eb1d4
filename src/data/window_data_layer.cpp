// WindowData (Caffe's type "WindowData"): R-CNN's fine-tuning input. Each
// batch of window_data_param.batch_size B holds B - F background windows
// then F = floor(B fg_fraction) foreground windows, each drawn at random from
// its list (data/window_file.hpp), cut out of its image, warped to
// crop_size x crop_size and labelled with its class (0 for background).
//
// The cut, as Caffe's: crop_mode "warp" stretches the window itself;
// context_pad P > 0 or crop_mode "square" first widens it about its centre
// by crop / (crop - 2P) (square: both sides to the longer one), clips it to
// the image and warps the clipped part to where it falls in the crop, the
// rest of the crop staying 0. With mirror, a window is flipped left-right
// (its padding too) half the time. Each value is (pixel - mean) * scale,
// the mean a mean file's (its central crop_size square, offset by the
// padding) or mean_value's; images are read in colour, as Caffe does.
//
// Settings: crop_size, mirror, mean_file and mean_value from transform_param
// (as Caffe; window_data_param's crop_size, mirror and mean_file, which
// Caffe's upgrade moves there, are taken when transform_param lacks them);
// scale from window_data_param, or transform_param's when that is the one
// set (Caffe reads only window_data_param's, so an upgraded net lost it).
//
// Determinism: record n's window, mirror and image come from a stream seeded
// with (a seed drawn once from the layer's stream, n), whatever the threads.
#include <algorithm>
#include <cmath>
#include <memory>

#include "data/mean_file.hpp"
#include "data/prefetching_data_layer.hpp"
#include "data/random_resize.hpp"
#include "data/window_file.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

// Where a window's pixels go in the crop: the image region [x1, x2] x [y1,
// y2] is resized to width x height and written at (pad_left, pad_top).
struct WarpPlan {
  int x1, y1, x2, y2;
  int width, height;
  int pad_left, pad_top;
};

int round_to_int(float value) { return static_cast<int>(std::round(value)); }

// Caffe's geometry (see the header comment), in float as Caffe computes it.
WarpPlan plan_warp(const DetectionWindow& window, int image_height, int image_width, int crop,
                   int context_pad, bool square, bool mirror) {
  WarpPlan plan{window.x1, window.y1, window.x2, window.y2, crop, crop, 0, 0};
  if (context_pad == 0 && !square) return plan;
  const float context_scale = static_cast<float>(crop) / static_cast<float>(crop - 2 * context_pad);
  float half_height = static_cast<float>(window.y2 - window.y1 + 1) / 2.0f;
  float half_width = static_cast<float>(window.x2 - window.x1 + 1) / 2.0f;
  const float center_x = static_cast<float>(window.x1) + half_width;
  const float center_y = static_cast<float>(window.y1) + half_height;
  if (square) half_width = half_height = std::max(half_width, half_height);
  int x1 = round_to_int(center_x - half_width * context_scale);
  int x2 = round_to_int(center_x + half_width * context_scale);
  int y1 = round_to_int(center_y - half_height * context_scale);
  int y2 = round_to_int(center_y + half_height * context_scale);
  const int unclipped_height = y2 - y1 + 1;
  const int unclipped_width = x2 - x1 + 1;
  const int pad_x1 = std::max(0, -x1);
  const int pad_y1 = std::max(0, -y1);
  const int pad_x2 = std::max(0, x2 - image_width + 1);
  const int pad_y2 = std::max(0, y2 - image_height + 1);
  plan.x1 = x1 + pad_x1;
  plan.x2 = x2 - pad_x2;
  plan.y1 = y1 + pad_y1;
  plan.y2 = y2 - pad_y2;
  const float scale_x = static_cast<float>(crop) / static_cast<float>(unclipped_width);
  const float scale_y = static_cast<float>(crop) / static_cast<float>(unclipped_height);
  plan.width = round_to_int(static_cast<float>(plan.x2 - plan.x1 + 1) * scale_x);
  plan.height = round_to_int(static_cast<float>(plan.y2 - plan.y1 + 1) * scale_y);
  plan.pad_top = round_to_int(static_cast<float>(pad_y1) * scale_y);
  plan.pad_left = round_to_int(static_cast<float>(mirror ? pad_x2 : pad_x1) * scale_x);
  // Rounding may push the warped part past the crop's edge.
  plan.height = std::min(plan.height, crop - plan.pad_top);
  plan.width = std::min(plan.width, crop - plan.pad_left);
  return plan;
}

Image cut(const Image& image, const WarpPlan& plan) {
  Image part;
  part.channels = image.channels;
  part.height = plan.y2 - plan.y1 + 1;
  part.width = plan.x2 - plan.x1 + 1;
  part.pixels.resize(static_cast<std::size_t>(part.channels) * part.height * part.width);
  std::uint8_t* out = part.pixels.data();
  for (int c = 0; c < image.channels; ++c) {
    for (int y = plan.y1; y <= plan.y2; ++y) {
      const std::uint8_t* row =
          image.pixels.data() + (static_cast<std::size_t>(c) * image.height + y) * image.width;
      out = std::copy(row + plan.x1, row + plan.x2 + 1, out);
    }
  }
  return part;
}

class WindowDataLayer : public PrefetchingDataLayer {
 public:
  explicit WindowDataLayer(const LayerParameter& param) : PrefetchingDataLayer(param) {}
  ~WindowDataLayer() override { stop_prefetching(); }
  const char* type() const override { return "WindowData"; }

  void layer_setup(const BlobVec&, const BlobVec& top) override {
    const WindowDataParameter& window = param_.window_data_param();
    const TransformationParameter& transform = param_.transform_param();
    XTRAIN_CHECK(!window.source().empty(), where(),
                 ": window_data_param.source is empty; give the path of a window file");
    XTRAIN_CHECK(window.batch_size() > 0, where(), ": window_data_param.batch_size must be > 0");
    XTRAIN_CHECK(!asks_for_random_resize(transform), where(),
                 ": transform_param's img_rand_resize_*, rand_resize_ratio_* and *_stretch_* "
                 "(NVIDIA Caffe's random resize) apply to Data and ImageData layers only (NVIDIA "
                 "Caffe ignores them here); windows are warped to crop_size");
    crop_size_ =
        static_cast<int>(transform.crop_size() > 0 ? transform.crop_size() : window.crop_size());
    XTRAIN_CHECK(crop_size_ > 0, where(),
                 " needs transform_param { crop_size: ... } (> 0): the size windows are warped to");
    context_pad_ = static_cast<int>(window.context_pad());
    XTRAIN_CHECK(2 * context_pad_ < crop_size_, where(), ": context_pad ", context_pad_,
                 " leaves no room in a crop of ", crop_size_, "; use less than crop_size / 2");
    XTRAIN_CHECK(window.crop_mode() == "warp" || window.crop_mode() == "square", where(),
                 ": crop_mode '", window.crop_mode(), "' is neither \"warp\" nor \"square\"");
    square_ = window.crop_mode() == "square";
    mirror_ = transform.has_mirror() ? transform.mirror() : window.mirror();
    scale_ = window.has_scale() || !transform.has_scale() ? window.scale() : transform.scale();
    XTRAIN_CHECK(
        std::isfinite(scale_), where(), ": the scale is ", scale_,
        ", not a finite number; give e.g. `scale: 0.00390625` (1/256) or leave it out (1)");
    fg_count_ = static_cast<int>(static_cast<float>(window.batch_size()) * window.fg_fraction());
    batch_size_ = static_cast<int>(window.batch_size());

    try {
      windows_ = read_window_file(window.source(), window.root_folder(), window.fg_threshold(),
                                  window.bg_threshold());
    } catch (const Error& error) {
      throw Error(where() + ": " + error.what());
    }
    XTRAIN_CHECK(fg_count_ == 0 || !windows_.foreground.empty(), where(), ": '", window.source(),
                 "' has no foreground window (overlap >= fg_threshold ", window.fg_threshold(),
                 ") to fill ", fg_count_, " items of each batch");
    XTRAIN_CHECK(fg_count_ == batch_size_ || !windows_.background.empty(), where(), ": '",
                 window.source(), "' has no background window (overlap < bg_threshold ",
                 window.bg_threshold(), ")");
    const int channels = windows_.images.front().channels;
    for (const WindowImage& image : windows_.images) {
      XTRAIN_CHECK(image.channels == 3, where(), ": '", window.source(), "' gives image '",
                   image.path, "' ", image.channels,
                   " channels; WindowData reads every image in colour (3), as Caffe does");
    }
    XLOG(INFO) << where() << ": " << windows_.images.size() << " images, "
               << windows_.foreground.size() << " foreground and " << windows_.background.size()
               << " background windows";
    read_mean(transform, window, channels);
    if (window.cache_images()) {
      for (const WindowImage& image : windows_.images) {
        cached_bytes_.push_back(read_file_bytes(image.path));
      }
    }
    // The base class asks the transformer whether records need their own
    // random streams; this layer seeds its own (decode_record).
    transformer_ = std::make_unique<DataTransformer>(TransformationParameter(), phase(), where());
    allocate_batches(DatumShape{channels, crop_size_, crop_size_}, top);
  }

 protected:
  void start_reading() override {
    window_seed_ = (static_cast<std::uint64_t>(random().engine()()) << 32) | random().engine()();
    next_record_ = 0;
  }

  // A record is only its position in the endless stream of samples; which
  // window it gets is decided when it is decoded.
  void read_record(Record& record) override {
    record.key = std::to_string(next_record_);
    ++next_record_;
  }

  void decode_record(const Record& record, Worker& worker, float* data,
                     float* label) const override {
    const std::uint64_t index = std::stoull(record.key);
    RandomStream random(derive_seed(window_seed_, "window", index));
    const bool foreground = static_cast<int>(index % batch_size_) >= batch_size_ - fg_count_;
    const auto& list = foreground ? windows_.foreground : windows_.background;
    const DetectionWindow& window = list[random.engine()() % list.size()];
    const bool mirror = mirror_ && random.engine()() % 2 == 1;
    (void)worker;

    const WindowImage& source = windows_.images[window.image];
    const std::string what = "'" + windows_.path + "' line " + std::to_string(window.line);
    Image image;
    try {
      image = cached_bytes_.empty() ? read_image_file(source.path, ColorMode::kColor)
                                    : decode_image(cached_bytes_[window.image], ColorMode::kColor,
                                                   "'" + source.path + "'");
    } catch (const Error& error) {
      throw Error(where() + ": the image of the window at " + what + ": " + error.what());
    }
    const WarpPlan plan =
        plan_warp(window, image.height, image.width, crop_size_, context_pad_, square_, mirror);
    XTRAIN_CHECK(plan.x1 >= 0 && plan.y1 >= 0 && plan.x2 < image.width && plan.y2 < image.height,
                 where(), ": the window at ", what, " (", window.x1, ", ", window.y1, ", ",
                 window.x2, ", ", window.y2, ") is not inside its image '", source.path, "' (",
                 image.width, " x ", image.height, ")");
    std::fill_n(data, static_cast<std::size_t>(image.channels) * crop_size_ * crop_size_, 0.0f);
    if (label != nullptr) *label = static_cast<float>(window.label);
    if (plan.width <= 0 || plan.height <= 0) return;
    const Image warped = resize_image(cut(image, plan), plan.height, plan.width);
    write_crop(warped, plan, mirror, data);
  }

 private:
  void read_mean(const TransformationParameter& transform, const WindowDataParameter& window,
                 int channels) {
    const std::string mean_file =
        transform.has_mean_file() ? transform.mean_file() : window.mean_file();
    XTRAIN_CHECK(mean_file.empty() || transform.mean_value_size() == 0, where(),
                 ": give mean_file or mean_value, not both");
    if (!mean_file.empty()) {
      mean_ = read_mean_file(mean_file);
      const auto& shape = mean_.shape;
      XTRAIN_CHECK(shape.size() == 4 && shape[1] == channels && shape[2] >= crop_size_ &&
                       shape[3] >= crop_size_,
                   where(), ": the mean file '", mean_file, "' must be 1 x ", channels,
                   " x H x W with H, W >= crop_size ", crop_size_);
      return;
    }
    const int values = transform.mean_value_size();
    XTRAIN_CHECK(values == 0 || values == 1 || values == channels, where(), ": ", values,
                 " mean_value entries for ", channels, " channels; give 1 or ", channels);
    for (int c = 0; c < values; ++c) {
      XTRAIN_CHECK(std::isfinite(transform.mean_value(c)), where(), ": mean_value ",
                   transform.mean_value(c), " is not a finite number");
      mean_values_.push_back(transform.mean_value(c));
    }
    if (values == 1) mean_values_.resize(static_cast<std::size_t>(channels), mean_values_[0]);
  }

  // (pixel - mean) * scale at (row + pad_top, column + pad_left) of each
  // channel; a mean file is read at its central crop, shifted by the pad.
  void write_crop(const Image& warped, const WarpPlan& plan, bool mirror, float* data) const {
    const int mean_height = mean_.shape.empty() ? 0 : mean_.shape[2];
    const int mean_width = mean_.shape.empty() ? 0 : mean_.shape[3];
    const int mean_offset = (mean_width - crop_size_) / 2;
    for (int c = 0; c < warped.channels; ++c) {
      for (int y = 0; y < warped.height; ++y) {
        const std::uint8_t* row =
            warped.pixels.data() + (static_cast<std::size_t>(c) * warped.height + y) * warped.width;
        const int out_y = y + plan.pad_top;
        for (int x = 0; x < warped.width; ++x) {
          const float pixel = row[mirror ? warped.width - 1 - x : x];
          const int out_x = x + plan.pad_left;
          float mean = 0;
          if (!mean_.values.empty()) {
            mean = mean_.values[(static_cast<std::size_t>(c) * mean_height + out_y + mean_offset) *
                                    mean_width +
                                out_x + mean_offset];
          } else if (!mean_values_.empty()) {
            mean = mean_values_[c];
          }
          data[(static_cast<std::size_t>(c) * crop_size_ + out_y) * crop_size_ + out_x] =
              (pixel - mean) * scale_;
        }
      }
    }
  }

  WindowFile windows_;
  std::vector<std::string> cached_bytes_;  // cache_images: each image's file
  MeanImage mean_;
  std::vector<float> mean_values_;
  int crop_size_ = 0;
  int context_pad_ = 0;
  bool square_ = false;
  bool mirror_ = false;
  float scale_ = 1;
  int fg_count_ = 0;
  std::uint64_t window_seed_ = 0;
  std::uint64_t next_record_ = 0;  // the reader thread's, once it runs
};

}  // namespace

void register_window_data_layer(LayerRegistry& registry) {
  add_layer<WindowDataLayer>(registry, "WindowData");
}

}  // namespace xtrain
