// Data-parallel training with replicas on threads of one process (what
// `xtrain train --gpu=0,1` runs, one replica per GPU): N replicas with batch B
// give the weights of one solver with batch N*B, whatever the bucket size; a
// replica that fails or stalls ends the training with a clear error instead
// of a hang. The CPU instances run here; the GPU one needs two GPUs.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/device_memory.hpp"
#include "device_test_support.hpp"
#include "distributed/data_parallel_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace xtrain::testing {
namespace {

class ThreadReplicaTraining : public ::testing::Test {
 protected:
  ThreadReplicaTraining() { write_images(source_, 60); }

  SolverParameter solver_param(int batch, int max_iter) const {
    SolverParameter param;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
        "base_lr: 0.05 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'step' gamma: 0.5 "
        "stepsize: 4 iter_size: 2 display: 0 random_seed: 11 snapshot_after_train: false "
        "max_iter: " +
            std::to_string(max_iter),
        &param));
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(net_text(source_, batch),
                                                              param.mutable_net_param()));
    return param;
  }

  static SolverOptions quiet(const Device& device) {
    SolverOptions options;
    options.device = device;
    options.verbose_nets = false;
    return options;
  }

  NetParameter train_alone(int batch, const Device& device = Device::cpu()) const {
    std::unique_ptr<Solver> solver = create_solver(solver_param(batch, kIterations), quiet(device));
    solver->solve();
    NetParameter weights;
    solver->net().to_proto(&weights);
    return weights;
  }

  // Every replica's weights after training; `devices` gives the count.
  // GPU replicas sum with NCCL unless `nccl` is false (then on the host, as
  // CPU replicas do: two replicas can share one GPU). `prepare` sees each
  // replica's solver before it trains.
  std::vector<NetParameter> train_replicas(
      const std::vector<Device>& devices, int batch, std::size_t bucket_bytes, bool nccl = true,
      const std::function<void(Solver&, int rank)>& prepare = nullptr) const {
    const int count = static_cast<int>(devices.size());
    ThreadReplicas group(count, 60);
    std::vector<NetParameter> weights(devices.size());
    group.run([&](int rank) {
      const Device device = devices[static_cast<std::size_t>(rank)];
      if (device.is_gpu()) use_device(device);
      std::unique_ptr<Communicator> gpu_exchange;
      if (device.is_gpu() && nccl)
        gpu_exchange = make_gpu_communicator(group.communicator(rank), device.id, 60);
      SolverOptions options = quiet(device);
      options.communicator = &group.communicator(rank);
      options.gradient_communicator = gpu_exchange.get();
      options.gradient_bucket_bytes = bucket_bytes;
      std::unique_ptr<Solver> solver = create_solver(solver_param(batch, kIterations), options);
      if (prepare) prepare(*solver, rank);
      solver->solve();
      solver->net().to_proto(&weights[static_cast<std::size_t>(rank)]);
    });
    return weights;
  }

  // Two CPU replicas train until replica 1, after its third update, runs
  // `trouble`; returns the error the group ends with ("" if none).
  std::string train_until_failure(double timeout_seconds, const std::function<void()>& trouble) {
    ThreadReplicas group(2, timeout_seconds);
    try {
      group.run([&](int rank) {
        SolverOptions options = quiet(Device::cpu());
        options.communicator = &group.communicator(rank);
        std::unique_ptr<Solver> solver = create_solver(solver_param(4, 1000), options);
        const Solver* self = solver.get();
        solver->set_action_request_function([&trouble, rank, self] {
          if (rank == 1 && self->iter() == 3) trouble();
          return Solver::Action::kNone;
        });
        solver->solve();
      });
    } catch (const Error& error) {
      return error.what();
    }
    ADD_FAILURE() << "the training did not fail";
    return "";
  }

  static constexpr int kIterations = 8;
  TempDir dir_{"thread_replicas"};
  std::string source_ = dir_.file("images_lmdb");
};

TEST_F(ThreadReplicaTraining, TwoReplicasWithBatchBTrainLikeOneSolverWithBatch2B) {
  const NetParameter alone = train_alone(8);
  const std::vector<NetParameter> replicas =
      train_replicas({Device::cpu(), Device::cpu()}, 4, /*bucket_bytes=*/256);
  EXPECT_LE(max_relative_difference(replicas[0], alone), 1e-5);
  EXPECT_EQ(max_relative_difference(replicas[1], replicas[0]), 0.0) << "replicas drifted apart";
  // The comparison can fail: batch 4 alone (half the data per update) ends elsewhere.
  EXPECT_GT(max_relative_difference(train_alone(4), alone), 1e-3);
}

TEST_F(ThreadReplicaTraining, ThreeReplicasAndAnyBucketSizeGiveTheSameWeights) {
  const NetParameter alone = train_alone(12);
  const std::vector<Device> cpus(3, Device::cpu());
  const std::vector<NetParameter> small = train_replicas(cpus, 4, /*bucket_bytes=*/64);
  const std::vector<NetParameter> one = train_replicas(cpus, 4, /*bucket_bytes=*/1 << 30);
  EXPECT_LE(max_relative_difference(small[0], alone), 1e-5);
  // The same sums in other groupings: the same bits.
  EXPECT_EQ(max_relative_difference(small[0], one[0]), 0.0);
  EXPECT_EQ(max_relative_difference(small[2], small[0]), 0.0);
}

TEST_F(ThreadReplicaTraining, AFailingReplicaEndsTheTrainingWithItsError) {
  const auto start = std::chrono::steady_clock::now();
  const std::string message =
      train_until_failure(60, [] { throw Error("replica 1 lost its data"); });
  EXPECT_EQ(message, "replica 1 lost its data");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0)
      << "the root waited for the timeout";
}

TEST_F(ThreadReplicaTraining, AStalledReplicaFailsTheTrainingWithinTheTimeout) {
  const std::string message =
      train_until_failure(0.5, [] { std::this_thread::sleep_for(std::chrono::seconds(2)); });
  EXPECT_NE(message.find("did not finish within 0.5 s: another rank died or hangs"),
            std::string::npos)
      << message;
}

// A node with another copy of the net file: the exchanges of buffers of
// other sizes would fail in MPI's terms, or wait.
TEST_F(ThreadReplicaTraining, ReplicasOfDifferentNetsAreRefusedNamingTheDifference) {
  ThreadReplicas group(2, 60);
  std::vector<std::string> messages(2, "(no error)");
  EXPECT_THROW(group.run([&](int rank) {
    SolverOptions options = quiet(Device::cpu());
    options.communicator = &group.communicator(rank);
    SolverParameter param = solver_param(4, kIterations);
    // conv 40 values; ip 3 x 64 + 3 on rank 0, 5 x 64 + 5 on rank 1.
    if (rank == 1) {
      param.mutable_net_param()->mutable_layer(4)->mutable_inner_product_param()->set_num_output(5);
    }
    try {
      create_solver(param, options)->solve();
    } catch (const Error& error) {
      messages[static_cast<std::size_t>(rank)] = error.what();
      throw;
    }
  }),
               Error);
  const std::string remedy =
      ": every rank must train the same net; give every rank the same "
      "solver and net files";
  EXPECT_NE(messages[0].find("1 of the 2 ranks built a train net whose learnable parameters "
                             "differ from rank 0's (their own errors say how)" +
                             remedy),
            std::string::npos)
      << messages[0];
  EXPECT_NE(messages[1].find("rank 1 of 2 built a train net whose learnable parameters differ "
                             "from rank 0's: 4 learnable blobs of 365 values here, 4 learnable "
                             "blobs of 235 values on rank 0" +
                             remedy),
            std::string::npos)
      << messages[1];
}

// One replica per GPU, gradients summed with NCCL: as one GPU with batch 2B.
// Without a GPU it skips, or fails under XTRAIN_REQUIRE_GPU=1 like every GPU
// test; with one GPU only it skips even then.
XTRAIN_GPU_TEST_F(ThreadReplicaTraining, TwoGpuReplicasTrainLikeOneGpuWithBatch2B) {
  std::string why;
  if (cuda_device_count(&why) < 2) GTEST_SKIP() << "needs two GPUs, one is visible";
  const NetParameter alone = train_alone(8, Device::gpu(0));
  const std::vector<NetParameter> replicas =
      train_replicas({Device::gpu(0), Device::gpu(1)}, 4, /*bucket_bytes=*/256);
  // cuDNN and NCCL sum in their own orders: float tolerance, not bits.
  EXPECT_LE(max_relative_difference(replicas[0], alone), 1e-4);
  EXPECT_EQ(max_relative_difference(replicas[1], replicas[0]), 0.0);
}

// Two replicas on one GPU, summing on the host: the data-parallel machinery
// (buckets summed while backward goes on, from the second iteration) on a
// machine with one GPU; gpu_check.sh also runs it under compute-sanitizer's
// memcheck.
XTRAIN_GPU_TEST_F(ThreadReplicaTraining, TwoReplicasOnOneGpuTrainLikeOneGpuWithBatch2B) {
  const NetParameter alone = train_alone(8, Device::gpu(0));
  const std::vector<NetParameter> replicas =
      train_replicas({Device::gpu(0), Device::gpu(0)}, 4, /*bucket_bytes=*/256, /*nccl=*/false);
  EXPECT_LE(max_relative_difference(replicas[0], alone), 1e-4);
  EXPECT_EQ(max_relative_difference(replicas[1], replicas[0]), 0.0);
}

// The GPU "fills up" in the middle of training (an injected out-of-memory:
// the next allocations find the device full): the sums in flight are waited
// for, the cache released, the allocation retried, and the training ends as
// without it (docs/cuda.md, "No free while a sum is in flight").
XTRAIN_GPU_TEST_F(ThreadReplicaTraining, AForcedOutOfMemoryMidTrainingIsRetried) {
  const NetParameter alone = train_alone(8, Device::gpu(0));
  const std::size_t releases_before = device_memory::cache_releases(0);
  const std::vector<NetParameter> replicas =
      train_replicas({Device::gpu(0), Device::gpu(0)}, 4, /*bucket_bytes=*/256, /*nccl=*/false,
                     [](Solver& solver, int rank) {
                       if (rank != 0) return;
                       const Solver* self = &solver;
                       solver.set_action_request_function([self] {
                         if (self->iter() == 3) device_memory::inject_out_of_memory(0, 4);
                         return Solver::Action::kNone;
                       });
                     });
  EXPECT_GT(device_memory::cache_releases(0), releases_before) << "no cache was released";
  EXPECT_LE(max_relative_difference(replicas[0], alone), 1e-4);
  EXPECT_EQ(max_relative_difference(replicas[1], replicas[0]), 0.0);
}

}  // namespace
}  // namespace xtrain::testing
