#include "data/mean_file.hpp"

#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain {

MeanImage read_mean_file(const std::string& path) {
  BlobProto proto;
  read_proto_from_binary_file(path, &proto);
  MeanImage mean;
  mean.path = path;
  mean.shape = blob_proto_shape(proto);
  std::size_t count = mean.shape.empty() ? 0 : 1;
  for (int dim : mean.shape) {
    XTRAIN_CHECK(dim >= 0, "mean file '", path, "' has shape ", shape_to_string(mean.shape),
                 "; it is corrupt");
    count *= static_cast<std::size_t>(dim);
  }
  if (proto.double_data_size() > 0) {
    XTRAIN_CHECK(static_cast<std::size_t>(proto.double_data_size()) == count, "mean file '", path,
                 "' has shape ", shape_to_string(mean.shape), " (", count, " values) but holds ",
                 proto.double_data_size(), " values; it is corrupt");
    mean.values.assign(proto.double_data().begin(), proto.double_data().end());
  } else {
    XTRAIN_CHECK(static_cast<std::size_t>(proto.data_size()) == count, "mean file '", path,
                 "' has shape ", shape_to_string(mean.shape), " (", count, " values) but holds ",
                 proto.data_size(), " values; it is corrupt");
    mean.values.assign(proto.data().begin(), proto.data().end());
  }
  return mean;
}

void MeanImage::check_matches(const DatumShape& image) const {
  const std::vector<int> expected = {1, image.channels, image.height, image.width};
  XTRAIN_CHECK(shape == expected, "mean file '", path, "' has shape ", shape_to_string(shape),
               ", but the data has shape ", image.to_string(),
               " (channels x height x width, "
               "before cropping), so the mean must be ",
               shape_to_string(expected),
               "; recompute it with compute_mean (Caffe: compute_image_mean) on this database");
}

void MeanImage::check_covers(int channels, int crop) const {
  XTRAIN_CHECK(shape.size() == 4 && shape[0] == 1 && shape[1] == channels && shape[2] >= crop &&
                   shape[3] >= crop,
               "mean file '", path, "' has shape ", shape_to_string(shape),
               ", but the images have ", channels,
               " channels and are resized at random before the crop, so the mean must be (1, ",
               channels, ", H, W) with H and W at least crop_size ", crop,
               " (its central crop_size x crop_size is subtracted)");
}

}  // namespace xtrain
