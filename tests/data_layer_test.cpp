// Data layer: exact batches from a hand-written LMDB (with wrap-around), the
// transformer inside the layer, encoded records, decode threads, sharding,
// prefetch depth, the data wait, the pipeline's errors and shutdown; NVIDIA
// Caffe's data_param cache, shuffle, precache and threads, and its random
// resize inside the layer.
#include "data/data_layer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "data/record_cache.hpp"
#include "data_layer_fixture.hpp"
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
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

using namespace data_layer_fixture;

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

// prefetch: 100000 allocated batch after batch until the machine ran out of
// memory; a prefetch whose batches pass half of it is refused at setup.
TEST(DataLayer, APrefetchPastHalfTheMachinesMemoryIsRefused) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 3, DatumShape{1, 2, 3});
  LayerParameter param = data_param(dir.file("db"), 2);
  param.mutable_data_param()->set_prefetch(4000000000u);
  auto layer = LayerRegistry::global().create(param);
  Tops tops;
  expect_error([&] { layer->setup({}, tops.both()); },
               {"layer 'data' (Data): data_param.prefetch: 4000000000 holds 4000000001 batches",
                "more than half of this machine's", "lower prefetch"});
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

  // Encoded records whose bytes are not an image: the first at setup, a
  // later one at the forward that reads it.
  {
    Datum encoded = record_datum(0, {3, 2, 2});
    encoded.set_encoded(true);
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("encoded")));
    writer.put(key_of(0), encoded.SerializeAsString());
    writer.commit();
  }
  DataLayer encoded_layer(data_param(dir.file("encoded"), 1));
  message = error_of([&] { encoded_layer.setup({}, tops.both()); });
  EXPECT_NE(message.find("layer 'data' (Data): record '00000000' of LMDB '" + dir.file("encoded") +
                         "': the encoded image (12 bytes) is not an image xtrain decodes"),
            std::string::npos)
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

// ---------------------------------------------------------------------------
// Encoded records
// ---------------------------------------------------------------------------

std::vector<float> batch_item(const Tops& tops, int item) {
  const std::size_t size = tops.data.count(1);
  const float* data = tops.data.cpu_data() + static_cast<std::size_t>(item) * size;
  return std::vector<float>(data, data + size);
}

// Record i: a PNG of pattern_mat(3, 6, 5, i), label 10 + i.
TEST(DataLayer, EncodedRecordsDecodeToExactPixels) {
  TempDir dir("data_layer");
  testing::write_encoded_lmdb(
      dir.file("db"), 5, [](int i) { return encode_mat(pattern_mat(3, 6, 5, i), ".png"); },
      [](int i) { return 10 + i; });
  DataLayer layer(data_param(dir.file("db"), 2));
  Tops tops;
  layer.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{2, 3, 6, 5}));
  for (int n = 0; n < 4; ++n) {
    layer.forward({}, tops.both());
    for (int item = 0; item < 2; ++item) {
      const int record = (n * 2 + item) % 5;
      EXPECT_EQ(tops.label.cpu_data()[item], 10.0f + record);
      EXPECT_EQ(batch_item(tops, item), planar_floats(pattern_mat(3, 6, 5, record)))
          << "batch " << n << " item " << item;
    }
  }
}

TEST(DataLayer, EncodedRecordsHonourForceGrayAndForceColor) {
  TempDir dir("data_layer");
  const auto color_png = [](int i) { return encode_mat(pattern_mat(3, 4, 6, i), ".png"); };
  const auto gray_png = [](int i) { return encode_mat(pattern_mat(1, 4, 6, i), ".png"); };
  testing::write_encoded_lmdb(dir.file("color"), 3, color_png, [](int i) { return i; });
  testing::write_encoded_lmdb(dir.file("gray"), 3, gray_png, [](int i) { return i; });

  DataLayer to_gray(data_param(dir.file("color"), 3, "transform_param { force_gray: true }", TEST));
  Tops tops;
  to_gray.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{3, 1, 4, 6}));
  to_gray.forward({}, tops.both());
  for (int item = 0; item < 3; ++item) {
    EXPECT_EQ(batch_item(tops, item),
              planar_floats(decode_bytes(color_png(item), cv::IMREAD_GRAYSCALE)));
  }

  DataLayer to_color(
      data_param(dir.file("gray"), 3, "transform_param { force_color: true }", TEST));
  to_color.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{3, 3, 4, 6}));
  to_color.forward({}, tops.both());
  for (int item = 0; item < 3; ++item) {
    const std::vector<float> gray = planar_floats(pattern_mat(1, 4, 6, item));
    std::vector<float> replicated;
    for (int c = 0; c < 3; ++c) replicated.insert(replicated.end(), gray.begin(), gray.end());
    EXPECT_EQ(batch_item(tops, item), replicated);
  }

  DataLayer as_stored(data_param(dir.file("gray"), 3, "", TEST));
  as_stored.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{3, 1, 4, 6}));
}

// With a crop (and no mean file), images of other sizes are cropped where
// they are, as in Caffe; without one they are an error naming the record.
TEST(DataLayer, EncodedImagesOfOtherSizesNeedACrop) {
  TempDir dir("data_layer");
  const auto size_of = [](int i) { return i % 2 == 0 ? cv::Size(8, 7) : cv::Size(11, 9); };
  const auto png = [&](int i) {
    return encode_mat(pattern_mat(3, size_of(i).height, size_of(i).width, i), ".png");
  };
  testing::write_encoded_lmdb(dir.file("db"), 4, png, [](int i) { return i; });

  DataLayer cropped(data_param(dir.file("db"), 4, "transform_param { crop_size: 5 }", TEST));
  Tops tops;
  cropped.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{4, 3, 5, 5}));
  cropped.forward({}, tops.both());
  for (int item = 0; item < 4; ++item) {
    const cv::Size size = size_of(item);
    const cv::Mat image = pattern_mat(3, size.height, size.width, item);
    const cv::Rect centre((size.width - 5) / 2, (size.height - 5) / 2, 5, 5);
    EXPECT_EQ(batch_item(tops, item), planar_floats(image(centre).clone())) << item;
  }

  DataLayer uncropped(data_param(dir.file("db"), 4));
  uncropped.setup({}, tops.both());
  const std::string message = error_of([&] { uncropped.forward({}, tops.both()); });
  EXPECT_NE(message.find("record '00000001' of LMDB '" + dir.file("db") +
                         "' has shape 3x9x11, but the first record has 3x7x8"),
            std::string::npos)
      << message;
}

// ---------------------------------------------------------------------------
// Decode threads, sharding, prefetch depth
// ---------------------------------------------------------------------------

struct BatchRun {
  std::vector<float> data;
  std::vector<float> labels;
};

BatchRun run_batches(const LayerParameter& param, std::uint64_t seed, int batches) {
  DataLayer layer(param);
  layer.seed(seed);
  Tops tops;
  layer.setup({}, tops.both());
  BatchRun run;
  for (int i = 0; i < batches; ++i) {
    layer.forward({}, tops.both());
    run.data.insert(run.data.end(), tops.data.cpu_data(), tops.data.cpu_data() + tops.data.count());
    run.labels.insert(run.labels.end(), tops.label.cpu_data(),
                      tops.label.cpu_data() + tops.label.count());
  }
  return run;
}

// JPEG records, random crops and mirrors at TRAIN: the same batches whatever
// the number of decode threads and the prefetch depth.
TEST(DataLayer, DecodeThreadsDoNotChangeTheBatches) {
  TempDir dir("data_layer");
  testing::write_encoded_lmdb(
      dir.file("db"), 23, [](int i) { return encode_mat(pattern_mat(3, 12, 14, 7 * i), ".jpg"); },
      [](int i) { return i; });
  const auto param = [&](int threads, int prefetch) {
    return data_param(dir.file("db"), 4,
                      "transform_param { crop_size: 9 mirror: true mean_value: 100 scale: 0.5 } "
                      "data_param { decode_threads: " +
                          std::to_string(threads) + " prefetch: " + std::to_string(prefetch) +
                          " }");
  };
  const BatchRun one = run_batches(param(1, 1), 77, 9);  // 36 records: wraps past 23
  for (int i = 0; i < 36; ++i) EXPECT_EQ(one.labels[i], static_cast<float>(i % 23));
  for (const auto& [threads, prefetch] : std::vector<std::pair<int, int>>{{2, 4}, {3, 2}, {4, 1}}) {
    const BatchRun many = run_batches(param(threads, prefetch), 77, 9);
    EXPECT_EQ(many.labels, one.labels) << threads << " threads";
    EXPECT_TRUE(many.data == one.data) << threads << " threads, prefetch " << prefetch;
  }
  // The augmentation is random all the same: another seed, other crops.
  EXPECT_FALSE(run_batches(param(2, 4), 78, 9).data == one.data);
  // Record 0 appears at items 0 and 23: with its own stream each time.
  const std::size_t image = 3 * 9 * 9;
  EXPECT_FALSE(
      std::equal(one.data.begin(), one.data.begin() + image, one.data.begin() + 23 * image));
}

std::vector<int> labels_read(DataLayer& layer, int batches) {
  Tops tops;
  layer.setup({}, tops.both());
  std::vector<int> labels;
  for (int i = 0; i < batches; ++i) {
    layer.forward({}, tops.both());
    for (std::size_t item = 0; item < tops.label.count(); ++item)
      labels.push_back(static_cast<int>(tops.label.cpu_data()[item]) - 100);
  }
  return labels;
}

// Shard r of W with batch B reads, for its batch k, records
// k * W * B + r * B + i (mod N): the shards' batches k, put together, are
// the records of the unsharded batch k of W * B.
TEST(DataLayer, ShardsReadSlicesOfTheGlobalBatches) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 1, 2});
  for (int world : {2, 3}) {
    for (int rank = 0; rank < world; ++rank) {
      DataLayer layer(data_param(dir.file("db"), 2));
      layer.set_data_shard(DataShard{rank, world});
      const std::vector<int> labels = labels_read(layer, 6);
      for (std::size_t n = 0; n < labels.size(); ++n) {
        const int k = static_cast<int>(n) / 2;
        const int i = static_cast<int>(n) % 2;
        ASSERT_EQ(labels[n], (k * world * 2 + rank * 2 + i) % 10)
            << "rank " << rank << " of " << world << ", item " << n;
      }
    }
  }

  DataLayer layer(data_param(dir.file("db"), 2));
  layer.set_data_shard(DataShard{2, 2});
  Tops tops;
  layer.setup({}, tops.both());
  expect_error([&] { layer.forward({}, tops.both()); }, {"data shard 2 of 2"});
}

TEST(DataLayer, NetOptionsShardTheDataLayers) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 1, 2});
  NetParameter net_param;
  *net_param.add_layer() = data_param(dir.file("db"), 3);
  net_param.mutable_state()->set_phase(TRAIN);
  NetOptions options;
  options.data_shard = DataShard{1, 2};
  Net net(net_param, options);
  const Blob* label = net.blob_by_name("label").get();
  net.forward();
  EXPECT_EQ(std::vector<float>(label->cpu_data(), label->cpu_data() + 3),
            (std::vector<float>{103, 104, 105}));
  net.forward();  // records 6..11 form global batch 1: this shard's half is 9, 0, 1
  EXPECT_EQ(std::vector<float>(label->cpu_data(), label->cpu_data() + 3),
            (std::vector<float>{109, 100, 101}));
}

// prefetch: P means P batches loaded ahead of the one the net uses, no more.
TEST(DataLayer, PrefetchLoadsAheadPrefetchBatches) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 2, 2});
  for (unsigned prefetch : {1u, 2u, 5u}) {
    DataLayer layer(
        data_param(dir.file("db"), 3, "data_param { prefetch: " + std::to_string(prefetch) + " }"));
    Tops tops;
    layer.setup({}, tops.both());
    EXPECT_EQ(layer.batches_read(), 0u);  // nothing is read before the first forward
    layer.forward({}, tops.both());
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (layer.batches_read() < prefetch + 1 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(layer.batches_read(), prefetch + 1) << "prefetch " << prefetch;
    layer.forward({}, tops.both());  // frees one buffer: one more batch is read
    const auto next_deadline = Clock::now() + std::chrono::seconds(10);
    while (layer.batches_read() < prefetch + 2 && Clock::now() < next_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(layer.batches_read(), prefetch + 2) << "prefetch " << prefetch;
    expect_batch(tops, {3, 4, 5}, 4);
  }
}

// ---- NVIDIA Caffe's data_param cache / shuffle / precache / threads ----------

std::vector<int> labels_with(const std::string& db, int batch_size, const std::string& extra,
                             int batches, std::uint64_t seed = 5, Phase phase = TRAIN) {
  DataLayer layer(data_param(db, batch_size, extra, phase));
  layer.seed(seed);
  return labels_read(layer, batches);
}

// Epoch 0 in key order (as it is read into the cache), then every epoch a
// new order of all the records; a seed gives the same orders.
TEST(DataLayer, CacheShufflesEveryEpochAfterTheFirst) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 1, 2});
  const std::string cached = "data_param { cache: true shuffle: true }";
  const std::vector<int> labels = labels_with(dir.file("db"), 5, cached, 8);  // 4 epochs
  std::vector<int> key_order(10);
  for (int i = 0; i < 10; ++i) key_order[i] = i;
  EXPECT_EQ(std::vector<int>(labels.begin(), labels.begin() + 10), key_order);
  std::set<std::vector<int>> orders;
  for (int epoch = 1; epoch < 4; ++epoch) {
    std::vector<int> order(labels.begin() + epoch * 10, labels.begin() + (epoch + 1) * 10);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, key_order) << "epoch " << epoch << " visits every record once";
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 3u) << "each epoch has its own order";
  EXPECT_EQ(labels_with(dir.file("db"), 5, cached, 8), labels);
  EXPECT_NE(labels_with(dir.file("db"), 5, cached, 8, 6), labels);
  // Batches that cross the epochs' ends read the same sequence.
  const std::vector<int> threes = labels_with(dir.file("db"), 3, cached, 13);
  EXPECT_EQ(threes, std::vector<int>(labels.begin(), labels.begin() + 39));
  // precache reads them all first: the same records in the same order.
  EXPECT_EQ(labels_with(dir.file("db"), 5, "data_param { precache: true shuffle: true }", 8),
            labels);
  // The images come with their labels, from the cache as from the LMDB.
  DataLayer layer(data_param(dir.file("db"), 5, cached));
  layer.seed(5);
  Tops tops;
  layer.setup({}, tops.both());
  for (int batch = 0; batch < 6; ++batch) {
    layer.forward({}, tops.both());
    std::vector<int> records;
    for (int item = 0; item < 5; ++item) records.push_back(labels[batch * 5 + item]);
    expect_batch(tops, records, 2);
  }
}

// Without shuffle the cache changes nothing; shuffle without cache, and
// both in the TEST phase, have no effect (as in NVIDIA Caffe).
TEST(DataLayer, CacheWithoutShuffleAndShuffleWithoutCacheKeepKeyOrder) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 1, 2});
  const std::vector<int> plain = labels_with(dir.file("db"), 4, "", 9);
  for (int n = 0; n < 36; ++n) ASSERT_EQ(plain[n], n % 10);
  EXPECT_EQ(labels_with(dir.file("db"), 4, "data_param { cache: true }", 9), plain);
  EXPECT_EQ(labels_with(dir.file("db"), 4, "data_param { precache: true }", 9), plain);
  EXPECT_EQ(labels_with(dir.file("db"), 4, "data_param { shuffle: true }", 9), plain);
  EXPECT_EQ(labels_with(dir.file("db"), 4, "data_param { cache: true shuffle: true }", 9, 5, TEST),
            plain);
  // With rand_skip the cached order starts later, as the uncached one does.
  const std::string skip = "data_param { rand_skip: 7 ";
  EXPECT_EQ(labels_with(dir.file("db"), 4, skip + "cache: true }", 9),
            labels_with(dir.file("db"), 4, skip + "}", 9));
}

// Shard r of W reads its slices of the same global order, shuffled epochs
// included: the shards' batches put together are the unsharded batches.
TEST(DataLayer, CachedShardsReadSlicesOfTheShuffledOrder) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 1, 2});
  const std::string cached = "data_param { cache: true shuffle: true rand_skip: 4 }";
  const std::vector<int> whole = labels_with(dir.file("db"), 6, cached, 8);
  for (int rank = 0; rank < 3; ++rank) {
    DataLayer layer(data_param(dir.file("db"), 2, cached));
    layer.seed(5);
    layer.set_data_shard(DataShard{rank, 3});
    const std::vector<int> labels = labels_read(layer, 8);
    for (std::size_t n = 0; n < labels.size(); ++n) {
      const std::size_t k = n / 2;
      ASSERT_EQ(labels[n], whole[k * 6 + static_cast<std::size_t>(rank) * 2 + n % 2])
          << "rank " << rank << ", item " << n;
    }
  }
}

// Stopped after k batches and restored into a fresh layer: the same next
// batches, within the first epoch and in shuffled ones.
TEST(DataLayer, CachedShuffledLayerResumesExactly) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 1, 2});
  const LayerParameter param =
      data_param(dir.file("db"), 3, "data_param { cache: true shuffle: true rand_skip: 3 }");
  const auto straight = [&] {
    DataLayer layer(param);
    layer.seed(8);
    return labels_read(layer, 14);
  }();
  for (int stop : {1, 3, 6, 9}) {
    DataLayer stopped(param);
    stopped.seed(8);
    labels_read(stopped, stop);
    LayerResumeState state;
    stopped.save_resume_state(&state);
    EXPECT_EQ(state.records_consumed(), 3u * stop);
    DataLayer resumed(param);
    resumed.seed(99);  // the restored stream must win
    Tops tops;
    resumed.setup({}, tops.both());
    resumed.restore_resume_state(state);
    for (int batch = stop; batch < 14; ++batch) {
      resumed.forward({}, tops.both());
      for (int item = 0; item < 3; ++item) {
        ASSERT_EQ(static_cast<int>(tops.label.cpu_data()[item]) - 100, straight[batch * 3 + item])
            << "stopped after " << stop << ", batch " << batch;
      }
    }
  }
}

// Any epoch's order can be had directly (resume jumps there), and a seed
// gives the same orders.
TEST(RecordCache, EpochOrdersArePermutationsOfTheirOwn) {
  RecordCache cache(20, true);
  cache.set_shuffle_seed(77);
  for (int i = 0; i < 20; ++i) cache.add(key_of(i), "value " + std::to_string(i));
  RecordCache again(20, true);
  again.set_shuffle_seed(77);
  for (int i = 0; i < 20; ++i) again.add(key_of(i), "value " + std::to_string(i));
  std::vector<std::size_t> epoch5;
  for (std::size_t p = 0; p < 20; ++p) epoch5.push_back(again.record_at(5, p));
  for (std::uint64_t epoch = 0; epoch < 6; ++epoch) {
    std::vector<std::size_t> order;
    for (std::size_t p = 0; p < 20; ++p) order.push_back(cache.record_at(epoch, p));
    std::vector<std::size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t p = 0; p < 20; ++p) ASSERT_EQ(sorted[p], p);
    if (epoch == 0) {
      EXPECT_EQ(order, sorted);  // key order
    }
    if (epoch == 5) {
      EXPECT_EQ(order, epoch5);
    }
  }
  EXPECT_EQ(cache.value(cache.record_at(3, 0)).substr(0, 6), "value ");
  RecordCache unshuffled(4, false);
  for (int i = 0; i < 4; ++i) unshuffled.add(key_of(i), "");
  EXPECT_EQ(unshuffled.record_at(9, 2), 2u);
}

// A cache is refused when it would fill more than half of the machine's
// memory, as a prefetch that large is.
TEST(RecordCache, ACachePastHalfTheMachinesMemoryIsRefused) {
  EXPECT_GT(estimated_cache_bytes(1000, 4096000), 4096000.0);
  check_cache_fits("layer 'data' (Data)", "/data/train_lmdb", 1000, 4e9, 16e9);
  check_cache_fits("layer 'data' (Data)", "/data/train_lmdb", 1000, 4e9, 0);  // unknown machine
  expect_error(
      [] { check_cache_fits("layer 'data' (Data)", "/data/train_lmdb", 1281167, 140e9, 128e9); },
      {"layer 'data' (Data): data_param.cache would keep the 1281167 records of LMDB "
       "'/data/train_lmdb' in memory, about 140 GB, more than half of this machine's 128 GB",
       "remove cache"});
}

// NVIDIA Caffe's threads: the decoding threads unless decode_threads says.
TEST(DataLayer, ThreadsSetTheDecodeThreadsUnlessDecodeThreadsDoes) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 4, DatumShape{1, 1, 2});
  for (const auto& [extra, threads] : std::vector<std::pair<std::string, int>>{
           {"data_param { threads: 3 parser_threads: 2 }", 3},
           {"data_param { threads: 3 decode_threads: 2 }", 2}}) {
    DataLayer layer(data_param(dir.file("db"), 2, extra));
    Tops tops;
    layer.setup({}, tops.both());
    EXPECT_EQ(layer.decode_threads(), threads) << extra;
  }
}

// NVIDIA Caffe's random resize inside the layer: records of different sizes
// (shorter side 12 to 20) resized to 10..14 and cropped to 8; too small a
// record fails the forward that reads it, naming it.
TEST(DataLayer, RandomResizeTakesRecordsOfAnySize) {
  TempDir dir("data_layer");
  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("db")));
    for (int i = 0; i < 6; ++i) {
      const DatumShape shape{3, 12 + i, 20 - i};
      writer.put(key_of(i), record_datum(i, shape).SerializeAsString());
    }
    const DatumShape small{3, 6, 20};
    writer.put(key_of(6), record_datum(6, small).SerializeAsString());
    writer.commit();
  }
  const std::string transform =
      "transform_param { crop_size: 8 mirror: true img_rand_resize_lower: 10 "
      "img_rand_resize_upper: 14 vertical_stretch_lower: 0.9 vertical_stretch_upper: 1.1 "
      "interpolation_algo_down: INTER_AREA }";
  DataLayer layer(data_param(dir.file("db"), 3, transform));
  Tops tops;
  layer.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{3, 3, 8, 8}));
  layer.forward({}, tops.both());
  layer.forward({}, tops.both());
  expect_error(
      [&] { layer.forward({}, tops.both()); },
      {"layer 'data' (Data)", "has shape 3x6x20", "at least crop_size", "allow_upscale: true"});
  // With allow_upscale the small record is enlarged.
  DataLayer upscaling(data_param(dir.file("db"), 7,
                                 "transform_param { crop_size: 8 img_rand_resize_lower: 10 "
                                 "img_rand_resize_upper: 14 allow_upscale: true }"));
  upscaling.setup({}, tops.both());
  upscaling.forward({}, tops.both());
  EXPECT_EQ(tops.label.cpu_data()[6], 106.0f);
}

}  // namespace
}  // namespace xtrain
