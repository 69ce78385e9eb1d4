// Data-parallel sharding (DataShard): replica `index` of `count` with batch
// B computes items [index * B, (index + 1) * B) of every global batch of
// count * B. For the data layers (Data, ImageData) and Dropout, the shards'
// outputs put together by index must equal, bit for bit, the output of the
// unsharded layer with batch count * B and the same seed, including the
// random augmentation, rand_skip, shuffling and the Dropout masks; and a
// sharded Data layer must resume exactly.
#include <gtest/gtest.h>

#include <memory>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "lmdb_fixture.hpp"
#include "pattern_images.hpp"
#include "tool_runner.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

constexpr std::uint64_t kSeed = 4242;

// One batch's tops, copied out of the layer.
struct Batch {
  std::vector<float> data;
  std::vector<float> label;
};

LayerParameter layer_param(const std::string& text) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  param.set_phase(TRAIN);
  return param;
}

std::unique_ptr<Layer> make_data_layer(const std::string& text, DataShard shard) {
  std::unique_ptr<Layer> layer = testing::create_layer(layer_param(text));
  layer->set_data_shard(shard);
  layer->seed(kSeed);
  return layer;
}

std::vector<Batch> read_batches(Layer& layer, int batches, bool setup = true) {
  Blob data;
  Blob label;
  if (setup) layer.setup({}, {&data, &label});
  std::vector<Batch> out;
  for (int k = 0; k < batches; ++k) {
    layer.forward({}, {&data, &label});
    out.push_back({std::vector<float>(data.cpu_data(), data.cpu_data() + data.count()),
                   std::vector<float>(label.cpu_data(), label.cpu_data() + label.count())});
  }
  return out;
}

// The shards' batches k, concatenated by index.
std::vector<Batch> concatenate(const std::vector<std::vector<Batch>>& shards) {
  std::vector<Batch> joined(shards.front().size());
  for (std::size_t k = 0; k < joined.size(); ++k) {
    for (const std::vector<Batch>& shard : shards) {
      joined[k].data.insert(joined[k].data.end(), shard[k].data.begin(), shard[k].data.end());
      joined[k].label.insert(joined[k].label.end(), shard[k].label.begin(), shard[k].label.end());
    }
  }
  return joined;
}

// `make(batch_size, shard)` builds a data layer; the count shards of batch B
// must read what one layer of batch count * B reads.
template <typename MakeLayer>
void expect_shards_compose(MakeLayer make, int batch_size, int count, int batches) {
  auto whole = make(count * batch_size, DataShard{});
  const std::vector<Batch> expected = read_batches(*whole, batches);
  std::vector<std::vector<Batch>> shards;
  for (int index = 0; index < count; ++index) {
    auto shard = make(batch_size, DataShard{index, count});
    shards.push_back(read_batches(*shard, batches));
  }
  const std::vector<Batch> joined = concatenate(shards);
  for (int k = 0; k < batches; ++k) {
    EXPECT_EQ(joined[k].label, expected[k].label) << count << " shards, batch " << k;
    EXPECT_TRUE(joined[k].data == expected[k].data) << count << " shards, batch " << k;
  }
}

// 17 records of 3 x 6 x 7 (a prime count, so batches wrap mid-way).
std::string write_lmdb(const TempDir& dir) {
  std::vector<testing::FixtureImage> images;
  for (int i = 0; i < 17; ++i) {
    testing::FixtureImage image;
    image.label = 100 + i;
    for (int v = 0; v < 3 * 6 * 7; ++v)
      image.pixels.push_back(static_cast<unsigned char>(v * 7 + i * 13));
    images.push_back(image);
  }
  const std::string path = dir.file("db");
  testing::write_datum_lmdb(path, 3, 6, 7, images);
  return path;
}

std::string data_layer_text(const std::string& db, int batch_size) {
  return "name: 'data' type: 'Data' top: 'data' top: 'label' "
         "data_param { source: '" +
         db + "' backend: LMDB rand_skip: 9 decode_threads: 2 batch_size: " +
         std::to_string(batch_size) + " } transform_param { crop_size: 4 mirror: true scale: 0.5 }";
}

TEST(DataShard, DataLayerShardsComposeIntoTheUnshardedBatch) {
  TempDir dir("data_shard");
  const std::string db = write_lmdb(dir);
  auto make = [&](int batch_size, DataShard shard) {
    return make_data_layer(data_layer_text(db, batch_size), shard);
  };
  expect_shards_compose(make, 2, 2, 3);
  expect_shards_compose(make, 2, 3, 3);
  expect_shards_compose(make, 3, 2, 4);
}

TEST(DataShard, ImageDataShardsComposeIntoTheUnshardedBatch) {
  TempDir dir("data_shard");
  std::string list;
  for (int i = 0; i < 7; ++i) {
    const std::string name = "img" + std::to_string(i) + ".png";
    dir.write("images/" + name, "");
    cv::imwrite(dir.file("images/" + name), testing::pattern_mat(3, 6, 5, 10 * i));
    list += name + " " + std::to_string(20 + i) + "\n";
  }
  dir.write("list.txt", list);
  for (const std::string order : {"shuffle: true", "rand_skip: 5", "shuffle: true rand_skip: 4"}) {
    SCOPED_TRACE(order);
    auto make = [&](int batch_size, DataShard shard) {
      return make_data_layer(
          "name: 'data' type: 'ImageData' top: 'data' top: 'label' image_data_param { source: '" +
              dir.file("list.txt") + "' root_folder: '" + dir.file("images") +
              "/' batch_size: " + std::to_string(batch_size) + " " + order +
              " } transform_param { crop_size: 3 mirror: true }",
          shard);
    };
    expect_shards_compose(make, 2, 2, 3);
    expect_shards_compose(make, 2, 3, 3);
  }
}

// Stop a shard after k batches, restore its state into a fresh layer: the
// same next batches. The state counts global records, so it also restores
// an unsharded layer of batch count * B to the same global batch.
TEST(DataShard, ShardedDataLayerResumesExactly) {
  TempDir dir("data_shard");
  const std::string db = write_lmdb(dir);
  const int batch_size = 2;
  const int count = 2;
  std::vector<std::vector<Batch>> straight;
  std::vector<LayerResumeState> states(count);
  for (int index = 0; index < count; ++index) {
    auto layer = make_data_layer(data_layer_text(db, batch_size), DataShard{index, count});
    straight.push_back(read_batches(*layer, 5));
    auto stopped = make_data_layer(data_layer_text(db, batch_size), DataShard{index, count});
    read_batches(*stopped, 3);
    stopped->save_resume_state(&states[index]);
    EXPECT_EQ(states[index].records_consumed(), 3u * count * batch_size);

    auto resumed = make_data_layer(data_layer_text(db, batch_size), DataShard{index, count});
    resumed->seed(1);  // the restored stream must win
    Blob data;
    Blob label;
    resumed->setup({}, {&data, &label});
    resumed->restore_resume_state(states[index]);
    const std::vector<Batch> next = read_batches(*resumed, 2, /*setup=*/false);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(next[k].label, straight[index][3 + k].label)
          << "shard " << index << ", batch " << k;
      EXPECT_TRUE(next[k].data == straight[index][3 + k].data) << "shard " << index;
    }
  }
  EXPECT_EQ(states[0].SerializeAsString(), states[1].SerializeAsString());

  auto whole = make_data_layer(data_layer_text(db, count * batch_size), DataShard{});
  Blob data;
  Blob label;
  whole->setup({}, {&data, &label});
  whole->restore_resume_state(states[0]);
  const std::vector<Batch> next = read_batches(*whole, 2, /*setup=*/false);
  const std::vector<Batch> joined = concatenate(straight);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(next[k].label, joined[3 + k].label) << k;
    EXPECT_TRUE(next[k].data == joined[3 + k].data) << k;
  }
}

// Dropout: the shards' tops and bottom diffs are the halves of the unsharded
// batch's, forward after forward.
struct DropoutRun {
  std::vector<float> top;
  std::vector<float> bottom_diff;
};

std::vector<DropoutRun> run_dropout(const Blob& input, const Blob& top_diff, int first_item,
                                    int items, DataShard shard, int iterations) {
  std::unique_ptr<Layer> layer = testing::create_layer(
      layer_param("name: 'drop' type: 'Dropout' dropout_param { dropout_ratio: 0.35 }"));
  layer->set_data_shard(shard);
  layer->seed(kSeed);
  const int per_item = input.count(1);
  std::vector<int> shape = input.shape();
  shape[0] = items;
  Blob bottom(shape);
  Blob top;
  layer->setup({&bottom}, {&top});
  std::vector<DropoutRun> runs;
  for (int it = 0; it < iterations; ++it) {
    std::copy_n(input.cpu_data() + first_item * per_item, items * per_item,
                bottom.mutable_cpu_data());
    layer->forward({&bottom}, {&top});
    std::copy_n(top_diff.cpu_data() + first_item * per_item, items * per_item,
                top.mutable_cpu_diff());
    layer->backward({&top}, {true}, {&bottom});
    runs.push_back({std::vector<float>(top.cpu_data(), top.cpu_data() + top.count()),
                    std::vector<float>(bottom.cpu_diff(), bottom.cpu_diff() + bottom.count())});
  }
  return runs;
}

TEST(DataShard, DropoutShardsComposeIntoTheUnshardedBatch) {
  for (const std::vector<int>& local_shape :
       {std::vector<int>{3, 5, 2, 3}, std::vector<int>{1, 7}, std::vector<int>{4, 33}}) {
    for (int count : {2, 3}) {
      std::vector<int> shape = local_shape;
      const int batch = shape[0];
      shape[0] = count * batch;
      Blob input(shape);
      Blob top_diff(shape);
      RandomStream random(7);
      random.uniform(input.count(), 0.5f, 2.0f, input.mutable_cpu_data());
      random.uniform(top_diff.count(), -1.0f, 1.0f, top_diff.mutable_cpu_diff());
      std::copy_n(top_diff.cpu_diff(), top_diff.count(), top_diff.mutable_cpu_data());
      const int iterations = 3;
      const std::vector<DropoutRun> whole =
          run_dropout(input, top_diff, 0, count * batch, DataShard{}, iterations);
      std::vector<DropoutRun> joined(iterations);
      for (int index = 0; index < count; ++index) {
        const std::vector<DropoutRun> shard =
            run_dropout(input, top_diff, index * batch, batch, DataShard{index, count}, iterations);
        for (int it = 0; it < iterations; ++it) {
          joined[it].top.insert(joined[it].top.end(), shard[it].top.begin(), shard[it].top.end());
          joined[it].bottom_diff.insert(joined[it].bottom_diff.end(), shard[it].bottom_diff.begin(),
                                        shard[it].bottom_diff.end());
        }
      }
      for (int it = 0; it < iterations; ++it) {
        EXPECT_TRUE(joined[it].top == whole[it].top) << count << " shards, iteration " << it;
        EXPECT_TRUE(joined[it].bottom_diff == whole[it].bottom_diff)
            << count << " shards, iteration " << it;
      }
      // A new mask each forward: the test could fail.
      EXPECT_FALSE(whole[0].top == whole[1].top);
    }
  }
}

}  // namespace
}  // namespace xtrain
