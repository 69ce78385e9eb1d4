// Data layer: exact batches from a hand-written LMDB (with wrap-around), the
// transformer inside the layer, the prefetch thread's errors and shutdown.
#include "data/data_layer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data/datum_io.hpp"
#include "data/lmdb_database.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

std::string key_of(int i) {
  char key[16];
  std::snprintf(key, sizeof key, "%08d", i);
  return key;
}

// Record i: a C x H x W image whose pixel j is (i * 16 + j) mod 256, label 100 + i.
float pixel(int record, int index) { return static_cast<float>((record * 16 + index) & 0xff); }

Datum record_datum(int record, const DatumShape& shape) {
  std::vector<unsigned char> pixels(shape.count());
  for (std::size_t j = 0; j < pixels.size(); ++j) {
    pixels[j] = static_cast<unsigned char>(pixel(record, static_cast<int>(j)));
  }
  return make_datum(shape, pixels.data(), 100 + record);
}

void write_db(const std::string& path, int count, const DatumShape& shape) {
  LmdbWriter writer(LmdbDatabase::open_for_writing(path));
  for (int i = 0; i < count; ++i) writer.put(key_of(i), record_datum(i, shape).SerializeAsString());
  writer.commit();
}

LayerParameter data_param(const std::string& source, int batch_size, const std::string& extra = "",
                          Phase phase = TRAIN) {
  LayerParameter param;
  read_proto_from_text_string("name: 'data' type: 'Data' top: 'data' top: 'label' " + extra,
                              &param);
  param.set_phase(phase);
  param.mutable_data_param()->set_source(source);
  param.mutable_data_param()->set_batch_size(batch_size);
  param.mutable_data_param()->set_backend(DataParameter::LMDB);
  return param;
}

struct Tops {
  Blob data;
  Blob label;
  BlobVec both() { return {&data, &label}; }
};

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

void expect_batch(const Tops& tops, const std::vector<int>& records, int image_size) {
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

TEST(DataLayer, BatchesFollowKeyOrderAndWrapAround) {
  TempDir dir("data_layer");
  const DatumShape shape{1, 2, 3};
  write_db(dir.file("db"), 10, shape);
  auto layer = LayerRegistry::global().create(data_param(dir.file("db"), 4));
  EXPECT_STREQ(layer->type(), "Data");
  Tops tops;
  layer->setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{4, 1, 2, 3}));
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{4}));

  layer->forward({}, tops.both());
  expect_batch(tops, {0, 1, 2, 3}, 6);
  layer->forward({}, tops.both());
  expect_batch(tops, {4, 5, 6, 7}, 6);
  layer->forward({}, tops.both());
  expect_batch(tops, {8, 9, 0, 1}, 6);  // wraps to the first record
  for (int n = 3; n < 12; ++n) {
    layer->forward({}, tops.both());
    std::vector<int> expected;
    for (int i = 0; i < 4; ++i) expected.push_back((n * 4 + i) % 10);
    expect_batch(tops, expected, 6);
  }
}

TEST(DataLayer, DataOnlyTopWithTransform) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 3, DatumShape{2, 4, 5});
  DataLayer layer(data_param(dir.file("db"), 2,
                             "transform_param { scale: 0.5 crop_size: 2 mean_value: 1 }", TEST));
  Blob data;
  layer.setup({}, {&data});
  EXPECT_EQ(data.shape(), (std::vector<int>{2, 2, 2, 2}));
  layer.forward({}, {&data});
  // TEST crop is centred: rows 1..2, columns 1..2.
  for (int item = 0; item < 2; ++item)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 2; ++w) {
          const float expected = (pixel(item, (c * 4 + 1 + h) * 5 + 1 + w) - 1.0f) * 0.5f;
          EXPECT_EQ(data.cpu_data()[((item * 2 + c) * 2 + h) * 2 + w], expected);
        }
}

TEST(DataLayer, SameSeedGivesSameRandomCrops) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 7, DatumShape{1, 8, 8});
  const LayerParameter param =
      data_param(dir.file("db"), 5, "transform_param { crop_size: 5 mirror: true }");
  auto run = [&](std::uint64_t seed) {
    DataLayer layer(param);
    layer.seed(seed);
    Tops tops;
    layer.setup({}, tops.both());
    std::vector<float> seen;
    for (int i = 0; i < 4; ++i) {
      layer.forward({}, tops.both());
      seen.insert(seen.end(), tops.data.cpu_data(), tops.data.cpu_data() + tops.data.count());
    }
    return seen;
  };
  const std::vector<float> first = run(42);
  EXPECT_EQ(run(42), first);
  EXPECT_NE(run(43), first);
}

TEST(DataLayer, RandSkipStartsAtARandomRecord) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 50, DatumShape{1, 1, 2});
  std::vector<int> starts;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    DataLayer layer(data_param(dir.file("db"), 3, "data_param { rand_skip: 50 }"));
    layer.seed(seed);
    Tops tops;
    layer.setup({}, tops.both());
    layer.forward({}, tops.both());
    const int start = static_cast<int>(tops.label.cpu_data()[0]) - 100;
    ASSERT_GE(start, 0);
    ASSERT_LT(start, 50);
    expect_batch(tops, {start, (start + 1) % 50, (start + 2) % 50}, 2);
    starts.push_back(start);
  }
  EXPECT_TRUE(starts[0] != starts[1] || starts[1] != starts[2] || starts[2] != starts[3]);
}

TEST(DataLayer, MissingLmdbNamesLayerAndPath) {
  TempDir dir("data_layer");
  DataLayer layer(data_param(dir.file("absent_lmdb"), 2));
  Tops tops;
  const std::string message = error_of([&] { layer.setup({}, tops.both()); });
  EXPECT_NE(message.find("layer 'data' (Data)"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot open LMDB '" + dir.file("absent_lmdb") + "'"), std::string::npos)
      << message;
}

TEST(DataLayer, EmptyLmdbIsAnError) {
  TempDir dir("data_layer");
  LmdbDatabase::open_for_writing(dir.file("db"));
  DataLayer layer(data_param(dir.file("db"), 2));
  Tops tops;
  const std::string message = error_of([&] { layer.setup({}, tops.both()); });
  EXPECT_NE(message.find("LMDB '" + dir.file("db") + "' is empty (0 records)"), std::string::npos)
      << message;
}

TEST(DataLayer, LevelDbBackendIsRejected) {
  TempDir dir("data_layer");
  LayerParameter param = data_param(dir.file("db"), 2);
  param.mutable_data_param()->clear_backend();  // Caffe's default: LEVELDB
  DataLayer layer(param);
  Tops tops;
  const std::string message = error_of([&] { layer.setup({}, tops.both()); });
  EXPECT_NE(message.find("LevelDB is not supported; convert the DB to LMDB"), std::string::npos)
      << message;
}

TEST(DataLayer, MeanFileOfWrongShapeFailsAtSetup) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 2, DatumShape{1, 2, 3});
  BlobProto mean;
  mean.set_num(1);
  mean.set_channels(3);
  mean.set_height(2);
  mean.set_width(3);
  for (int i = 0; i < 18; ++i) mean.add_data(0);
  write_proto_to_binary_file(mean, dir.file("mean.binaryproto"));
  DataLayer layer(data_param(
      dir.file("db"), 2, "transform_param { mean_file: '" + dir.file("mean.binaryproto") + "' }"));
  Tops tops;
  const std::string message = error_of([&] { layer.setup({}, tops.both()); });
  EXPECT_NE(message.find("mean file '" + dir.file("mean.binaryproto") + "' has shape (1, 3, 2, 3)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("1x2x3"), std::string::npos) << message;
}

// Records 0..3 are good; record 4 has another shape. The batches before it
// arrive; the forward that needs it throws, and so does every later one.
TEST(DataLayer, RecordOfOtherShapeFailsTheForwardThatReadsIt) {
  TempDir dir("data_layer");
  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("db")));
    for (int i = 0; i < 4; ++i)
      writer.put(key_of(i), record_datum(i, {1, 2, 2}).SerializeAsString());
    writer.put(key_of(4), record_datum(4, {3, 4, 4}).SerializeAsString());
    writer.commit();
  }
  DataLayer layer(data_param(dir.file("db"), 2));
  Tops tops;
  layer.setup({}, tops.both());
  layer.forward({}, tops.both());
  expect_batch(tops, {0, 1}, 4);
  layer.forward({}, tops.both());
  expect_batch(tops, {2, 3}, 4);
  const std::string message = error_of([&] { layer.forward({}, tops.both()); });
  EXPECT_NE(message.find("layer 'data' (Data): record '00000004' of LMDB '" + dir.file("db") +
                         "' has shape 3x4x4, but the first record has 1x2x2"),
            std::string::npos)
      << message;
  EXPECT_EQ(error_of([&] { layer.forward({}, tops.both()); }), message);
}

TEST(DataLayer, CorruptAndEncodedRecordsAreErrors) {
  TempDir dir("data_layer");
  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("db")));
    writer.put(key_of(0), record_datum(0, {1, 2, 2}).SerializeAsString());
    writer.put(key_of(1), std::string("\xff\xff\xff\xff garbage", 12));
    writer.commit();
  }
  DataLayer layer(data_param(dir.file("db"), 2));
  Tops tops;
  layer.setup({}, tops.both());
  std::string message = error_of([&] { layer.forward({}, tops.both()); });
  EXPECT_NE(message.find("record '00000001' of LMDB '" + dir.file("db") + "' is not a valid Datum"),
            std::string::npos)
      << message;

  {
    Datum encoded = record_datum(0, {3, 2, 2});
    encoded.set_encoded(true);
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("encoded")));
    writer.put(key_of(0), encoded.SerializeAsString());
    writer.commit();
  }
  DataLayer encoded_layer(data_param(dir.file("encoded"), 1));
  message = error_of([&] { encoded_layer.setup({}, tops.both()); });
  EXPECT_NE(message.find("encoded Datum in record '00000000'"), std::string::npos) << message;
  EXPECT_NE(message.find("not supported until the image pipeline lands"), std::string::npos)
      << message;
}

// After one forward the thread refills the free buffer and blocks on an empty
// free queue (every batch is full); the destructor must still return at once.
TEST(DataLayer, DestructorDoesNotHangOnAFullQueue) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 5, DatumShape{1, 2, 2});
  const auto start = std::chrono::steady_clock::now();
  for (int prefetch : {1, 2, 4}) {
    auto layer = std::make_unique<DataLayer>(
        data_param(dir.file("db"), 2, "data_param { prefetch: " + std::to_string(prefetch) + " }"));
    Tops tops;
    layer->setup({}, tops.both());
    layer->forward({}, tops.both());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the queue fill
    layer.reset();
  }
  {
    DataLayer never_forwarded(data_param(dir.file("db"), 2));  // thread never started
    Tops tops;
    never_forwarded.setup({}, tops.both());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// LeNet reads 64 images of 28x28 per iteration; the thread must stay far
// ahead of a ~10 ms iteration.
TEST(DataLayer, PrefetchKeepsUpWithLeNet) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 1000, DatumShape{1, 28, 28});
  DataLayer layer(data_param(dir.file("db"), 64, "transform_param { scale: 0.00390625 }"));
  Tops tops;
  layer.setup({}, tops.both());
  layer.forward({}, tops.both());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) layer.forward({}, tops.both());
  const double ms_per_batch =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      100;
  EXPECT_LT(ms_per_batch, 5.0);
  // The last forward got batch 100 (counting from 0): records from 100 * 64 mod 1000.
  EXPECT_EQ(tops.label.cpu_data()[0], 100.0f + (100 * 64) % 1000);
}

}  // namespace
}  // namespace xtrain
