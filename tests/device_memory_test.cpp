// Where a blob's arithmetic runs and what a training loop allocates, on each
// device: Blob::update/scale/sums work where the newest values are (on the
// GPU when its copy is the head, as in Caffe), and once training runs no
// iteration allocates memory, on the host or (through the caching allocator)
// on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "test_net_text.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"
#include "xtrain/synced_memory.hpp"

#ifdef XTRAIN_USE_CUDA
#include "core/device_memory.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain::testing {
namespace {

// data = 1..6, diff = 0.5, -1, 1.5, ...; on the GPU both heads move there.
Blob blob_with_values() {
  Blob blob({2, 3});
  float* data = blob.mutable_cpu_data();
  float* diff = blob.mutable_cpu_diff();
  for (int i = 0; i < 6; ++i) {
    data[i] = static_cast<float>(i + 1);
    diff[i] = (i % 2 == 0 ? 0.5f : -1.0f) * static_cast<float>(i + 1);
  }
  if (current_device().is_gpu()) {
    blob.mutable_gpu_data();
    blob.mutable_gpu_diff();
  }
  return blob;
}

SyncedMemory::Head expected_head() {
  return current_device().is_gpu() ? SyncedMemory::Head::kAtGpu : SyncedMemory::Head::kAtCpu;
}

XTRAIN_DEVICE_TEST(DeviceMemory, BlobArithmeticRunsWhereTheValuesAre) {
  Blob blob = blob_with_values();
  double sumsq = 0;
  double asum = 0;
  for (int i = 0; i < 6; ++i) {
    const double d = (i % 2 == 0 ? 0.5 : -1.0) * (i + 1);
    sumsq += d * d;
    asum += i + 1;
  }
  EXPECT_NEAR(blob.sumsq_diff(), sumsq, 1e-4);
  EXPECT_NEAR(blob.asum_data(), asum, 1e-4);
  blob.scale_diff(2.0f);
  blob.update();  // data - 2 * diff
  EXPECT_EQ(blob.data_memory()->head(), expected_head()) << "the update left its device";
  EXPECT_EQ(blob.diff_memory()->head(), expected_head());
  const float* data = blob.cpu_data();
  for (int i = 0; i < 6; ++i) {
    const float diff = (i % 2 == 0 ? 0.5f : -1.0f) * static_cast<float>(i + 1);
    EXPECT_FLOAT_EQ(data[i], static_cast<float>(i + 1) - 2.0f * diff) << i;
  }
}

XTRAIN_DEVICE_TEST(DeviceMemory, HostAndDeviceCopiesFollowTheNewestWrite) {
  Blob blob = blob_with_values();
  blob.scale_data(-1.0f);  // on the device when the device holds the head
  EXPECT_FLOAT_EQ(blob.cpu_data()[5], -6.0f);
  EXPECT_EQ(blob.data_memory()->head(),
            current_device().is_gpu() ? SyncedMemory::Head::kSynced : SyncedMemory::Head::kAtCpu);
  blob.mutable_cpu_data()[5] = 42.0f;  // the host is newest again
  blob.scale_data(0.5f);
  EXPECT_FLOAT_EQ(blob.cpu_data()[5], 21.0f);
}

const std::string kTinyTrainNet = R"(name: "tiny"
)" + testing::random_data_and_labels({8, 3, 6, 6}, "type: 'constant' value: 1") +
                                  R"(
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip"
  inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

XTRAIN_DEVICE_TEST(DeviceMemory, SteadyStateTrainingAllocatesNothing) {
  SolverParameter param;
  read_proto_from_text_string(
      "base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'fixed' max_iter: 10 "
      "display: 0 random_seed: 3 clip_gradients: 10",
      &param, "solver");
  read_proto_from_text_string(kTinyTrainNet, param.mutable_net_param(), "net");
  SolverOptions options;
  options.device = current_device();
  options.verbose_nets = false;
  std::unique_ptr<Solver> solver = create_solver(param, options);
  solver->step(2);
  const std::size_t host_before = SyncedMemory::host_allocation_count();
  const std::size_t device_before =
      current_device().is_gpu() ? gpu_memory_statistics(0).device_allocations : 0;
  solver->step(3);
  EXPECT_EQ(SyncedMemory::host_allocation_count(), host_before);
  if (current_device().is_gpu()) {
    EXPECT_EQ(gpu_memory_statistics(0).device_allocations, device_before)
        << "cudaMalloc in the steady state: the caching allocator missed";
    EXPECT_GT(gpu_memory_statistics(0).peak_in_use_bytes, 0u);
  }
  EXPECT_TRUE(std::isfinite(solver->net().blobs().back()->cpu_data()[0]));
}

#ifdef XTRAIN_USE_CUDA
// An upload from page-locked memory does not wait for the copy (no stall of
// the stream): the next host write must wait for it instead, or it would
// race the DMA engine still reading the buffer. 64 MiB makes a race likely.
XTRAIN_GPU_TEST(AsyncUpload, AHostWriteAfterAnUploadNeverReachesTheDevicesCopy) {
  use_device(Device::gpu(0));
  const std::size_t count = std::size_t{16} << 20;
  Blob uploaded({static_cast<int>(count)});
  Blob snapshot({static_cast<int>(count)});
  float* host = uploaded.mutable_cpu_data();
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000);
  // Queued on the stream in this order: the upload, a device-side copy of
  // what arrived; then the host overwrites its copy at once.
  const float* device_values = uploaded.gpu_data();
  math::gpu::copy(count, device_values, snapshot.mutable_gpu_data());
  float* rewritten = uploaded.mutable_cpu_data();
  for (std::size_t i = 0; i < count; ++i) rewritten[i] = -1.0f;
  const float* arrived = snapshot.cpu_data();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += arrived[i] != static_cast<float>(i % 1000);
  EXPECT_EQ(wrong, 0u) << "values the host wrote after the upload reached the device";
  EXPECT_FLOAT_EQ(uploaded.cpu_data()[7], -1.0f);
}

// A marker belongs to the GPU whose stream it first marked: recording it
// for another GPU's stream is refused (before any call on that GPU, so one
// GPU shows it).
XTRAIN_GPU_TEST(AsyncUpload, AStreamMarkerRefusesAnotherGpusStream) {
  use_device(Device::gpu(0));
  device_memory::StreamMarker marker;
  marker.record(0);
  try {
    marker.record(1);
    FAIL() << "a marker of GPU 0 recorded GPU 1's stream";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("of GPU 0 cannot mark the stream of GPU 1"),
              std::string::npos)
        << error.what();
  }
}

// One thread, two GPUs: a blob of GPU 1 uploaded while the thread's current
// device is GPU 0 (a program driving nets on both). The upload is queued on
// GPU 1's stream, so its marker must be too: the host write that follows
// then waits for the copy, and GPU 1 holds the values from before it.
XTRAIN_GPU_TEST(AsyncUpload, AnUploadToAGpuNotTheThreadsIsWaitedForToo) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  const std::size_t count = std::size_t{16} << 20;
  use_device(Device::gpu(1));
  Blob uploaded({static_cast<int>(count)});
  const void* on_gpu1 = uploaded.mutable_gpu_data();  // the blob's GPU: 1
  float* host = uploaded.mutable_cpu_data();
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000);
  use_device(Device::gpu(0));
  ASSERT_EQ(uploaded.gpu_data(), on_gpu1);
  float* rewritten = uploaded.mutable_cpu_data();
  for (std::size_t i = 0; i < count; ++i) rewritten[i] = -1.0f;
  std::vector<float> arrived(count);
  device_memory::copy_to_host(arrived.data(), on_gpu1, count * sizeof(float), 1);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += arrived[i] != static_cast<float>(i % 1000);
  EXPECT_EQ(wrong, 0u) << "values the host wrote after the upload reached GPU 1";
}
#endif

}  // namespace
}  // namespace xtrain::testing
