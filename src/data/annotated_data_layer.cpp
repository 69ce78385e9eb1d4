#include "data/annotated_data_layer.hpp"

#include <opencv2/core.hpp>

#include "data/box_sampling.hpp"
#include "data/jitter_placement.hpp"
#include "data/photometric_distortion.hpp"
#include "data/random_resize.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

// The transform left for step 6: mean and scale (and how to decode). The
// geometric steps before it are this layer's.
TransformationParameter mean_and_scale_only(const TransformationParameter& param) {
  TransformationParameter kept = param;
  kept.set_mirror(false);
  kept.clear_crop_size();
  kept.clear_resize_param();
  kept.clear_jitter_param();
  kept.clear_noise_param();
  kept.clear_distort_param();
  kept.clear_expand_param();
  kept.clear_emit_constraint();
  return kept;
}

}  // namespace

AnnotatedDataLayer::~AnnotatedDataLayer() { stop_prefetching(); }

void AnnotatedDataLayer::check_parameters() const {
  const TransformationParameter& transform = param_.transform_param();
  XTRAIN_CHECK(transform.crop_size() == 0, where(),
               ": transform_param.crop_size is not supported by AnnotatedData (its boxes would "
               "need re-projecting); crop with annotated_data_param.batch_sampler and size the "
               "output with transform_param.resize_param { height width }");
  XTRAIN_CHECK(!asks_for_random_resize(transform), where(),
               ": transform_param's img_rand_resize_*, rand_resize_ratio_* and *_stretch_* "
               "(NVIDIA Caffe's random resize) apply to Data and ImageData layers only (NVIDIA "
               "Caffe ignores them here); size AnnotatedData's images with "
               "transform_param.resize_param or jitter_param");
  XTRAIN_CHECK(!transform.has_noise_param() || transform.noise_param().prob() <= 0, where(),
               ": transform_param.noise_param is not implemented; remove it (or set prob: 0)");
  XTRAIN_CHECK(!(transform.has_resize_param() && transform.has_jitter_param()), where(),
               ": transform_param has both resize_param and jitter_param; jitter_param sizes "
               "the output itself (height, width), so remove resize_param (or jitter_param "
               "for a plain resize)");
  if (transform.has_jitter_param()) check_jitter(transform.jitter_param());
  if (transform.has_resize_param()) {
    const ResizeParameter& resize = transform.resize_param();
    XTRAIN_CHECK(resize.resize_mode() != ResizeParameter::FIT_SMALL_SIZE, where(),
                 ": resize_param.resize_mode FIT_SMALL_SIZE gives every image its own size, "
                 "which a batch cannot hold; use WARP or FIT_LARGE_SIZE_AND_PAD");
    XTRAIN_CHECK(resize.height() > 0 && resize.width() > 0, where(),
                 ": transform_param.resize_param needs height and width (> 0), the size of the "
                 "output images");
  } else if (!transform.has_jitter_param()) {
    XTRAIN_CHECK(
        param_.annotated_data_param().batch_sampler_size() == 0 && !transform.has_expand_param(),
        where(),
        ": batch_sampler and expand_param change the images' sizes; give "
        "transform_param.resize_param { height: H width: W } (or jitter_param) so that every "
        "image of a batch has the output's size");
  }
  for (int i = 0; i < param_.annotated_data_param().batch_sampler_size(); ++i) {
    const Sampler& s = param_.annotated_data_param().batch_sampler(i).sampler();
    XTRAIN_CHECK(s.min_scale() > 0 && s.min_scale() <= s.max_scale() && s.max_scale() <= 1, where(),
                 ": batch_sampler ", i + 1, " has min_scale ", s.min_scale(), " and max_scale ",
                 s.max_scale(), "; need 0 < min_scale <= max_scale <= 1");
    XTRAIN_CHECK(s.min_aspect_ratio() > 0 && s.min_aspect_ratio() <= s.max_aspect_ratio(), where(),
                 ": batch_sampler ", i + 1, " has min_aspect_ratio ", s.min_aspect_ratio(),
                 " and max_aspect_ratio ", s.max_aspect_ratio(),
                 "; need 0 < min_aspect_ratio <= max_aspect_ratio");
  }
  if (transform.has_expand_param()) {
    XTRAIN_CHECK(transform.expand_param().max_expand_ratio() >= 1, where(),
                 ": expand_param.max_expand_ratio is ", transform.expand_param().max_expand_ratio(),
                 "; it must be at least 1");
  }
}

void AnnotatedDataLayer::check_jitter(const JitterParameter& jitter) const {
  XTRAIN_CHECK(jitter.height() > 0 && jitter.width() > 0, where(),
               ": transform_param.jitter_param needs height and width (> 0), the size of the "
               "output images");
  XTRAIN_CHECK(jitter.jitter() >= 0 && jitter.jitter() < 1, where(), ": jitter_param.jitter is ",
               jitter.jitter(),
               "; it must be in [0, 1) (each side changes by up to that fraction; Darknet's "
               "YOLOv3 uses 0.3)");
  XTRAIN_CHECK(jitter.min_scale() > 0 && jitter.min_scale() <= jitter.max_scale(), where(),
               ": jitter_param has min_scale ", jitter.min_scale(), " and max_scale ",
               jitter.max_scale(), "; need 0 < min_scale <= max_scale");
  XTRAIN_CHECK(jitter.prob() >= 0 && jitter.prob() <= 1, where(), ": jitter_param.prob is ",
               jitter.prob(), "; it must be in [0, 1]");
}

cv::Scalar AnnotatedDataLayer::jitter_fill(int channels) const {
  const auto& values = param_.transform_param().jitter_param().fill_value();
  XTRAIN_CHECK(values.size() <= 1 || values.size() == channels, where(), ": jitter_param has ",
               values.size(), " fill_value entries for images of ", channels,
               " channels; give one for all channels or one per channel");
  cv::Scalar fill = cv::Scalar::all(values.empty() ? 127.5 : values[0]);
  for (int c = 1; c < values.size(); ++c) fill[c] = values[c];
  return fill;
}

void AnnotatedDataLayer::layer_setup(const BlobVec&, const BlobVec& top) {
  check_parameters();
  open_database();
  const TransformationParameter& transform = param_.transform_param();
  transformer_ =
      std::make_unique<DataTransformer>(mean_and_scale_only(transform), phase(), where());

  AnnotatedDatum first;
  Record record;
  record.key.assign(cursor_->key());
  record.bytes.assign(cursor_->value());
  parse_record(record, &first);
  const AnnotatedDataParameter& annotated = param_.annotated_data_param();
  boxes_ = first.has_type() || annotated.has_anno_type();
  AnnotatedImage image;
  try {
    image = read_annotated_datum(first, transformer_->color_mode());
  } catch (const Error& error) {
    throw Error(where() + ": " + describe_record(record.key, source_) + ": " + error.what());
  }
  const int channels = image.pixels.channels();
  output_shape_ = DatumShape{channels, image.pixels.rows, image.pixels.cols};
  if (transform.has_resize_param()) {
    output_shape_ = DatumShape{channels, static_cast<int>(transform.resize_param().height()),
                               static_cast<int>(transform.resize_param().width())};
  }
  if (transform.has_jitter_param()) {
    output_shape_ = DatumShape{channels, static_cast<int>(transform.jitter_param().height()),
                               static_cast<int>(transform.jitter_param().width())};
    jitter_fill_ = jitter_fill(channels);
  }
  transformer_->check_input_shape(output_shape_);
  const auto& means = transform.mean_value();
  expand_fill_.assign(static_cast<std::size_t>(channels), 0.0f);
  for (int c = 0; c < channels && !means.empty(); ++c) {
    expand_fill_[static_cast<std::size_t>(c)] = means.size() == 1 ? means[0] : means[c];
  }
  if (boxes_) output_label_rows(7);
  allocate_batches(output_shape_, top);
}

bool AnnotatedDataLayer::augments_at_random() const {
  const TransformationParameter& t = param_.transform_param();
  return t.mirror() || t.has_distort_param() || t.has_expand_param() || t.has_jitter_param() ||
         param_.annotated_data_param().batch_sampler_size() > 0 ||
         t.resize_param().interp_mode_size() > 1;
}

void AnnotatedDataLayer::parse_record(const Record& record, AnnotatedDatum* annotated) const {
  // A Datum parses as an AnnotatedDatum without a datum (its fields are
  // unknown there), so the datum's presence tells the two apart.
  XTRAIN_CHECK(
      annotated->ParseFromArray(record.bytes.data(), static_cast<int>(record.bytes.size())) &&
          annotated->has_datum(),
      where(), ": ", describe_record(record.key, source_),
      " is not an AnnotatedDatum; write the DB with convert_annoset (a Data layer "
      "reads convert_imageset's Datum records)");
}

void AnnotatedDataLayer::augment(RandomStream& random, AnnotatedImage* image) const {
  const TransformationParameter& transform = param_.transform_param();
  if (transform.has_distort_param()) {
    distort_photometrically(transform.distort_param(), random, &image->pixels);
  }
  if (transform.has_expand_param()) {
    expand_annotated(transform.expand_param(), expand_fill_, random, image);
  }
  const auto& samplers = param_.annotated_data_param().batch_sampler();
  if (!samplers.empty()) {
    std::vector<NormalizedBox> crops;
    sample_crops(samplers, image->objects, random, &crops);
    if (!crops.empty()) {
      const NormalizedBox& crop = crops[random.below(static_cast<std::uint32_t>(crops.size()))];
      crop_annotated(crop, transform.has_emit_constraint() ? &transform.emit_constraint() : nullptr,
                     image);
    }
  }
  if (transform.has_resize_param()) resize_annotated(transform.resize_param(), random, image);
  if (transform.has_jitter_param()) {
    jitter_annotated(transform.jitter_param(), jitter_fill_,
                     transform.has_emit_constraint() ? &transform.emit_constraint() : nullptr,
                     random, image);
  }
  if (transform.mirror() && random.below(2) == 1) mirror_annotated(image);
}

void AnnotatedDataLayer::write_label_rows(const AnnotatedImage& image,
                                          std::vector<float>* rows) const {
  for (const BoxAnnotation& object : image.objects) {
    rows->insert(
        rows->end(),
        {static_cast<float>(object.label), static_cast<float>(object.instance_id), object.box.xmin,
         object.box.ymin, object.box.xmax, object.box.ymax, object.difficult ? 1.0f : 0.0f});
  }
}

void AnnotatedDataLayer::decode_record(const Record& record, Worker& worker, float* data,
                                       float* label) const {
  AnnotatedDatum annotated;
  parse_record(record, &annotated);
  AnnotatedImage image;
  try {
    XTRAIN_CHECK(!boxes_ || annotated.has_type() || param_.annotated_data_param().has_anno_type(),
                 "has no annotation type, but the first record has; write every record with "
                 "convert_annoset --anno_type=detection");
    image = read_annotated_datum(annotated, transformer_->color_mode());
    augment(worker.random, &image);
  } catch (const Error& error) {
    throw Error(where() + ": " + describe_record(record.key, source_) + ": " + error.what());
  }
  const DatumShape shape{image.pixels.channels(), image.pixels.rows, image.pixels.cols};
  XTRAIN_CHECK(shape == output_shape_, where(), ": ", describe_record(record.key, source_),
               " gives an image of ", shape.to_string(), ", but the first gave ",
               output_shape_.to_string(),
               "; give transform_param.resize_param { height width } to bring every image to "
               "one size (or force_color / force_gray for mixed channels)");
  // Planar, as the transformer (and Caffe's blobs) want it.
  std::vector<std::uint8_t>& planes = worker.scratch.planes;
  planes.resize(shape.count());
  std::vector<cv::Mat> views;
  for (int c = 0; c < shape.channels; ++c) {
    views.emplace_back(shape.height, shape.width, CV_8UC1,
                       planes.data() + static_cast<std::size_t>(c) * shape.height * shape.width);
  }
  cv::split(image.pixels, views);
  transformer_->transform(PixelSource::planar(planes.data(), shape), worker.random, data);
  if (boxes_) {
    write_label_rows(image, &worker.label_rows);
  } else if (label != nullptr) {
    *label = static_cast<float>(annotated.datum().label());
  }
}

void register_annotated_data_layer(LayerRegistry& registry) {
  add_layer<AnnotatedDataLayer>(registry, "AnnotatedData");
}

}  // namespace xtrain
