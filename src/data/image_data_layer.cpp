#include "data/image_data_layer.hpp"

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

ImageDataLayer::~ImageDataLayer() { stop_prefetching(); }

void ImageDataLayer::check_parameters() const {
  const ImageDataParameter& image = param_.image_data_param();
  XTRAIN_CHECK(!image.source().empty(), where(),
               ": image_data_param.source is empty; give the path of a list file of "
               "\"PATH LABEL\" lines");
  XTRAIN_CHECK(image.batch_size() > 0, where(), ": image_data_param.batch_size must be positive");
  XTRAIN_CHECK((image.new_height() == 0) == (image.new_width() == 0), where(),
               ": image_data_param sets new_height ", image.new_height(), " and new_width ",
               image.new_width(), "; set both (> 0) to resize, or neither");
  if (image.has_scale() || image.has_mean_file() || image.has_crop_size() || image.has_mirror()) {
    XLOG(WARNING) << where()
                  << ": image_data_param.scale/mean_file/crop_size/mirror are deprecated and "
                     "ignored (as in Caffe); move them to transform_param";
  }
}

Image ImageDataLayer::read_image(const std::string& path, int line) const {
  try {
    return read_image_file(path, color_mode_, new_height_, new_width_);
  } catch (const Error& error) {
    throw Error(where() + ": " + list_.where(line) + ": " + error.what());
  }
}

void ImageDataLayer::layer_setup(const BlobVec&, const BlobVec& top) {
  check_parameters();
  const ImageDataParameter& image = param_.image_data_param();
  batch_size_ = static_cast<int>(image.batch_size());
  root_folder_ = image.root_folder();
  color_mode_ = image.is_color() ? ColorMode::kColor : ColorMode::kGray;
  new_height_ = static_cast<int>(image.new_height());
  new_width_ = static_cast<int>(image.new_width());

  try {
    list_ = read_image_list(image.source());
  } catch (const Error& error) {
    throw Error(where() + ": " + error.what());
  }
  for (const MalformedListLine& line : list_.malformed) {
    XLOG(WARNING) << where() << ": " << list_.where(line.line_number) << " (\"" << line.text
                  << "\"): " << line.reason << "; the line is left out";
  }
  XTRAIN_CHECK(!list_.entries.empty(), where(), ": the image list '", image.source(),
               "' names no image; write one \"PATH LABEL\" a line");
  XLOG(INFO) << "A total of " << list_.entries.size() << " images.";

  transformer_ = std::make_unique<DataTransformer>(param_.transform_param(), phase(), where());
  const ImageListEntry& first = list_.entries.front();
  const Image first_image = read_image(root_folder_ + first.path, first.line_number);
  image_shape_ = DatumShape{first_image.channels, first_image.height, first_image.width};
  transformer_->check_input_shape(image_shape_);
  allocate_batches(transformer_->output_shape(image_shape_), top);
}

void ImageDataLayer::shuffle_entries() {
  const std::uint64_t high = shuffle_random_.engine()();
  const std::uint64_t low = shuffle_random_.engine()();
  shuffle_image_list(&list_.entries, (high << 32) | low);
}

void ImageDataLayer::start_reading() {
  const ImageDataParameter& image = param_.image_data_param();
  if (image.shuffle()) {
    const std::uint64_t high = random().engine()();
    const std::uint64_t low = random().engine()();
    shuffle_random_.reseed((high << 32) | low);
    XLOG(INFO) << "Shuffling data";
    shuffle_entries();
  }
  if (image.rand_skip() > 0) {
    const std::uint32_t skip = random().below(image.rand_skip());
    XLOG(INFO) << where() << ": skipping the first " << skip << " images";
    position_ = skip % list_.entries.size();
  }
}

void ImageDataLayer::read_record(Record& record) {
  const ImageListEntry& entry = list_.entries[position_];
  record.bytes.assign(root_folder_);
  record.bytes.append(entry.path);
  record.label = entry.label;
  record.line = entry.line_number;
  if (++position_ == list_.entries.size()) {
    position_ = 0;
    if (param_.image_data_param().shuffle()) shuffle_entries();
  }
}

void ImageDataLayer::decode_record(const Record& record, Worker& worker, float* data,
                                   float* label) const {
  const Image image = read_image(record.bytes, record.line);
  const DatumShape shape{image.channels, image.height, image.width};
  XTRAIN_CHECK(transformer_->batchable_with(image_shape_, shape), where(), ": ",
               list_.where(record.line), ": image '", record.bytes, "' has shape ",
               shape.to_string(), ", but the first image has ", image_shape_.to_string(),
               transformer_->resizes_at_random()
                   ? "; with transform_param's random resize every image must have the same "
                     "channels and at least crop_size's height and width (or set allow_upscale: "
                     "true)"
                   : "; set image_data_param new_height and new_width to resize every image to "
                     "one size");
  transformer_->transform(PixelSource::of(image), worker.random, worker.scratch, data);
  if (label != nullptr) *label = static_cast<float>(record.label);
}

void register_image_data_layer(LayerRegistry& registry) {
  add_layer<ImageDataLayer>(registry, "ImageData");
}

}  // namespace xtrain
