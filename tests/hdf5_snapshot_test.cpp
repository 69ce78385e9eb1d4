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

#include "hdf5_snapshot_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

using namespace hdf5_snapshot_fixture;

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

}  // namespace
}  // namespace xtrain
