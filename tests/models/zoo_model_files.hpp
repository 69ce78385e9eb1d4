// The models under models/ as the zoo tests see them: the files each one
// has, and its nets made runnable without any data set (data layers swapped
// for DummyData layers of the shapes the real data would have).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::testing {

inline std::filesystem::path models_root() {
  return std::filesystem::path(XTRAIN_SOURCE_DIR) / "models";
}

// Every folder under models/ with a solver (the models one trains as they
// are), sorted by name: new models are covered by the zoo tests as soon as
// they are added. The Darknet conversions (yolov3, yolov3_tiny: a cfg and its
// deploy net, trained from Darknet's weights or a train net the converter
// writes) are the Darknet tests' (tests/darknet_*_test.cpp).
inline std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(models_root())) {
    if (!entry.is_directory()) continue;
    const bool has_solver = std::any_of(
        std::filesystem::directory_iterator(entry.path()), std::filesystem::directory_iterator(),
        [](const std::filesystem::directory_entry& file) {
          return file.path().filename().string().find("solver") != std::string::npos;
        });
    if (has_solver) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The model's .prototxt files whose name contains `kind` ("solver",
// "deploy"), sorted by name.
inline std::vector<std::filesystem::path> model_files(const std::string& model,
                                                      const std::string& kind) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(models_root() / model)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".prototxt" && name.find(kind) != std::string::npos) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline bool is_data_layer(const LayerParameter& layer) {
  const std::string& type = layer.type();
  return type == "Data" || type == "ImageData" || type == "HDF5Data" || type == "MemoryData";
}

struct ImageShape {
  int channels = 0;
  int height = 0;
  int width = 0;
};

// The images of the data sets the models read (house paths: data/<set>/...),
// before any crop.
inline ImageShape data_set_image_shape(const std::string& source, const std::string& layer_name) {
  struct DataSet {
    const char* path_part;
    ImageShape shape;
  };
  static const DataSet kDataSets[] = {
      {"cifar10", {3, 32, 32}},
      {"mnist", {1, 28, 28}},  // MNIST and Fashion-MNIST
      {"ilsvrc12", {3, 256, 256}},
  };
  for (const DataSet& data_set : kDataSets) {
    if (source.find(data_set.path_part) != std::string::npos) return data_set.shape;
  }
  throw Error(detail::concat("data layer '", layer_name, "' reads '", source,
                             "', a data set the zoo tests do not know; add its image shape to "
                             "data_set_image_shape() in tests/models/zoo_model_files.hpp"));
}

// The shape of one image as a data layer delivers it: its own size for
// MemoryData, the data set's (or ImageData's resize) otherwise, then the
// transform's crop and colour forcing.
inline ImageShape data_layer_image_shape(const LayerParameter& layer) {
  ImageShape shape;
  if (layer.type() == "MemoryData") {
    const MemoryDataParameter& memory = layer.memory_data_param();
    shape = {static_cast<int>(memory.channels()), static_cast<int>(memory.height()),
             static_cast<int>(memory.width())};
  } else if (layer.type() == "ImageData") {
    const ImageDataParameter& images = layer.image_data_param();
    shape = data_set_image_shape(images.source(), layer.name());
    shape.channels = images.is_color() ? 3 : 1;
    if (images.new_height() > 0) shape.height = static_cast<int>(images.new_height());
    if (images.new_width() > 0) shape.width = static_cast<int>(images.new_width());
  } else if (layer.type() == "Data") {
    shape = data_set_image_shape(layer.data_param().source(), layer.name());
  } else {
    throw Error(detail::concat(
        "data layer '", layer.name(), "' is a ", layer.type(),
        " layer, whose shapes the zoo tests cannot tell; give the model a Data, "
        "ImageData or MemoryData layer, or teach data_layer_image_shape() about it"));
  }
  const TransformationParameter& transform = layer.transform_param();
  if (transform.crop_size() > 0) {
    shape.height = shape.width = static_cast<int>(transform.crop_size());
  }
  if (transform.force_gray()) shape.channels = 1;
  if (transform.force_color()) shape.channels = 3;
  return shape;
}

// Text for sequence models: HDF5Data rows of one character (a class
// number) for each of a fixed number of streams; batch_size is the number of
// time steps, which the net's other inputs (cont) are shaped for.
inline int text_data_set_streams(const LayerParameter& layer) {
  const std::string& source = layer.hdf5_data_param().source();
  if (source.find("char_lstm") != std::string::npos) return 32;
  throw Error(detail::concat("data layer '", layer.name(), "' reads '", source,
                             "', a text the zoo tests do not know; add its stream count to "
                             "text_data_set_streams() in tests/models/zoo_model_files.hpp"));
}

// A DummyData layer standing in for `data_layer`: the same name, tops and
// include/exclude rules; `batch` images uniform in [0, 1) (valid pixels and
// valid targets for an autoencoder's cross-entropy) and labels 0. For text
// (HDF5Data), every top is its batch_size x streams characters, all class 0.
inline LayerParameter dummy_data_layer(const LayerParameter& data_layer, int batch) {
  LayerParameter dummy;
  if (data_layer.type() == "HDF5Data") {
    dummy.set_name(data_layer.name());
    dummy.set_type("DummyData");
    *dummy.mutable_top() = data_layer.top();
    *dummy.mutable_include() = data_layer.include();
    *dummy.mutable_exclude() = data_layer.exclude();
    BlobShape* shape = dummy.mutable_dummy_data_param()->add_shape();
    shape->add_dim(static_cast<int>(data_layer.hdf5_data_param().batch_size()));
    shape->add_dim(text_data_set_streams(data_layer));
    dummy.mutable_dummy_data_param()->add_data_filler()->set_type("constant");
    return dummy;
  }
  const ImageShape image = data_layer_image_shape(data_layer);
  dummy.set_name(data_layer.name());
  dummy.set_type("DummyData");
  *dummy.mutable_top() = data_layer.top();
  *dummy.mutable_include() = data_layer.include();
  *dummy.mutable_exclude() = data_layer.exclude();
  DummyDataParameter* param = dummy.mutable_dummy_data_param();
  for (int top = 0; top < data_layer.top_size(); ++top) {
    BlobShape* shape = param->add_shape();
    shape->add_dim(batch);
    FillerParameter* filler = param->add_data_filler();
    if (top == 0) {
      shape->add_dim(image.channels);
      shape->add_dim(image.height);
      shape->add_dim(image.width);
      filler->set_type("uniform");
      filler->set_min(0);
      filler->set_max(1);
    } else {
      filler->set_type("constant");
      filler->set_value(0);
    }
  }
  return dummy;
}

// `net` with every data layer replaced by dummy_data_layer(layer, batch).
inline NetParameter with_dummy_data(const NetParameter& net, int batch) {
  NetParameter copy = net;
  for (LayerParameter& layer : *copy.mutable_layer()) {
    if (is_data_layer(layer)) layer = dummy_data_layer(layer, batch);
  }
  return copy;
}

// A deploy net with `batch` images per Input (Caffe's deploy files ask for
// 10 at a time), whether the input is an Input layer or the old net-level
// input_shape / input_dim fields.
inline NetParameter with_input_batch(const NetParameter& net, int batch) {
  NetParameter copy = net;
  for (LayerParameter& layer : *copy.mutable_layer()) {
    if (layer.type() != "Input") continue;
    for (BlobShape& shape : *layer.mutable_input_param()->mutable_shape()) {
      if (shape.dim_size() > 0) shape.set_dim(0, batch);
    }
  }
  for (BlobShape& shape : *copy.mutable_input_shape()) {
    if (shape.dim_size() > 0) shape.set_dim(0, batch);
  }
  for (int i = 0; i < copy.input_dim_size(); i += 4) copy.set_input_dim(i, batch);
  return copy;
}

}  // namespace xtrain::testing
