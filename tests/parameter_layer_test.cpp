// Parameter: a learnable blob as the only top, no bottoms. Shape, zeros at
// the start, forward copies, backward adds to the blob's gradient, finite
// differences, a stored blob kept, and the errors.
#include <gtest/gtest.h>

#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

const char* kParameter = "name: 'w' type: 'Parameter' parameter_param { shape { dim: 2 dim: 3 } }";

XTRAIN_DEVICE_TEST(ParameterLayerTest, TopIsTheBlobAndItsGradientAccumulates) {
  Blob top;
  auto layer = make_layer(kParameter);
  layer->setup({}, {&top});
  ASSERT_EQ(layer->blobs().size(), 1u);
  Blob& w = *layer->blobs()[0];
  EXPECT_EQ(w.shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(data_of(w), std::vector<float>(6, 0.0f));  // Caffe fills nothing

  set_data(w, {1, 2, 3, 4, 5, 6});
  layer->forward({}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 2, 3, 4, 5, 6}));

  set_diff(w, std::vector<float>(6, 0.0f));
  set_diff(top, {0.5f, -1, 2, 0, 1, 3});
  layer->backward({&top}, {}, {});
  layer->backward({&top}, {}, {});  // a second pass of iter_size 2 adds
  EXPECT_EQ(diff_of(w), (std::vector<float>{1, -2, 4, 0, 2, 6}));
}

XTRAIN_DEVICE_TEST(ParameterLayerTest, GradientMatchesFiniteDifferences) {
  Blob top;
  auto layer = make_layer(kParameter);
  layer->setup({}, {&top});
  testing::fill_uniform(*layer->blobs()[0], 41);
  testing::GradientChecker().check(*layer, {}, {&top});
}

XTRAIN_DEVICE_TEST(ParameterLayerTest, KeepsAStoredBlobOfTheRightShape) {
  LayerParameter param = testing::layer_param_from(kParameter);
  BlobProto* stored = param.add_blobs();
  stored->mutable_shape()->add_dim(2);
  stored->mutable_shape()->add_dim(3);
  for (int i = 0; i < 6; ++i) stored->add_data(static_cast<float>(i));
  auto layer = testing::create_layer(param);
  Blob top;
  layer->setup({}, {&top});
  layer->forward({}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

XTRAIN_DEVICE_TEST(ParameterLayerTest, ErrorsNameTheLayer) {
  Blob top;
  auto no_shape = make_layer("name: 'w' type: 'Parameter'");
  testing::expect_setup_error(*no_shape, {}, {&top}, {"'w'", "parameter_param", "shape"});

  LayerParameter param = testing::layer_param_from(kParameter);
  BlobProto* stored = param.add_blobs();
  stored->mutable_shape()->add_dim(4);
  for (int i = 0; i < 4; ++i) stored->add_data(0.0f);
  auto wrong_stored = testing::create_layer(param);
  testing::expect_setup_error(*wrong_stored, {}, {&top}, {"'w'", "(2, 3)", "(4)"});
}

}  // namespace
}  // namespace xtrain
