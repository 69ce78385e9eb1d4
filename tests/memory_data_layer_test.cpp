// MemoryData layer: arrays handed over by reset() come out batch by batch,
// wrapping; bad arrays and sizes are errors; an app reaches the layer of a
// net through Net::layer_by_name and the public header.
#include "xtrain/memory_data_layer.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::error_of;
using testing::expect_error;

const char* kLayer =
    "name: 'input' type: 'MemoryData' top: 'data' top: 'label' "
    "memory_data_param { batch_size: 2 channels: 2 height: 1 width: 3 }";

LayerParameter memory_param(const std::string& text = kLayer) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  return param;
}

// Image i: 6 values 100 * i + j; label i.
struct Arrays {
  explicit Arrays(int n) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < 6; ++j) data.push_back(100.0f * i + j);
      labels.push_back(static_cast<float>(i));
    }
  }
  std::vector<float> image(int i) const {
    return std::vector<float>(data.begin() + 6 * i, data.begin() + 6 * (i + 1));
  }
  std::vector<float> data;
  std::vector<float> labels;
};

void expect_batch(const Blob& data, const Blob& label, const Arrays& arrays,
                  const std::vector<int>& images) {
  for (std::size_t k = 0; k < images.size(); ++k) {
    EXPECT_EQ(label.cpu_data()[k], static_cast<float>(images[k]));
    EXPECT_EQ(std::vector<float>(data.cpu_data() + 6 * k, data.cpu_data() + 6 * (k + 1)),
              arrays.image(images[k]))
        << "item " << k;
  }
}

TEST(MemoryDataLayer, ConsecutiveBatchesThatWrap) {
  auto layer = LayerRegistry::global().create(memory_param());
  EXPECT_STREQ(layer->type(), "MemoryData");
  auto* memory = dynamic_cast<MemoryDataLayer*>(layer.get());
  ASSERT_NE(memory, nullptr);
  Blob data;
  Blob label;
  layer->setup({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int>{2, 2, 1, 3}));
  EXPECT_EQ(label.shape(), (std::vector<int>{2}));

  const Arrays arrays(6);
  memory->reset(arrays.data.data(), arrays.labels.data(), 6);
  EXPECT_EQ(memory->num_images(), 6);
  for (const std::vector<int>& images : {std::vector<int>{0, 1}, {2, 3}, {4, 5}, {0, 1}, {2, 3}}) {
    layer->forward({}, {&data, &label});
    expect_batch(data, label, arrays, images);
  }

  // reset starts again from the first image of the new arrays.
  const Arrays other(2);
  memory->reset(other.data.data(), other.labels.data(), 2);
  layer->forward({}, {&data, &label});
  expect_batch(data, label, other, {0, 1});
  layer->forward({}, {&data, &label});
  expect_batch(data, label, other, {0, 1});
}

TEST(MemoryDataLayer, BadArraysAndSizesAreErrors) {
  MemoryDataLayer layer(memory_param());
  Blob data;
  Blob label;
  layer.setup({}, {&data, &label});
  const std::string no_reset = error_of([&] { layer.forward({}, {&data, &label}); });
  EXPECT_NE(no_reset.find("layer 'input' (MemoryData): no data yet"), std::string::npos)
      << no_reset;

  const Arrays arrays(5);
  const std::string odd =
      error_of([&] { layer.reset(arrays.data.data(), arrays.labels.data(), 5); });
  EXPECT_NE(odd.find("reset with 5 images; the number of images must be a positive multiple of "
                     "the batch size 2"),
            std::string::npos)
      << odd;
  expect_error([&] { layer.reset(arrays.data.data(), arrays.labels.data(), 0); },
               {"positive multiple"});
  expect_error([&] { layer.reset(nullptr, arrays.labels.data(), 2); }, {"null pointer"});

  MemoryDataLayer unsized(
      memory_param("name: 'input' type: 'MemoryData' top: 'data' top: 'label' "
                   "memory_data_param { batch_size: 2 channels: 0 height: 1 width: 3 }"));
  expect_error(
      [&] {
        unsized.setup({}, {&data, &label});
      },
      {"must give a positive batch_size, channels, height and width"});
}

TEST(MemoryDataLayer, SetBatchSize) {
  MemoryDataLayer layer(memory_param());
  Blob data;
  Blob label;
  layer.setup({}, {&data, &label});
  const Arrays arrays(6);
  layer.reset(arrays.data.data(), arrays.labels.data(), 6);
  layer.forward({}, {&data, &label});
  expect_error([&] { layer.set_batch_size(4); }, {"does not divide the 6 images"});
  layer.set_batch_size(3);
  layer.forward({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int>{3, 2, 1, 3}));
  expect_batch(data, label, arrays, {0, 1, 2});
  layer.forward({}, {&data, &label});
  expect_batch(data, label, arrays, {3, 4, 5});
}

// What a C++ application does: build the net from text, find the layer by
// name, hand it arrays, run the net.
TEST(MemoryDataLayer, AppFeedsANetThroughLayerByName) {
  NetParameter net_param;
  read_proto_from_text_string(std::string("layer { ") + kLayer +
                                  " } layer { name: 'ip' type: 'InnerProduct' bottom: 'data' "
                                  "top: 'ip' inner_product_param { num_output: 1 "
                                  "weight_filler { type: 'constant' value: 1 } } }",
                              &net_param);
  net_param.mutable_state()->set_phase(TEST);
  Net net(net_param);
  auto input = std::dynamic_pointer_cast<MemoryDataLayer>(net.layer_by_name("input"));
  ASSERT_NE(input, nullptr);
  const Arrays arrays(4);
  input->reset(arrays.data.data(), arrays.labels.data(), 4);
  net.forward();
  net.forward();
  // ip = the sum of each image's values: images 2 and 3.
  const Blob* ip = net.blob_by_name("ip").get();
  EXPECT_FLOAT_EQ(ip->cpu_data()[0], 6 * 200.0f + 15);
  EXPECT_FLOAT_EQ(ip->cpu_data()[1], 6 * 300.0f + 15);
}

}  // namespace
}  // namespace xtrain
