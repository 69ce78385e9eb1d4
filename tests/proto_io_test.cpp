// Reading and writing prototxt and binary protos.
#include "xtrain/proto_io.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "error_message.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

std::string temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("xtrain_proto_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(ProtoIo, MisspeltFieldIsAnErrorWithFileLineAndColumn) {
  const std::string path = temp_dir() + "/bad.prototxt";
  write_text(path, "name: \"x\"\nlayer {\n  name: \"conv1\"\n  tpye: \"Convolution\"\n}\n");
  NetParameter param;
  testing::expect_error([&] { read_proto_from_text_file(path, &param); }, {path + ":4:", "tpye"});
}

TEST(ProtoIo, BinaryRoundTripIsAtomicAndExact) {
  const std::string path = temp_dir() + "/blob.binaryproto";
  BlobProto blob;
  for (int d : {1, 3, 2, 2}) blob.mutable_shape()->add_dim(d);
  for (int i = 0; i < 12; ++i) blob.add_data(0.5f * i);
  write_proto_to_binary_file(blob, path);
  BlobProto read;
  read_proto_from_binary_file(path, &read);
  EXPECT_EQ(read.SerializeAsString(), blob.SerializeAsString());
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(temp_dir())) {
    files += entry.path().string().find(".tmp.") != std::string::npos;
  }
  EXPECT_EQ(files, 0);
}

// The rename at the end could not replace a directory: refused before a
// byte is written, with nothing left beside it.
TEST(ProtoIo, WritingOverADirectoryIsAnErrorBeforeAnythingIsWritten) {
  const std::string folder = temp_dir() + "/weights_folder";
  std::filesystem::create_directories(folder);
  BlobProto blob;
  blob.add_data(1.0f);
  testing::expect_error([&] { write_proto_to_binary_file(blob, folder); },
                        {"cannot write '" + folder + "': it is a directory"});
  int temporary_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(temp_dir())) {
    temporary_files += entry.path().string().find("weights_folder.tmp.") != std::string::npos;
  }
  EXPECT_EQ(temporary_files, 0);
  std::filesystem::remove_all(folder);
}

TEST(ProtoIo, HandWrittenWireBytesMatchCaffeFieldNumbers) {
  // A BlobProto written byte by byte per Caffe's schema: shape (field 7)
  // holding dim (field 1, packed) = {2}, data (field 5, packed floats) = {1, 2}.
  // Serialisers write fields in number order, so data comes first.
  const unsigned char bytes[] = {0x2a, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,  // data
                                 0x3a, 0x03, 0x0a, 0x01, 0x02};                               // shape
  BlobProto blob;
  ASSERT_TRUE(blob.ParseFromArray(bytes, sizeof(bytes)));
  ASSERT_EQ(blob.shape().dim_size(), 1);
  EXPECT_EQ(blob.shape().dim(0), 2);
  ASSERT_EQ(blob.data_size(), 2);
  EXPECT_EQ(blob.data(0), 1.0f);
  EXPECT_EQ(blob.data(1), 2.0f);
  EXPECT_EQ(blob.SerializeAsString(), std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

// Protobuf's SerializeAsString gives bytes that are no record for a message
// over 2 GB, without an error: convert_imageset wrote such a record of a
// 30000 x 30000 colour image and counted it written. (2 GiB of memory for
// a moment.)
TEST(ProtoIo, ARecordOverTwoGigabytesIsAnErrorNamingIt) {
  Datum small;
  small.set_data("abc");
  EXPECT_EQ(serialize_record(small, "'a.png'", "resize it"), small.SerializeAsString());
  Datum huge;
  huge.set_data(std::string(std::size_t{1} << 31, '\0'));
  testing::expect_error([&] { serialize_record(huge, "'big.png' (3x30000x30000)", "resize it"); },
                        {"'big.png' (3x30000x30000): a record of 2147483654 bytes is more than the "
                         "2 GB (2147483647 bytes) a protobuf message can hold; resize it"});
}

TEST(ProtoIo, MissingFileNamesThePath) {
  NetParameter param;
  EXPECT_THROW(read_proto_from_binary_file("/nonexistent/x.caffemodel", &param), Error);
  testing::expect_error([&] { read_proto_from_text_file("/nonexistent/net.prototxt", &param); },
                        {"/nonexistent/net.prototxt"});
}

TEST(ProtoIo, CorruptBinaryIsAnError) {
  const std::string path = temp_dir() + "/corrupt.caffemodel";
  write_text(path, "this is not a protobuf \xff\xff\xff");
  NetParameter param;
  EXPECT_THROW(read_proto_from_binary_file(path, &param), Error);
}

TEST(ProtoIo, SolverFindsItsNetBesideIt) {
  const std::string dir = temp_dir() + "/solverdir";
  std::filesystem::create_directories(dir);
  write_text(dir + "/net.prototxt", "name: \"n\"\n");
  write_text(dir + "/my_solver.prototxt", "net: \"net.prototxt\"\nbase_lr: 0.1\n");
  const SolverParameter param = read_solver_params_from_text_file(dir + "/my_solver.prototxt");
  EXPECT_EQ(param.net(), dir + "/net.prototxt");
}

TEST(ProtoIo, StockCaffeLenetFilesParse) {
  const std::string dir = std::string(XTRAIN_SOURCE_DIR) + "/tests/fixtures/caffe_stock_lenet";
  NetParameter net;
  read_proto_from_text_file(dir + "/lenet_train_test.prototxt", &net);
  EXPECT_EQ(net.layer_size(), 11);
  SolverParameter solver;
  read_proto_from_text_file(dir + "/lenet_solver.prototxt", &solver);
  EXPECT_EQ(solver.lr_policy(), "inv");
  EXPECT_EQ(solver.max_iter(), 10000);
}

}  // namespace
}  // namespace xtrain
