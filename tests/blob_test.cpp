// Blob: shapes, memory reuse, proto round trips (current and legacy forms).
#include <gtest/gtest.h>

#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

TEST(Blob, ShapeCountsAndAxes) {
  Blob blob({2, 3, 4, 5});
  EXPECT_EQ(blob.count(), 120u);
  EXPECT_EQ(blob.count(1), 60u);
  EXPECT_EQ(blob.count(1, 3), 12u);
  EXPECT_EQ(blob.shape(-1), 5);
  EXPECT_EQ(blob.canonical_axis_index(-4), 0);
  EXPECT_THROW(blob.canonical_axis_index(4), Error);
  EXPECT_EQ(blob.num(), 2);
  EXPECT_EQ(blob.width(), 5);
  EXPECT_EQ(blob.offset(1, 2, 3, 4), 119u);
  EXPECT_EQ(blob.shape_string(), "2 3 4 5 (120)");
  Blob scalar(std::vector<int>{});
  EXPECT_EQ(scalar.count(), 1u);
  EXPECT_EQ(scalar.num_axes(), 0);
}

TEST(Blob, ReshapeWithinCapacityKeepsTheMemory) {
  Blob blob({4, 10});
  const float* before = blob.mutable_cpu_data();
  blob.reshape({2, 10});
  EXPECT_EQ(blob.mutable_cpu_data(), before);
  blob.reshape({4, 10});
  EXPECT_EQ(blob.mutable_cpu_data(), before);
  blob.reshape({8, 10});  // grows: new memory
  EXPECT_EQ(blob.count(), 80u);
  EXPECT_THROW(blob.reshape({-1, 2}), Error);
}

TEST(Blob, FreshMemoryIsZeroAndUpdateSubtractsTheDiff) {
  Blob blob({3});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(blob.cpu_data()[i], 0.0f);
  float* data = blob.mutable_cpu_data();
  float* diff = blob.mutable_cpu_diff();
  for (int i = 0; i < 3; ++i) {
    data[i] = 1.0f + i;
    diff[i] = 0.5f;
  }
  blob.update();
  EXPECT_EQ(blob.cpu_data()[2], 2.5f);
  EXPECT_DOUBLE_EQ(blob.asum_data(), 0.5 + 1.5 + 2.5);
  EXPECT_DOUBLE_EQ(blob.sumsq_diff(), 0.75);
  blob.scale_diff(2.0f);
  EXPECT_EQ(blob.cpu_diff()[0], 1.0f);
}

TEST(Blob, SharedDataIsOneBuffer) {
  Blob a({2, 2});
  Blob b({4});
  b.share_data(a);
  a.mutable_cpu_data()[3] = 7.0f;
  EXPECT_EQ(b.cpu_data()[3], 7.0f);
}

TEST(Blob, ProtoRoundTripWithDiff) {
  Blob blob({2, 3});
  for (int i = 0; i < 6; ++i) {
    blob.mutable_cpu_data()[i] = i * 1.5f;
    blob.mutable_cpu_diff()[i] = -i;
  }
  BlobProto proto;
  blob.to_proto(&proto, true);
  EXPECT_EQ(proto.shape().dim_size(), 2);
  EXPECT_EQ(proto.diff_size(), 6);
  Blob copy;
  copy.from_proto(proto);
  EXPECT_EQ(copy.shape(), blob.shape());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(copy.cpu_data()[i], blob.cpu_data()[i]);
    EXPECT_EQ(copy.cpu_diff()[i], blob.cpu_diff()[i]);
  }
  EXPECT_TRUE(copy.shape_equals(proto));
}

TEST(Blob, ReadsLegacyFourDAndDoubleData) {
  // A mean file as old Caffe wrote it: num/channels/height/width, doubles.
  BlobProto proto;
  proto.set_num(1);
  proto.set_channels(2);
  proto.set_height(1);
  proto.set_width(2);
  for (int i = 0; i < 4; ++i) proto.add_double_data(0.25 * i);
  Blob blob;
  blob.from_proto(proto);
  EXPECT_EQ(blob.shape(), (std::vector<int>{1, 2, 1, 2}));
  EXPECT_EQ(blob.cpu_data()[3], 0.75f);
}

TEST(Blob, LegacyFourDShapesMatchLowerDimensionalBlobs) {
  // Caffe's old files store a bias of 4 as 1 x 1 x 1 x 4 and an inner-product
  // weight of 4 x 3 as 1 x 1 x 4 x 3.
  BlobProto bias;
  bias.set_num(1);
  bias.set_channels(1);
  bias.set_height(1);
  bias.set_width(4);
  for (int i = 0; i < 4; ++i) bias.add_data(1.0f * i);
  Blob target({4});
  EXPECT_TRUE(target.shape_equals(bias));
  target.from_proto(bias, false);
  EXPECT_EQ(target.shape(), (std::vector<int>{4}));
  EXPECT_EQ(target.cpu_data()[3], 3.0f);
  Blob wrong({5});
  EXPECT_FALSE(wrong.shape_equals(bias));
}

TEST(Blob, FromProtoWithoutReshapeChecksTheShape) {
  BlobProto proto;
  proto.mutable_shape()->add_dim(5);
  for (int i = 0; i < 5; ++i) proto.add_data(1.0f);
  Blob blob({4});
  EXPECT_THROW(blob.from_proto(proto, false), Error);
  proto.add_data(2.0f);  // 6 values for 5 elements
  Blob other;
  EXPECT_THROW(other.from_proto(proto), Error);
}

TEST(SyncedMemory, HeadFollowsTheLastWriter) {
  SyncedMemory memory(16);
  EXPECT_EQ(memory.head(), SyncedMemory::Head::kUninitialized);
  memory.cpu_data();
  EXPECT_EQ(memory.head(), SyncedMemory::Head::kAtCpu);
  static_cast<float*>(memory.mutable_cpu_data())[0] = 3.0f;
  EXPECT_EQ(static_cast<const float*>(memory.cpu_data())[0], 3.0f);
  std::string why;
  if (cuda_device_count(&why) == 0) {
    // Without a GPU the device side is a clear error, not a crash.
    EXPECT_THROW(memory.gpu_data(), Error);
  } else {
    memory.gpu_data();
    EXPECT_EQ(memory.head(), SyncedMemory::Head::kSynced);
  }
}

}  // namespace
}  // namespace xtrain
