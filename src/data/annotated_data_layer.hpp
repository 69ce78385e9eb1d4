// AnnotatedDataLayer (type "AnnotatedData", SSD's): batches of images with
// their objects' boxes, from an LMDB of AnnotatedDatum records
// (convert_annoset), augmented as SSD trains its detectors.
//
// Tops: data (batch_size, C, H, W): C the records' channels (or
// force_color / force_gray), H x W resize_param's (or jitter_param's)
// height x width (without either, every record's own size, which must then
// all be equal);
// optionally label: for records with boxes (AnnotatedDatum.type BBOX, or
// annotated_data_param.anno_type), (1, 1, R, 8), one row per box of the
// batch:
//   [item_id, group_label, instance_id, xmin, ymin, xmax, ymax, difficult]
// with item_id the image's index in the batch and the box normalized to the
// output image; a batch with no box at all gives one row of -1. Records
// without a type give (batch_size) labels, datum.label, as Data does.
//
// Each record, in this order (each step only when its parameter is given),
// its random numbers drawn from the record's own stream in the same order:
//   1. distort_param: photometric distortion (data/photometric_distortion.hpp)
//   2. expand_param: zoom out onto a mean-filled canvas
//   3. batch_sampler: the crops the samplers keep (data/box_sampling.hpp);
//      one of them, drawn uniformly, is cut out (none kept: no crop), boxes
//      kept as transform_param's emit_constraint says (none: every box that
//      overlaps the crop), clipped to it
//   4. resize_param: WARP or FIT_LARGE_SIZE_AND_PAD to height x width, or
//      jitter_param: Darknet's random aspect, scale and place on a canvas of
//      height x width (data/jitter_placement.hpp), boxes kept as
//      emit_constraint says; the two together are refused
//   5. mirror: left-right at random (one draw below(2)), boxes too
//   6. (x - mean) * scale, as the Data layer (mean_value or mean_file)
// (data/annotated_image.hpp states the geometry.) Not supported, refused in
// setup with an error: crop_size (use batch_sampler and resize_param),
// FIT_SMALL_SIZE (its output size differs from image to image), and
// noise_param with prob > 0. resize_param.prob is ignored, as in SSD.
//
// Reading, prefetching, sharding across data-parallel replicas, exact resume
// and determinism by seed are the Data layer's (DataLayer,
// PrefetchingDataLayer): only the decoding of one record differs.
#pragma once

#include <vector>

#include "data/annotated_image.hpp"
#include "data/data_layer.hpp"

namespace xtrain {

class AnnotatedDataLayer : public DataLayer {
 public:
  explicit AnnotatedDataLayer(const LayerParameter& param) : DataLayer(param) {}
  ~AnnotatedDataLayer() override;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "AnnotatedData"; }

 protected:
  bool augments_at_random() const override;
  void decode_record(const Record& record, Worker& worker, float* data,
                     float* label) const override;

 private:
  void check_parameters() const;
  void check_jitter(const JitterParameter& jitter) const;
  cv::Scalar jitter_fill(int channels) const;
  void parse_record(const Record& record, AnnotatedDatum* annotated) const;
  void augment(RandomStream& random, AnnotatedImage* image) const;
  void write_label_rows(const AnnotatedImage& image, std::vector<float>* rows) const;

  bool boxes_ = false;  // label rows of boxes, else one datum.label per image
  DatumShape output_shape_;
  std::vector<float> expand_fill_;  // one value per channel
  cv::Scalar jitter_fill_;
};

}  // namespace xtrain
