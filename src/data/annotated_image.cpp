#include "data/annotated_image.hpp"

#include <algorithm>
#include <cmath>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "xtrain/datum_io.hpp"
#include "data/imdecode_flags.hpp"
#include "data/letterbox.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

cv::Mat datum_pixels(const Datum& datum, ColorMode mode) {
  if (datum.encoded()) {
    XTRAIN_CHECK(!datum.data().empty(), "the encoded image is empty");
    const cv::Mat bytes(1, static_cast<int>(datum.data().size()), CV_8UC1,
                        const_cast<char*>(datum.data().data()));
    cv::Mat image = cv::imdecode(bytes, imdecode_flags(mode));
    XTRAIN_CHECK(!image.empty() && image.depth() == CV_8U,
                 "the encoded image does not decode to 8-bit pixels (is it a JPEG/PNG/BMP?)");
    return image;
  }
  XTRAIN_CHECK(
      datum.float_data_size() == 0,
      "holds float_data; AnnotatedData needs 8-bit pixels (write it with convert_annoset)");
  const DatumShape shape = datum_shape(datum);
  XTRAIN_CHECK(shape.channels > 0 && shape.height > 0 && shape.width > 0 &&
                   datum.data().size() == shape.count(),
               "has shape ", shape.to_string(), " but ", datum.data().size(),
               " bytes of pixels; every dimension must be positive and the bytes C*H*W");
  std::vector<cv::Mat> planes;
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  for (int c = 0; c < shape.channels; ++c) {
    planes.emplace_back(shape.height, shape.width, CV_8UC1,
                        const_cast<char*>(datum.data().data()) + c * plane);
  }
  cv::Mat image;
  cv::merge(planes, image);  // copies, so the image outlives the Datum
  return image;
}

// The normalized box of the pixels [x0, x1) x [y0, y1) of a w x h image.
NormalizedBox pixel_frame(int x0, int y0, int x1, int y1, int w, int h) {
  return NormalizedBox{static_cast<float>(x0) / w, static_cast<float>(y0) / h,
                       static_cast<float>(x1) / w, static_cast<float>(y1) / h};
}

int interpolation(const ResizeParameter& param, RandomStream& random) {
  if (param.interp_mode_size() == 0) return cv::INTER_LINEAR;
  const int pick =
      param.interp_mode_size() == 1
          ? 0
          : static_cast<int>(random.below(static_cast<std::uint32_t>(param.interp_mode_size())));
  switch (param.interp_mode(pick)) {
    case ResizeParameter::AREA:
      return cv::INTER_AREA;
    case ResizeParameter::NEAREST:
      return cv::INTER_NEAREST;
    case ResizeParameter::CUBIC:
      return cv::INTER_CUBIC;
    case ResizeParameter::LANCZOS4:
      return cv::INTER_LANCZOS4;
    case ResizeParameter::LINEAR:
      break;
  }
  return cv::INTER_LINEAR;
}

int border_mode(ResizeParameter::Pad_mode mode) {
  switch (mode) {
    case ResizeParameter::MIRRORED:
      return cv::BORDER_REFLECT_101;
    case ResizeParameter::REPEAT_NEAREST:
      return cv::BORDER_REPLICATE;
    case ResizeParameter::CONSTANT:
      break;
  }
  return cv::BORDER_CONSTANT;
}

cv::Scalar channel_values(const google::protobuf::RepeatedField<float>& values) {
  cv::Scalar scalar(0, 0, 0, 0);
  for (int c = 0; c < 4; ++c) {
    if (values.size() == 1) scalar[c] = values[0];
    if (values.size() > 1 && c < values.size()) scalar[c] = values[c];
  }
  return scalar;
}

}  // namespace

AnnotatedImage read_annotated_datum(const AnnotatedDatum& record, ColorMode mode) {
  AnnotatedImage image;
  image.pixels = datum_pixels(record.datum(), mode);
  for (const AnnotationGroup& group : record.annotation_group()) {
    for (const Annotation& annotation : group.annotation()) {
      const NormalizedBBox& b = annotation.bbox();
      XTRAIN_CHECK(b.xmin() <= b.xmax() && b.ymin() <= b.ymax(), "the box of instance ",
                   annotation.instance_id(), " of label ", group.group_label(), " is (", b.xmin(),
                   ", ", b.ymin(), ", ", b.xmax(), ", ", b.ymax(),
                   "); need xmin <= xmax and ymin <= ymax (fix the annotation and convert again)");
      image.objects.push_back(BoxAnnotation{group.group_label(), annotation.instance_id(),
                                            NormalizedBox{b.xmin(), b.ymin(), b.xmax(), b.ymax()},
                                            b.difficult()});
    }
  }
  return image;
}

void expand_annotated(const ExpansionParameter& param, const std::vector<float>& fill,
                      RandomStream& random, AnnotatedImage* image) {
  if (uniform_draw(random, 0.0f, 1.0f) > param.prob()) return;
  if (std::fabs(param.max_expand_ratio() - 1.0f) < 1e-2f) return;
  const float ratio = uniform_draw(random, 1.0f, param.max_expand_ratio());
  const int w = image->pixels.cols;
  const int h = image->pixels.rows;
  const int width = static_cast<int>(w * ratio);
  const int height = static_cast<int>(h * ratio);
  const int w_off =
      static_cast<int>(std::floor(uniform_draw(random, 0.0f, static_cast<float>(width - w))));
  const int h_off =
      static_cast<int>(std::floor(uniform_draw(random, 0.0f, static_cast<float>(height - h))));
  cv::Scalar value(0, 0, 0, 0);
  for (std::size_t c = 0; c < fill.size() && c < 4; ++c) value[static_cast<int>(c)] = fill[c];
  cv::Mat canvas(height, width, image->pixels.type(), value);
  image->pixels.copyTo(canvas(cv::Rect(w_off, h_off, w, h)));
  image->pixels = canvas;
  const NormalizedBox frame{-static_cast<float>(w_off) / w, -static_cast<float>(h_off) / h,
                            static_cast<float>(width - w_off) / w,
                            static_cast<float>(height - h_off) / h};
  image->objects = project_annotations(image->objects, frame, nullptr);
}

void crop_annotated(const NormalizedBox& crop, const EmitConstraint* emit, AnnotatedImage* image) {
  const int w = image->pixels.cols;
  const int h = image->pixels.rows;
  const NormalizedBox unit = detection::clipped(crop);
  const int x0 = std::clamp(static_cast<int>(unit.xmin * w), 0, w - 1);
  const int y0 = std::clamp(static_cast<int>(unit.ymin * h), 0, h - 1);
  const int x1 = std::clamp(static_cast<int>(unit.xmax * w), x0 + 1, w);
  const int y1 = std::clamp(static_cast<int>(unit.ymax * h), y0 + 1, h);
  image->pixels = image->pixels(cv::Rect(x0, y0, x1 - x0, y1 - y0)).clone();
  image->objects = project_annotations(image->objects, pixel_frame(x0, y0, x1, y1, w, h), emit);
}

void mirror_annotated(AnnotatedImage* image) {
  cv::flip(image->pixels, image->pixels, 1);
  for (BoxAnnotation& object : image->objects) {
    const float xmin = object.box.xmin;
    object.box.xmin = 1.0f - object.box.xmax;
    object.box.xmax = 1.0f - xmin;
  }
}

void resize_annotated(const ResizeParameter& param, RandomStream& random, AnnotatedImage* image) {
  const int width = static_cast<int>(param.width());
  const int height = static_cast<int>(param.height());
  const int interp = interpolation(param, random);
  if (param.resize_mode() != ResizeParameter::FIT_LARGE_SIZE_AND_PAD) {
    XTRAIN_ASSERT(param.resize_mode() == ResizeParameter::WARP, "resize mode not checked");
    cv::resize(image->pixels, image->pixels, cv::Size(width, height), 0, 0, interp);
    return;
  }
  const LetterboxPlacement placed =
      letterbox_placement(image->pixels.cols, image->pixels.rows, width, height);
  const int fit_w = placed.width;
  const int fit_h = placed.height;
  const int left = placed.left;
  const int top = placed.top;
  cv::Mat fitted;
  cv::resize(image->pixels, fitted, cv::Size(fit_w, fit_h), 0, 0, interp);
  cv::copyMakeBorder(fitted, image->pixels, top, height - fit_h - top, left, width - fit_w - left,
                     border_mode(param.pad_mode()), channel_values(param.pad_value()));
  for (BoxAnnotation& object : image->objects) {
    NormalizedBox& b = object.box;
    b = NormalizedBox{(b.xmin * fit_w + left) / width, (b.ymin * fit_h + top) / height,
                      (b.xmax * fit_w + left) / width, (b.ymax * fit_h + top) / height};
  }
}

}  // namespace xtrain
