#include "data/data_transformer.hpp"

#include <algorithm>
#include <utility>

#include "xtrain/error.hpp"

namespace xtrain {

DataTransformer::DataTransformer(const TransformationParameter& param, Phase phase,
                                 std::string owner)
    : param_(param), phase_(phase), owner_(std::move(owner)) {
  has_mean_file_ = param_.has_mean_file();
  XTRAIN_CHECK(!(has_mean_file_ && param_.mean_value_size() > 0), owner_,
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
  const int crop = static_cast<int>(param_.crop_size());
  XTRAIN_CHECK(crop <= input.height && crop <= input.width, owner_, ": crop_size ", crop,
               " is larger than the images (", input.to_string(), "); use a crop_size of at most ",
               std::min(input.height, input.width));
  const int means = param_.mean_value_size();
  XTRAIN_CHECK(means == 0 || means == 1 || means == input.channels, owner_, ": ", means,
               " mean_value entries for images with ", input.channels,
               " channels; give one mean_value for all channels or one per channel");
  if (has_mean_file_) {
    try {
      mean_image_.check_matches(input);
    } catch (const Error& error) {
      throw Error(owner_ + ": " + error.what());
    }
  }
}

DatumShape DataTransformer::output_shape(const DatumShape& input) const {
  const int crop = static_cast<int>(param_.crop_size());
  if (crop == 0) return input;
  return DatumShape{input.channels, crop, crop};
}

void DataTransformer::transform(const Datum& datum, RandomStream& random, float* out) const {
  const DatumShape input = datum_shape(datum);
  if (!datum.data().empty()) {
    transform_values(reinterpret_cast<const unsigned char*>(datum.data().data()), input, random,
                     out);
  } else {
    transform_values(datum.float_data().data(), input, random, out);
  }
}

template <typename Value>
void DataTransformer::transform_values(const Value* values, const DatumShape& input,
                                       RandomStream& random, float* out) const {
  const DatumShape output = output_shape(input);
  const bool train = phase_ == TRAIN;
  // Draw order matters for reproducibility: mirror first, then the offsets.
  const bool mirror = param_.mirror() && random.engine()() % 2 != 0;
  int h_off = 0;
  int w_off = 0;
  if (param_.crop_size() > 0) {
    if (train) {
      h_off = static_cast<int>(random.engine()() %
                               static_cast<unsigned>(input.height - output.height + 1));
      w_off = static_cast<int>(random.engine()() %
                               static_cast<unsigned>(input.width - output.width + 1));
    } else {
      h_off = (input.height - output.height) / 2;
      w_off = (input.width - output.width) / 2;
    }
  }
  const float scale = param_.scale();
  const int means = param_.mean_value_size();
  for (int c = 0; c < input.channels; ++c) {
    const float channel_mean = means == 0 ? 0.0f : param_.mean_value(means == 1 ? 0 : c);
    for (int h = 0; h < output.height; ++h) {
      const std::size_t source_row =
          (static_cast<std::size_t>(c) * input.height + h_off + h) * input.width + w_off;
      const Value* source = values + source_row;
      float* target = out + (static_cast<std::size_t>(c) * output.height + h) * output.width;
      const int last = output.width - 1;
      if (has_mean_file_) {
        const float* mean = mean_image_.values.data() + source_row;
        for (int w = 0; w < output.width; ++w) {
          target[mirror ? last - w : w] = (static_cast<float>(source[w]) - mean[w]) * scale;
        }
      } else {
        for (int w = 0; w < output.width; ++w) {
          target[mirror ? last - w : w] = (static_cast<float>(source[w]) - channel_mean) * scale;
        }
      }
    }
  }
}

}  // namespace xtrain
