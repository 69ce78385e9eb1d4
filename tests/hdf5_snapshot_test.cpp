// HDF5 snapshots in Caffe 1.0's layout: round trips of weights (N-d shapes,
// blob-less layers, diffs, '/' in names) and solver states (history, resume),
// layers kept in net order, files laid out byte-for-byte as Caffe writes them
// (checked with the HDF5 C API) and Caffe-written files read back, errors
// that say what the file is missing, and writes that leave the previous file
// intact when they fail.
#include "core/hdf5_snapshot.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tool_runner.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

BlobProto make_blob(const std::vector<std::int64_t>& shape, float first, bool with_diff = false) {
  BlobProto blob;
  auto* dims = blob.mutable_shape();
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    dims->add_dim(d);
    count *= d;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    blob.add_data(first + 0.25f * static_cast<float>(i));
    if (with_diff) blob.add_diff(-first - 0.5f * static_cast<float>(i));
  }
  return blob;
}

LayerParameter* add_layer(NetParameter* net, const std::string& name,
                          const std::vector<BlobProto>& blobs = {}) {
  LayerParameter* layer = net->add_layer();
  layer->set_name(name);
  layer->set_type("Test");  // not stored: the file keeps names and blobs only
  for (const BlobProto& blob : blobs) *layer->add_blobs() = blob;
  return layer;
}

// A small net: 4-d conv weights and 1-d bias, a layer without blobs, a 5-d
// blob, and a blob with no axes (one value).
NetParameter sample_net(bool with_diff) {
  NetParameter net;
  add_layer(&net, "conv1",
            {make_blob({2, 3, 2, 2}, 1.0f, with_diff), make_blob({2}, 7.0f, with_diff)});
  add_layer(&net, "relu1");
  add_layer(&net, "scale5d", {make_blob({1, 2, 3, 1, 2}, -3.0f, with_diff)});
  add_layer(&net, "scalar", {make_blob({}, 42.0f, with_diff)});
  return net;
}

std::vector<std::string> layer_names(const NetParameter& net) {
  std::vector<std::string> names;
  for (const LayerParameter& layer : net.layer()) names.push_back(layer.name());
  return names;
}

// Expects `actual` to hold `expected`'s layer names and blobs (shape, data,
// and diff if `with_diff`, else none).
void expect_same_weights(const NetParameter& expected, const NetParameter& actual, bool with_diff) {
  ASSERT_EQ(layer_names(actual), layer_names(expected));
  for (int i = 0; i < expected.layer_size(); ++i) {
    const LayerParameter& want = expected.layer(i);
    const LayerParameter& got = actual.layer(i);
    ASSERT_EQ(got.blobs_size(), want.blobs_size()) << want.name();
    for (int j = 0; j < want.blobs_size(); ++j) {
      SCOPED_TRACE(want.name() + " blob " + std::to_string(j));
      EXPECT_TRUE(got.blobs(j).has_shape());
      EXPECT_EQ(got.blobs(j).shape().SerializeAsString(),
                want.blobs(j).shape().SerializeAsString());
      EXPECT_EQ(std::vector<float>(got.blobs(j).data().begin(), got.blobs(j).data().end()),
                std::vector<float>(want.blobs(j).data().begin(), want.blobs(j).data().end()));
      if (with_diff) {
        EXPECT_EQ(std::vector<float>(got.blobs(j).diff().begin(), got.blobs(j).diff().end()),
                  std::vector<float>(want.blobs(j).diff().begin(), want.blobs(j).diff().end()));
      } else {
        EXPECT_EQ(got.blobs(j).diff_size(), 0);
      }
    }
  }
}

template <typename Action>
std::string error_of(const Action& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected xtrain::Error";
  return "";
}

std::vector<std::string> files_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// --- The HDF5 C API, as Caffe 1.0 uses it (H5LT writes the same objects) ---

void caffe_write_int(hid_t location, const char* name, int value) {
  const hsize_t one = 1;
  const hid_t space = H5Screate_simple(1, &one, nullptr);
  const hid_t dataset =
      H5Dcreate2(location, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << name;
  ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value), 0);
  H5Dclose(dataset);
  H5Sclose(space);
}

void caffe_write_string(hid_t location, const char* name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size() + 1);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t dataset =
      H5Dcreate2(location, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << name;
  ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.c_str()), 0);
  H5Dclose(dataset);
  H5Sclose(space);
  H5Tclose(type);
}

void caffe_write_floats(hid_t location, const char* name, const std::vector<hsize_t>& dims,
                        const std::vector<float>& values) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t dataset =
      H5Dcreate2(location, name, H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << name;
  ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(dataset);
  H5Sclose(space);
}

std::vector<float> ramp(std::size_t count, float first) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = first + static_cast<float>(i);
  return values;
}

// What one dataset of a file is: its type class, element size and dims.
struct DatasetLayout {
  H5T_class_t type_class = H5T_NO_CLASS;
  std::size_t element_size = 0;
  H5S_class_t space_class = H5S_NO_CLASS;
  std::vector<hsize_t> dims;
};

DatasetLayout layout_of(const std::string& path, const std::string& dataset_path) {
  DatasetLayout layout;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0) << path;
  const hid_t dataset = H5Dopen2(file, dataset_path.c_str(), H5P_DEFAULT);
  EXPECT_GE(dataset, 0) << dataset_path;
  if (dataset >= 0) {
    const hid_t type = H5Dget_type(dataset);
    layout.type_class = H5Tget_class(type);
    layout.element_size = H5Tget_size(type);
    H5Tclose(type);
    const hid_t space = H5Dget_space(dataset);
    layout.space_class = H5Sget_simple_extent_type(space);
    layout.dims.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
    H5Sget_simple_extent_dims(space, layout.dims.data(), nullptr);
    H5Sclose(space);
    H5Dclose(dataset);
  }
  H5Fclose(file);
  return layout;
}

// --- Weights ---------------------------------------------------------------

TEST(Hdf5Snapshot, WeightsRoundTripWithoutDiff) {
  TempDir dir("hdf5_snapshot");
  const NetParameter net = sample_net(/*with_diff=*/true);  // diffs present but not asked for
  const std::string path = dir.file("net.caffemodel.h5");
  write_net_hdf5(net, path, /*write_diff=*/false);
  expect_same_weights(net, read_net_hdf5(path), /*with_diff=*/false);
}

TEST(Hdf5Snapshot, WeightsRoundTripWithDiff) {
  TempDir dir("hdf5_snapshot");
  const NetParameter net = sample_net(/*with_diff=*/true);
  const std::string path = dir.file("net.caffemodel.h5");
  write_net_hdf5(net, path, /*write_diff=*/true);
  expect_same_weights(net, read_net_hdf5(path), /*with_diff=*/true);
}

TEST(Hdf5Snapshot, LegacyFourAxisBlobsAreWrittenWithTheirShape) {
  TempDir dir("hdf5_snapshot");
  NetParameter net;
  BlobProto legacy;
  legacy.set_num(1);
  legacy.set_channels(1);
  legacy.set_height(2);
  legacy.set_width(3);
  for (float v : ramp(6, 0.5f)) legacy.add_data(v);
  add_layer(&net, "ip", {legacy});
  const std::string path = dir.file("legacy.caffemodel.h5");
  write_net_hdf5(net, path, false);
  EXPECT_EQ(layout_of(path, "data/ip/0").dims, (std::vector<hsize_t>{1, 1, 2, 3}));
  const NetParameter back = read_net_hdf5(path);
  ASSERT_EQ(back.layer_size(), 1);
  EXPECT_EQ(std::vector<std::int64_t>(back.layer(0).blobs(0).shape().dim().begin(),
                                      back.layer(0).blobs(0).shape().dim().end()),
            (std::vector<std::int64_t>{1, 1, 2, 3}));
  EXPECT_EQ(back.layer(0).blobs(0).data(5), 5.5f);
}

TEST(Hdf5Snapshot, DoubleBlobsStayDouble) {
  TempDir dir("hdf5_snapshot");
  NetParameter net;
  BlobProto blob;
  blob.mutable_shape()->add_dim(2);
  blob.add_double_data(0.1);
  blob.add_double_data(1e-300);
  add_layer(&net, "d", {blob});
  const std::string path = dir.file("double.caffemodel.h5");
  write_net_hdf5(net, path, false);
  EXPECT_EQ(layout_of(path, "data/d/0").element_size, 8u);
  const BlobProto& back = read_net_hdf5(path).layer(0).blobs(0);
  ASSERT_EQ(back.double_data_size(), 2);
  EXPECT_EQ(back.double_data(0), 0.1);
  EXPECT_EQ(back.double_data(1), 1e-300);
  EXPECT_EQ(back.data_size(), 0);
}

TEST(Hdf5Snapshot, LayersReadBackInNetOrderNotNameOrder) {
  TempDir dir("hdf5_snapshot");
  NetParameter net;
  // More layers than HDF5 keeps in a compact group (8), so the dense,
  // indexed storage is exercised too; names deliberately out of order.
  for (int i = 0; i < 40; ++i) {
    const std::string name = std::string(1, static_cast<char>('z' - i % 26)) + std::to_string(i);
    if (i % 3 == 0) {
      add_layer(&net, name);
    } else {
      add_layer(&net, name, {make_blob({i % 4 + 1}, static_cast<float>(i))});
    }
  }
  const std::string path = dir.file("order.caffemodel.h5");
  write_net_hdf5(net, path, false);
  const NetParameter back = read_net_hdf5(path);
  EXPECT_EQ(layer_names(back), layer_names(net));
  expect_same_weights(net, back, false);
}

TEST(Hdf5Snapshot, LayerNamesWithSlashesBecomeNestedGroups) {
  TempDir dir("hdf5_snapshot");
  NetParameter net;
  add_layer(&net, "conv1/7x7_s2", {make_blob({4, 3, 7, 7}, 0.0f), make_blob({4}, 1.0f)});
  add_layer(&net, "conv1/relu_7x7");
  add_layer(&net, "pool1/3x3_s2");
  add_layer(&net, "inception_3a/1x1", {make_blob({2, 4, 1, 1}, 5.0f)});
  add_layer(&net, "loss3/classifier", {make_blob({10, 2}, 9.0f)});
  const std::string path = dir.file("googlenet.caffemodel.h5");
  write_net_hdf5(net, path, false);
  // The path h5py and HDFView show for the first layer's weights.
  EXPECT_EQ(layout_of(path, "data/conv1/7x7_s2/0").dims, (std::vector<hsize_t>{4, 3, 7, 7}));
  expect_same_weights(net, read_net_hdf5(path), false);
}

// --- Caffe's layout --------------------------------------------------------

TEST(Hdf5Snapshot, WrittenFilesHaveCaffesDatasetTypesAndShapes) {
  TempDir dir("hdf5_snapshot");
  const std::string weights = dir.file("net.caffemodel.h5");
  write_net_hdf5(sample_net(true), weights, true);
  for (const char* root : {"data", "diff"}) {
    const DatasetLayout conv = layout_of(weights, std::string(root) + "/conv1/0");
    EXPECT_EQ(conv.type_class, H5T_FLOAT) << root;
    EXPECT_EQ(conv.element_size, 4u) << root;
    EXPECT_EQ(conv.dims, (std::vector<hsize_t>{2, 3, 2, 2})) << root;
    EXPECT_EQ(layout_of(weights, std::string(root) + "/conv1/1").dims, std::vector<hsize_t>{2});
  }
  // Caffe's reader counts the links of "data" and asks for each by index in
  // name order; the order tracking xtrain adds must not get in its way.
  const hid_t file = H5Fopen(weights.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t data = H5Gopen2(file, "data", H5P_DEFAULT);
  H5G_info_t info{};
  ASSERT_GE(H5Gget_info(data, &info), 0);
  std::vector<std::string> caffe_order;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[64] = {};
    ASSERT_GT(H5Lget_name_by_idx(data, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, name, sizeof name,
                                 H5P_DEFAULT),
              0);
    caffe_order.push_back(name);
  }
  H5Gclose(data);
  H5Fclose(file);
  EXPECT_EQ(caffe_order, (std::vector<std::string>{"conv1", "relu1", "scale5d", "scalar"}));

  SolverState state;
  state.set_iter(1234);
  state.set_learned_net("snapshots/net_iter_1234.caffemodel.h5");
  state.set_current_step(2);
  *state.add_history() = make_blob({2, 3}, 0.0f);
  const std::string solverstate = dir.file("net.solverstate.h5");
  write_solver_state_hdf5(state, solverstate);
  for (const char* counter : {"iter", "current_step"}) {
    const DatasetLayout layout = layout_of(solverstate, counter);
    EXPECT_EQ(layout.type_class, H5T_INTEGER) << counter;
    EXPECT_EQ(layout.element_size, sizeof(int)) << counter;
    EXPECT_EQ(layout.dims, std::vector<hsize_t>{1}) << counter;
  }
  const DatasetLayout learned_net = layout_of(solverstate, "learned_net");
  EXPECT_EQ(learned_net.type_class, H5T_STRING);
  EXPECT_EQ(learned_net.space_class, H5S_SCALAR);
  EXPECT_EQ(learned_net.element_size, state.learned_net().size() + 1);  // with its NUL
  EXPECT_EQ(layout_of(solverstate, "history/0").dims, (std::vector<hsize_t>{2, 3}));
}

// A .caffemodel.h5 and .solverstate.h5 written as Caffe 1.0 writes them:
// plain groups (so name order), 4-d conv weights, 1-d biases, a layer with
// no params, a weight-shared blob left out, int and string datasets.
TEST(Hdf5Snapshot, ReadsFilesLaidOutByCaffe) {
  TempDir dir("hdf5_snapshot");
  const std::string weights = dir.file("caffe_iter_100.caffemodel.h5");
  {
    const hid_t file = H5Fcreate(weights.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    for (const char* root : {"data", "diff"}) {
      const hid_t group = H5Gcreate2(file, root, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      const float sign = std::string(root) == "data" ? 1.0f : -1.0f;
      for (const char* layer : {"mnist", "conv1", "relu1", "ip_shared", "ip"}) {
        const hid_t layer_group = H5Gcreate2(group, layer, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        const std::string name = layer;
        if (name == "conv1") {
          caffe_write_floats(layer_group, "0", {2, 1, 3, 3}, ramp(18, sign * 1));
          caffe_write_floats(layer_group, "1", {2}, ramp(2, sign * 100));
        } else if (name == "ip") {
          caffe_write_floats(layer_group, "0", {3, 8}, ramp(24, sign * 200));
          caffe_write_floats(layer_group, "1", {3}, ramp(3, sign * 300));
        } else if (name == "ip_shared") {
          // Shares ip's weights: Caffe writes only the data of the bias it
          // owns, but every diff.
          if (std::string(root) == "diff")
            caffe_write_floats(layer_group, "0", {3, 8}, ramp(24, -500));
          caffe_write_floats(layer_group, "1", {3}, ramp(3, sign * 400));
        }
        H5Gclose(layer_group);
      }
      H5Gclose(group);
    }
    H5Fclose(file);
  }
  const NetParameter net = read_net_hdf5(weights);
  EXPECT_EQ(layer_names(net),
            (std::vector<std::string>{"conv1", "ip", "ip_shared", "mnist", "relu1"}));
  const BlobProto& conv = net.layer(0).blobs(0);
  EXPECT_EQ(std::vector<std::int64_t>(conv.shape().dim().begin(), conv.shape().dim().end()),
            (std::vector<std::int64_t>{2, 1, 3, 3}));
  EXPECT_EQ(std::vector<float>(conv.data().begin(), conv.data().end()), ramp(18, 1));
  EXPECT_EQ(std::vector<float>(conv.diff().begin(), conv.diff().end()), ramp(18, -1));
  EXPECT_EQ(net.layer(0).blobs(1).data(1), 101.0f);
  EXPECT_EQ(net.layer(1).blobs(1).diff(2), -298.0f);
  const LayerParameter& shared = net.layer(2);
  ASSERT_EQ(shared.blobs_size(), 2);
  EXPECT_EQ(shared.blobs(0).data_size(), 0);  // the gap where the shared weights would be
  EXPECT_EQ(shared.blobs(0).diff_size(), 24);
  EXPECT_EQ(shared.blobs(0).shape().dim_size(), 2);
  EXPECT_EQ(shared.blobs(1).data(0), 400.0f);
  EXPECT_EQ(shared.blobs(1).diff(0), -400.0f);
  EXPECT_EQ(net.layer(3).blobs_size(), 0);
  EXPECT_EQ(net.layer(4).blobs_size(), 0);
  // Written again by xtrain (gap included), it reads back the same.
  const std::string rewritten = dir.file("rewritten.caffemodel.h5");
  write_net_hdf5(net, rewritten, true);
  EXPECT_EQ(read_net_hdf5(rewritten).SerializeAsString(), net.SerializeAsString());

  const std::string solverstate = dir.file("caffe_iter_100.solverstate.h5");
  {
    const hid_t file = H5Fcreate(solverstate.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    caffe_write_int(file, "iter", 100);
    caffe_write_string(file, "learned_net", weights);
    caffe_write_int(file, "current_step", 3);
    const hid_t history = H5Gcreate2(file, "history", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    caffe_write_floats(history, "0", {2, 1, 3, 3}, ramp(18, 0.5f));
    caffe_write_floats(history, "1", {2}, ramp(2, 0.25f));
    H5Gclose(history);
    H5Fclose(file);
  }
  const SolverState state = read_solver_state_hdf5(solverstate);
  EXPECT_EQ(state.iter(), 100);
  EXPECT_EQ(state.learned_net(), weights);
  EXPECT_EQ(state.current_step(), 3);
  ASSERT_EQ(state.history_size(), 2);
  EXPECT_EQ(state.history(0).shape().dim_size(), 4);
  EXPECT_EQ(std::vector<float>(state.history(0).data().begin(), state.history(0).data().end()),
            ramp(18, 0.5f));
  EXPECT_EQ(state.history(1).data(1), 1.25f);
  EXPECT_FALSE(state.has_resume());
}

// --- Solver state ----------------------------------------------------------

TEST(Hdf5Snapshot, SolverStateRoundTripWithHistoryAndResume) {
  TempDir dir("hdf5_snapshot");
  SolverState state;
  state.set_iter(5000);
  state.set_learned_net("snapshots/x_iter_5000.caffemodel.h5");
  state.set_current_step(1);
  *state.add_history() = make_blob({2, 3, 2, 2}, 0.5f);
  *state.add_history() = make_blob({2}, -1.0f);
  *state.add_history() = make_blob({1, 2, 1, 1, 3}, 3.0f);
  ResumeState* resume = state.mutable_resume();
  resume->set_random_seed(1701);
  resume->set_learned_net_size(123456789);
  resume->set_learned_net_crc32(0xdeadbeef);
  resume->set_train_seconds(12.5);
  LayerResumeState* data_layer = resume->mutable_train_net()->add_layer();
  data_layer->set_name("data");
  data_layer->set_records_consumed(640);
  data_layer->set_random_state(std::string("\0\x01\xff state", 9));
  const std::string path = dir.file("x.solverstate.h5");
  write_solver_state_hdf5(state, path);
  const SolverState back = read_solver_state_hdf5(path);
  EXPECT_EQ(back.SerializeAsString(), state.SerializeAsString());
  EXPECT_EQ(layout_of(path, "xtrain_resume").type_class, H5T_INTEGER);
}

TEST(Hdf5Snapshot, SolverStateWithoutOptionalParts) {
  TempDir dir("hdf5_snapshot");
  SolverState state;
  state.set_iter(7);
  const std::string path = dir.file("bare.solverstate.h5");
  write_solver_state_hdf5(state, path);
  const SolverState back = read_solver_state_hdf5(path);
  EXPECT_EQ(back.iter(), 7);
  EXPECT_FALSE(back.has_learned_net());
  EXPECT_FALSE(back.has_resume());
  EXPECT_EQ(back.history_size(), 0);

  // A resume state whose fields are all defaults serializes to no bytes; it
  // must still come back as present.
  state.mutable_resume();
  write_solver_state_hdf5(state, path);
  EXPECT_TRUE(read_solver_state_hdf5(path).has_resume());
}

// --- Recognising files and reporting errors --------------------------------

TEST(Hdf5Snapshot, LooksLikeHdf5ChecksTheSignature) {
  TempDir dir("hdf5_snapshot");
  const std::string weights = dir.file("w.caffemodel.h5");
  write_net_hdf5(sample_net(false), weights, false);
  EXPECT_TRUE(looks_like_hdf5(weights));
  EXPECT_FALSE(looks_like_hdf5(dir.write("w.caffemodel", "\x0a\x05lenet")));
  EXPECT_FALSE(looks_like_hdf5(dir.write("short", "\x89HD")));
  EXPECT_FALSE(looks_like_hdf5(dir.file("missing.h5")));
  EXPECT_FALSE(looks_like_hdf5(dir.path()));

  // HDF5 also finds its superblock after a user block of 512 bytes or more.
  const std::string with_user_block = dir.file("user_block.h5");
  const hid_t properties = H5Pcreate(H5P_FILE_CREATE);
  ASSERT_GE(H5Pset_userblock(properties, 512), 0);
  const hid_t file = H5Fcreate(with_user_block.c_str(), H5F_ACC_TRUNC, properties, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Fclose(file);
  H5Pclose(properties);
  EXPECT_TRUE(looks_like_hdf5(with_user_block));
}

TEST(Hdf5Snapshot, ReadErrorsSayWhatTheFileIsMissing) {
  TempDir dir("hdf5_snapshot");
  const std::string missing = dir.file("nothing.caffemodel.h5");
  EXPECT_NE(error_of([&] { read_net_hdf5(missing); }).find("no such file"), std::string::npos);

  const std::string text = dir.write("notes.caffemodel.h5", "these are not weights\n");
  const std::string not_hdf5 = error_of([&] { read_net_hdf5(text); });
  EXPECT_NE(not_hdf5.find("'" + text + "' is not an HDF5 file"), std::string::npos) << not_hdf5;
  EXPECT_NE(error_of([&] { read_solver_state_hdf5(text); }).find("not an HDF5 file"),
            std::string::npos);

  SolverState state;
  state.set_iter(1);
  const std::string solverstate = dir.file("s.solverstate.h5");
  write_solver_state_hdf5(state, solverstate);
  const std::string no_data = error_of([&] { read_net_hdf5(solverstate); });
  EXPECT_NE(no_data.find("'" + solverstate +
                         "' is an HDF5 file but not a Caffe .caffemodel.h5: it has no group "
                         "'data'"),
            std::string::npos)
      << no_data;

  const std::string weights = dir.file("w.caffemodel.h5");
  write_net_hdf5(sample_net(false), weights, false);
  const std::string no_iter = error_of([&] { read_solver_state_hdf5(weights); });
  EXPECT_NE(no_iter.find("not a Caffe .solverstate.h5: it has no dataset 'iter'"),
            std::string::npos)
      << no_iter;
}

TEST(Hdf5Snapshot, TruncatedFileIsAnErrorNotACrash) {
  TempDir dir("hdf5_snapshot");
  NetParameter net;
  add_layer(&net, "big", {make_blob({64, 64}, 0.0f)});
  const std::string path = dir.file("cut.caffemodel.h5");
  write_net_hdf5(net, path, false);
  const auto full_size = std::filesystem::file_size(path);
  for (auto keep : {full_size / 2, std::uintmax_t{100}}) {
    std::filesystem::resize_file(path, keep);
    const std::string message = error_of([&] { read_net_hdf5(path); });
    EXPECT_NE(message.find(path), std::string::npos) << "kept " << keep << ": " << message;
  }
}

// Found by fuzz/hdf5_snapshot_fuzzer: four damaged bytes in a group header of
// a .caffemodel.h5 make HDF5 1.10 read through a null pointer (inside
// H5Gget_create_plist). The read is tried in a child process first, so the
// caller gets an error naming the file, and the test process lives on.
TEST(Hdf5Snapshot, AFileThatCrashesHdf5IsAnErrorNotACrash) {
  const std::string path = std::string(XTRAIN_SOURCE_DIR) +
                           "/tests/fixtures/damaged_snapshots/faulting_group_header.caffemodel.h5";
  const std::string message = error_of([&] { read_net_hdf5(path); });
  EXPECT_NE(message.find("the .caffemodel.h5 '" + path +
                         "' is damaged: the HDF5 library crashed reading it (signal 11"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("use an earlier snapshot"), std::string::npos) << message;
  // An error the read throws in the child comes back as it is.
  TempDir dir("hdf5_snapshot");
  const std::string not_a_state = dir.file("x.solverstate.h5");
  std::filesystem::copy_file(path, not_a_state);
  EXPECT_NE(error_of([&] { read_solver_state_hdf5(not_a_state); }).find("has no dataset 'iter'"),
            std::string::npos)
      << error_of([&] { read_solver_state_hdf5(not_a_state); });
}

// Found by fuzz/hdf5_snapshot_fuzzer: a damaged shape claimed 1.4 billion
// values and the reader reserved 5.7 GB for them. Now the values a dataset
// claims must be stored in the file (here: a dataset never written).
TEST(Hdf5Snapshot, ADatasetClaimingMoreThanTheFileStoresIsRefusedBeforeAllocating) {
  TempDir dir("hdf5_snapshot");
  const std::string path = dir.file("claims.caffemodel.h5");
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t data = H5Gcreate2(file, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t layer = H5Gcreate2(data, "ip", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {30000, 30000};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dataset =
        H5Dcreate2(layer, "0", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(dataset, 0);
    H5Dclose(dataset);
    H5Sclose(space);
    H5Gclose(layer);
    H5Gclose(data);
    H5Fclose(file);
  }
  const std::string message = error_of([&] { read_net_hdf5(path); });
  EXPECT_NE(message.find("'data/ip/0' in '" + path +
                         "' claims 3600000000 bytes of values but the file stores 0 for it: "
                         "the file is damaged or cut short"),
            std::string::npos)
      << message;
}

TEST(Hdf5Snapshot, WriteRejectsWhatCaffeWouldCrashOn) {
  TempDir dir("hdf5_snapshot");
  const std::string path = dir.file("w.caffemodel.h5");
  NetParameter duplicate;
  add_layer(&duplicate, "data");
  add_layer(&duplicate, "data");
  EXPECT_NE(error_of([&] { write_net_hdf5(duplicate, path, false); }).find("both named 'data'"),
            std::string::npos);
  NetParameter unnamed;
  add_layer(&unnamed, "");
  EXPECT_NE(error_of([&] { write_net_hdf5(unnamed, path, false); }).find("has no name"),
            std::string::npos);
  NetParameter bad_path;
  add_layer(&bad_path, "conv1//x");
  EXPECT_NE(error_of([&] { write_net_hdf5(bad_path, path, false); }).find("group path"),
            std::string::npos);

  NetParameter collision;
  add_layer(&collision, "conv1", {make_blob({3}, 0.0f)});
  add_layer(&collision, "conv1/0");
  EXPECT_NE(error_of([&] {
              write_net_hdf5(collision, path, false);
            }).find("layer 'conv1/0' would be stored where blob 0 of layer 'conv1' is"),
            std::string::npos);

  NetParameter short_blob;
  BlobProto blob = make_blob({2, 3}, 0.0f);
  blob.mutable_data()->RemoveLast();
  add_layer(&short_blob, "ip", {blob});
  const std::string short_message = error_of([&] { write_net_hdf5(short_blob, path, false); });
  EXPECT_NE(short_message.find("needs 6 values but it holds 5"), std::string::npos)
      << short_message;
  EXPECT_NE(error_of([&] {
              write_net_hdf5(sample_net(false), path, true);
            }).find("a snapshot with diffs needs every blob's diff"),
            std::string::npos);
  EXPECT_TRUE(files_in(dir.path()).empty()) << "a failed write left a file behind";
}

// --- Atomic writes ---------------------------------------------------------

TEST(Hdf5Snapshot, WriteIntoMissingDirectoryFailsCleanly) {
  TempDir dir("hdf5_snapshot");
  const std::string path = dir.file("no_such_dir/net.caffemodel.h5");
  const std::string message = error_of([&] { write_net_hdf5(sample_net(false), path, false); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(error_of([&] { write_solver_state_hdf5(SolverState(), path); }).find(path),
            std::string::npos);
  EXPECT_TRUE(files_in(dir.path()).empty());
}

TEST(Hdf5Snapshot, WriteIntoReadOnlyDirectoryKeepsThePreviousFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir("hdf5_snapshot");
  const std::string path = dir.file("net.caffemodel.h5");
  const NetParameter first = sample_net(false);
  write_net_hdf5(first, path, false);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  NetParameter second;
  add_layer(&second, "other", {make_blob({3}, 9.0f)});
  const std::string message = error_of([&] { write_net_hdf5(second, path, false); });
  ::chmod(dir.path().c_str(), 0755);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  expect_same_weights(first, read_net_hdf5(path), false);
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"net.caffemodel.h5"});
}

// Runs a block with the process's file size limit lowered, as a stand-in for
// a full disk: writes past it fail with EFBIG (SIGXFSZ ignored meanwhile).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_limit_);
    saved_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_limit_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_limit_);
    ::signal(SIGXFSZ, saved_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_limit_{};
  sighandler_t saved_handler_ = SIG_DFL;
};

// Also guards the process: HDF5 1.10, left to write a file itself, cannot
// close it after a failed write and crashes at exit (ctest runs each test in
// its own process, so that would fail this test).
TEST(Hdf5Snapshot, WriteFailingMidwayKeepsThePreviousFiles) {
  TempDir dir("hdf5_snapshot");
  const std::string weights = dir.file("net.caffemodel.h5");
  const std::string solverstate = dir.file("net.solverstate.h5");
  const NetParameter first = sample_net(true);
  write_net_hdf5(first, weights, true);
  SolverState first_state;
  first_state.set_iter(10);
  first_state.set_current_step(1);
  *first_state.add_history() = make_blob({4}, 1.0f);
  write_solver_state_hdf5(first_state, solverstate);

  NetParameter big;
  add_layer(&big, "fc6", {make_blob({256, 1024}, 0.0f)});  // 1 MiB of floats
  SolverState big_state;
  big_state.set_iter(20);
  *big_state.add_history() = make_blob({256, 1024}, 0.0f);
  std::string weights_error, state_error;
  {
    FileSizeLimit limit(64 * 1024);
    weights_error = error_of([&] { write_net_hdf5(big, weights, false); });
    state_error = error_of([&] { write_solver_state_hdf5(big_state, solverstate); });
  }
  EXPECT_NE(weights_error.find(weights), std::string::npos) << weights_error;
  EXPECT_NE(state_error.find(solverstate), std::string::npos) << state_error;
  expect_same_weights(first, read_net_hdf5(weights), true);
  EXPECT_EQ(read_solver_state_hdf5(solverstate).SerializeAsString(),
            first_state.SerializeAsString());
  EXPECT_EQ(files_in(dir.path()),
            (std::vector<std::string>{"net.caffemodel.h5", "net.solverstate.h5"}));
}

}  // namespace
}  // namespace xtrain
