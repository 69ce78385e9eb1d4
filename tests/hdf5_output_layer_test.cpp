// HDF5Output: the file Caffe's writes (datasets "data" and "label", 4-d
// legacy shapes, the values), read back with the HDF5Data layer's reader;
// the file truncated at setup; and the errors (a second forward, as Caffe's
// fails; batch sizes that differ; more than 4 axes; a folder that does not
// exist), each naming the layer.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "data/hdf5_file.hpp"
#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "tool_runner.hpp"

namespace xtrain {
namespace {

using namespace testing;

std::string output_layer(const std::string& file) {
  return "name: 'out' type: 'HDF5Output' bottom: 'data' bottom: 'label' "
         "hdf5_output_param { file_name: '" +
         file + "' }";
}

XTRAIN_DEVICE_TEST(Hdf5OutputLayerTest, WritesDataAndLabelAsCaffeDoes) {
  TempDir dir("hdf5_output");
  const std::string path = dir.write("out.h5", "an older file, truncated at setup");
  Blob data({2, 3});  // written as (2, 3, 1, 1)
  Blob label({2});    // written as (2, 1, 1, 1)
  set_data(data, {1, 2, 3, 4, 5, 6});
  set_data(label, {7, 8});
  auto layer = make_layer(output_layer(path));
  layer->setup({&data, &label}, {});
  layer->forward({&data, &label}, {});
  layer->backward({}, {false, false}, {&data, &label});

  Hdf5File file(path);
  EXPECT_EQ(file.dataset_names(), (std::vector<std::string>{"data", "label"}));
  std::vector<float> values;
  EXPECT_EQ(file.read_floats("data", &values), (std::vector<int>{2, 3, 1, 1}));
  EXPECT_EQ(values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(file.read_floats("label", &values), (std::vector<int>{2, 1, 1, 1}));
  EXPECT_EQ(values, (std::vector<float>{7, 8}));
}

XTRAIN_DEVICE_TEST(Hdf5OutputLayerTest, ASecondForwardIsAnErrorAndKeepsTheFirstBatch) {
  TempDir dir("hdf5_output");
  const std::string path = dir.file("out.h5");
  Blob data({1, 2, 2, 1});
  Blob label({1, 1});
  set_data(data, {1, 2, 3, 4});
  set_data(label, {5});
  auto layer = make_layer(output_layer(path));
  layer->setup({&data, &label}, {});
  layer->forward({&data, &label}, {});
  set_data(data, {9, 9, 9, 9});
  expect_error(
      [&] {
        layer->forward({&data, &label}, {});
      },
      {"'out'", "HDF5Output", path, "once per file"});
  std::vector<float> values;
  EXPECT_EQ(Hdf5File(path).read_floats("data", &values), (std::vector<int>{1, 2, 2, 1}));
  EXPECT_EQ(values, (std::vector<float>{1, 2, 3, 4}));
}

XTRAIN_DEVICE_TEST(Hdf5OutputLayerTest, ErrorsNameTheLayer) {
  TempDir dir("hdf5_output");
  Blob data({2, 3});
  Blob other_batch({3});
  auto mismatched = make_layer(output_layer(dir.file("a.h5")));
  expect_setup_error(*mismatched, {&data, &other_batch}, {},
                     {"'out'", "2 3 (6)", "3 (3)", "same batch size"});

  Blob five_axes({1, 1, 1, 1, 2});
  Blob label({1});
  auto too_many = make_layer(output_layer(dir.file("b.h5")));
  expect_setup_error(*too_many, {&five_axes, &label}, {},
                     {"'out'", "1 1 1 1 2 (2)", "at most 4 axes"});

  const std::string nowhere = dir.file("missing/folder/c.h5");
  auto unwritable = make_layer(output_layer(nowhere));
  expect_setup_error(*unwritable, {&data, &label}, {}, {"'out'", nowhere, "cannot create"});

  auto unnamed = make_layer("name: 'out' type: 'HDF5Output'");
  expect_setup_error(*unnamed, {&data, &label}, {}, {"'out'", "file_name"});
}

}  // namespace
}  // namespace xtrain
