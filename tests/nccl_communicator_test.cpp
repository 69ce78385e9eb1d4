// The NCCL communicator (src/comm/nccl_communicator.hpp). Without a GPU only
// its failure paths can run here: making one must throw xtrain::Error, never
// crash. The single-rank tests that move data need a GPU (GPU/NcclCommunicator.*)
// and skip otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "comm/collective_messages.hpp"
#include "device_test_support.hpp"
#include "error_message.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/error.hpp"

#ifdef XTRAIN_USE_CUDA
#include "comm/nccl_communicator.hpp"
#endif

namespace xtrain {
namespace {

using testing::error_of;
using testing::expect_error;

TEST(CommunicatorMessages, TimeoutNamesRankCollectiveCountAndRemedy) {
  EXPECT_EQ(comm_messages::timeout(comm_messages::where(0, 2, "allreduce", 431080), 30),
            "rank 0 of 2: allreduce of 431,080 values did not finish within 30 s: another rank "
            "died or hangs (raise --collective_timeout if it is just slow)");
  EXPECT_EQ(comm_messages::where(3, 4, "barrier", 0), "rank 3 of 4: barrier");
  EXPECT_EQ(comm_messages::with_thousands(999), "999");
  EXPECT_EQ(comm_messages::with_thousands(1000), "1,000");
  EXPECT_EQ(comm_messages::with_thousands(1234567), "1,234,567");
}

TEST(CommunicatorDeviceMemory, HostBackendsTakeHostPointers) {
  auto comm = make_communicator(ProcessGroup{}, 1.0);
  EXPECT_FALSE(comm->works_on_device_memory());
}

#ifdef XTRAIN_USE_CUDA

TEST(NcclCommunicator, WithoutAGpuSetUpThrowsAnError) {
  if (testing::gpu_unavailable_reason().empty()) {
    GTEST_SKIP() << "a GPU is present: GPU/NcclCommunicator.OneRank* cover set-up";
  }
  auto bootstrap = make_communicator(ProcessGroup{}, 1.0);
  const std::string message = error_of([&] { make_nccl_communicator(*bootstrap, 0, 1.0); });
  ASSERT_FALSE(message.empty()) << "make_nccl_communicator did not throw without a GPU";
  if (nccl_available()) {
    EXPECT_NE(message.find("rank 0 of 1: NCCL set-up: CUDA device 0 cannot be used"),
              std::string::npos)
        << message;
  } else {
    EXPECT_NE(message.find("built without NCCL"), std::string::npos) << message;
  }
}

TEST(NcclCommunicator, RejectsBadArguments) {
  if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
  auto bootstrap = make_communicator(ProcessGroup{}, 1.0);
  EXPECT_NE(
      error_of([&] { make_nccl_communicator(*bootstrap, -1, 1.0); }).find("no CUDA device -1"),
      std::string::npos);
  expect_error([&] { make_nccl_communicator(*bootstrap, 0, 0.0); }, {"must be > 0"});
}

// One rank: the sum and the broadcast leave the values, on the device.
XTRAIN_GPU_TEST(NcclCommunicator, OneRankCollectivesOnDeviceMemory) {
  if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
  auto bootstrap = make_communicator(ProcessGroup{}, 10.0);
  auto comm = make_nccl_communicator(*bootstrap, 0, 10.0);
  EXPECT_EQ(comm->backend(), "nccl");
  EXPECT_TRUE(comm->works_on_device_memory());
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);

  // Through a Blob: its gpu_data is device memory on GPU 0 (the test binary
  // does not link the CUDA runtime itself).
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};  // odd count
  Blob blob({static_cast<int>(values.size())});
  std::copy(values.begin(), values.end(), blob.mutable_cpu_data());
  float* device_values = blob.mutable_gpu_data();
  comm->allreduce_sum(device_values, values.size());
  comm->broadcast(device_values, values.size(), 0);
  comm->barrier();
  const float* back = blob.cpu_data();
  EXPECT_EQ(std::vector<float>(back, back + values.size()), values);
  expect_error([&] { comm->broadcast(device_values, 1, 1); }, {"broadcast from rank 1"});
}

#endif  // XTRAIN_USE_CUDA

}  // namespace
}  // namespace xtrain
