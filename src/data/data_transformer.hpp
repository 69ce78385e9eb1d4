// DataTransformer: Caffe's TransformationParameter applied to one image.
//
// For an input image x of shape C x H x W and crop size K (0: no crop, then
// K = H for rows and W for columns), the output y of shape C x K x K is
//
//   y[c][h][w] = (x[c][h_off + h][w_off + w'] - mean[c][h_off + h][w_off + w']) * scale
//
// where w' = w, or K - 1 - w when the image is mirrored, and mean is the mean
// file's image (indexed in the full, uncropped image), or mean_value[c] (one
// value for every channel, or one per channel), or 0.
//
// Offsets and mirroring, in the order the random numbers are drawn:
//   both phases: mirror = mirror_param && rand() % 2;
//   TRAIN: h_off = rand() % (H - K + 1), w_off = rand() % (W - K + 1)
//   TEST:  h_off = (H - K) / 2, w_off = (W - K) / 2
// rand() is one 32-bit draw from the RandomStream passed to transform().
// As in Caffe 1.0, `mirror: true` flips at random in the TEST phase too
// (nets meant for deterministic scoring set mirror: false for TEST).
//
// NVIDIA Caffe 0.17's random resize (img_rand_resize_*, rand_resize_ratio_*,
// *_stretch_*: random_resize.hpp), when set, resizes each image (in both
// phases, as there) before the crop, which it then requires. The draws:
// mirror, the resize's, then the crop's offsets in the resized image. Images
// of any size are taken (at least the crop, unless allow_upscale), and a
// mean file, which must be at least crop_size square, is subtracted by its
// central crop_size x crop_size (what NVIDIA Caffe subtracts from every
// image): x is then indexed in the resized image and mean in the mean file's
// centre.
//
// Encoded Datums (a JPEG/PNG/... in `data`) are decoded first, as Caffe
// does: with force_color as 3 channels (B, G, R), with force_gray as 1, else
// as stored (1 or 3 channels); setting both is an error. The two flags mean
// nothing for unencoded Datums. Decoding reuses a per-thread Scratch (the
// decoded image and its planes), so once it has grown nothing is allocated
// per image; the hot loop is one vectorised pass per output row.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/mean_file.hpp"
#include "data/random_resize.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

// Where one image's pixels are: planar (C x H x W) uint8 or float values.
struct PixelSource {
  const std::uint8_t* bytes = nullptr;  // one of the two is set
  const float* floats = nullptr;
  DatumShape shape;

  static PixelSource planar(const std::uint8_t* pixels, const DatumShape& shape);
  static PixelSource planar(const float* pixels, const DatumShape& shape);
  static PixelSource of(const Image& image);
};

class DataTransformer {
 public:
  // Buffers that one thread reuses from image to image.
  struct Scratch {
    cv::Mat decoded;                   // interleaved, as OpenCV decodes
    std::vector<std::uint8_t> planes;  // the same pixels, planar
    // The random resize's output, planar, and its OpenCV images.
    std::vector<std::uint8_t> resized_bytes;
    std::vector<float> resized_floats;
    ResizeBuffers resize;
  };

  // `owner` prefixes every error, e.g. "layer 'data' (Data)". Reads the mean
  // file, if any.
  DataTransformer(const TransformationParameter& param, Phase phase, std::string owner);

  // How encoded Datums are decoded (force_color / force_gray).
  ColorMode color_mode() const { return color_mode_; }
  // Whether transform() draws random numbers (mirror, a TRAIN crop, the
  // random resize); if not, its RandomStream is left untouched.
  bool uses_random() const { return uses_random_; }

  // Throws xtrain::Error unless images of `input` shape can be transformed:
  // the crop fits, mean_value has 1 or C values, the mean file is (1, C, H, W).
  void check_input_shape(const DatumShape& input) const;
  // C x K x K with K = crop_size, or the input shape without crop.
  DatumShape output_shape(const DatumShape& input) const;
  // Whether images of `shape` give outputs of the same shape as images of
  // `first` (which passed check_input_shape): the same shape, or, with a
  // crop and no mean file, the same channels and at least the crop's size
  // (Caffe crops images of any size); with the random resize, the same
  // channels and, unless allow_upscale, at least the crop's size.
  bool batchable_with(const DatumShape& first, const DatumShape& shape) const;

  // The pixels of a checked Datum. An encoded one is decoded into `scratch`
  // (throws xtrain::Error, without naming the record, if it is not an image);
  // the others are read in place. Valid while the Datum and scratch live.
  PixelSource pixels_of(const Datum& datum, Scratch& scratch) const;
  // The shape of the Datum's image, decoding it if encoded.
  DatumShape decoded_shape(const Datum& datum) const;

  // Writes output_shape(source.shape).count() values to `out`. The source's
  // shape must have passed check_input_shape() (or batchable_with()). The
  // random resize writes its image into `scratch`; the first form makes one
  // when it needs it.
  void transform(const PixelSource& source, RandomStream& random, float* out) const;
  void transform(const PixelSource& source, RandomStream& random, Scratch& scratch,
                 float* out) const;
  // Whether transform() resizes images at random (NVIDIA Caffe's fields).
  bool resizes_at_random() const { return resize_.enabled(); }
  // Convenience for one Datum (allocates a Scratch for encoded ones).
  void transform(const Datum& datum, RandomStream& random, float* out) const;

  const TransformationParameter& param() const { return param_; }

 private:
  struct Placement {
    int h_off = 0;
    int w_off = 0;
    bool mirror = false;
  };
  // Where the mean file's values for the crop are: its plane of height x
  // width values per channel, the crop at (h_off, w_off) in it.
  struct MeanWindow {
    int height = 0;
    int width = 0;
    int h_off = 0;
    int w_off = 0;
  };
  // The crop's offsets in an image of `input`'s size (drawn in TRAIN).
  void place_crop(const DatumShape& input, RandomStream& random, Placement* at) const;
  template <typename Value>
  void transform_planar(const Value* values, const DatumShape& input, Placement at, MeanWindow mean,
                        float* out) const;
  // Caffe 1.0's transform (the crop where the image is) and the one after
  // the random resize.
  void transform_in_place(const PixelSource& source, RandomStream& random, float* out) const;
  void transform_resized(const PixelSource& source, RandomStream& random, Scratch& scratch,
                         float* out) const;

  TransformationParameter param_;
  Phase phase_;
  std::string owner_;
  ColorMode color_mode_ = ColorMode::kAsStored;
  bool uses_random_ = false;
  int crop_ = 0;
  float scale_ = 1;
  std::vector<float> mean_values_;  // empty, 1 value, or one per channel
  bool has_mean_file_ = false;
  MeanImage mean_image_;
  RandomResize resize_;
};

}  // namespace xtrain
