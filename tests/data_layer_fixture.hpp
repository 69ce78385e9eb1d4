// The Data layer tests' LMDB of numbered records and their checks (shared by
// data_layer_test.cpp and data_wait_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "data/data_layer.hpp"
#include "data_layer_tops.hpp"
#include "error_message.hpp"
#include "pattern_images.hpp"
#include "tool_runner.hpp"
#include "xtrain/data_wait.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace data_layer_fixture {

using testing::decode_bytes;
using testing::encode_mat;
using testing::pattern_mat;
using testing::planar_floats;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

inline std::string key_of(int i) {
  char key[16];
  std::snprintf(key, sizeof key, "%08d", i);
  return key;
}

// Record i: a C x H x W image whose pixel j is (i * 16 + j) mod 256, label 100 + i.
inline float pixel(int record, int index) {
  return static_cast<float>((record * 16 + index) & 0xff);
}

inline Datum record_datum(int record, const DatumShape& shape) {
  std::vector<unsigned char> pixels(shape.count());
  for (std::size_t j = 0; j < pixels.size(); ++j) {
    pixels[j] = static_cast<unsigned char>(pixel(record, static_cast<int>(j)));
  }
  return make_datum(shape, pixels.data(), 100 + record);
}

inline void write_db(const std::string& path, int count, const DatumShape& shape) {
  LmdbWriter writer(LmdbDatabase::open_for_writing(path));
  for (int i = 0; i < count; ++i) writer.put(key_of(i), record_datum(i, shape).SerializeAsString());
  writer.commit();
}

inline LayerParameter data_param(const std::string& source, int batch_size,
                                 const std::string& extra = "", Phase phase = TRAIN) {
  LayerParameter param;
  read_proto_from_text_string("name: 'data' type: 'Data' top: 'data' top: 'label' " + extra,
                              &param);
  param.set_phase(phase);
  param.mutable_data_param()->set_source(source);
  param.mutable_data_param()->set_batch_size(batch_size);
  param.mutable_data_param()->set_backend(DataParameter::LMDB);
  return param;
}

using Tops = testing::DataAndLabelTops;

using testing::error_of;

inline void expect_batch(const Tops& tops, const std::vector<int>& records, int image_size) {
  const float* data = tops.data.cpu_data();
  const float* labels = tops.label.cpu_data();
  for (std::size_t item = 0; item < records.size(); ++item) {
    EXPECT_EQ(labels[item], 100.0f + records[item]) << "item " << item;
    for (int j = 0; j < image_size; ++j) {
      ASSERT_EQ(data[item * image_size + j], pixel(records[item], j))
          << "item " << item << " (record " << records[item] << "), pixel " << j;
    }
  }
}

}  // namespace data_layer_fixture
}  // namespace xtrain
