// HDF5 snapshots that cannot be read or written: recognising files, errors
// that say what is missing, damaged and cut files, files that crash HDF5, and
// writes that fail (missing or read-only folder, a full disk midway) leaving
// the previous files intact.
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

#include "core/hdf5_snapshot.hpp"
#include "hdf5_snapshot_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

using namespace hdf5_snapshot_fixture;

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
  expect_error([&] { read_net_hdf5(missing); }, {"no such file"});

  const std::string text = dir.write("notes.caffemodel.h5", "these are not weights\n");
  const std::string not_hdf5 = error_of([&] { read_net_hdf5(text); });
  EXPECT_NE(not_hdf5.find("'" + text + "' is not an HDF5 file"), std::string::npos) << not_hdf5;
  expect_error([&] { read_solver_state_hdf5(text); }, {"not an HDF5 file"});

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
  expect_error([&] { write_net_hdf5(duplicate, path, false); }, {"both named 'data'"});
  NetParameter unnamed;
  add_layer(&unnamed, "");
  expect_error([&] { write_net_hdf5(unnamed, path, false); }, {"has no name"});
  NetParameter bad_path;
  add_layer(&bad_path, "conv1//x");
  expect_error([&] { write_net_hdf5(bad_path, path, false); }, {"group path"});

  NetParameter collision;
  add_layer(&collision, "conv1", {make_blob({3}, 0.0f)});
  add_layer(&collision, "conv1/0");
  expect_error([&] { write_net_hdf5(collision, path, false); },
               {"layer 'conv1/0' would be stored where blob 0 of layer 'conv1' is"});

  NetParameter short_blob;
  BlobProto blob = make_blob({2, 3}, 0.0f);
  blob.mutable_data()->RemoveLast();
  add_layer(&short_blob, "ip", {blob});
  const std::string short_message = error_of([&] { write_net_hdf5(short_blob, path, false); });
  EXPECT_NE(short_message.find("needs 6 values but it holds 5"), std::string::npos)
      << short_message;
  expect_error([&] { write_net_hdf5(sample_net(false), path, true); },
               {"a snapshot with diffs needs every blob's diff"});
  EXPECT_TRUE(files_in(dir.path()).empty()) << "a failed write left a file behind";
}

// --- Atomic writes ---------------------------------------------------------

TEST(Hdf5Snapshot, WriteIntoMissingDirectoryFailsCleanly) {
  TempDir dir("hdf5_snapshot");
  const std::string path = dir.file("no_such_dir/net.caffemodel.h5");
  const std::string message = error_of([&] { write_net_hdf5(sample_net(false), path, false); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  expect_error([&] { write_solver_state_hdf5(SolverState(), path); }, {path});
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
