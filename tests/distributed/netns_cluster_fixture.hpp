// The namespace cluster of the network tests (scripts/netns_cluster.sh):
// a fixture that makes and removes the cluster, starts ranks on its nodes
// (mpirun, or one process per node for the Gloo tests) and trains LeNet on a
// Fashion-MNIST subset. Needs root; skips with the reason elsewhere.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>

#include "distributed/data_parallel_fixture.hpp"
#include "fashion_mnist_files.hpp"
#include "mpi_runner.hpp"
#include "resume/training_process.hpp"
#include "tool_runner.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline std::string cluster_script() {
  return "bash " + (std::filesystem::path(XTRAIN_SOURCE_DIR) / "scripts" / "netns_cluster.sh").string();
}

class NetnsCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (uses_mpi()) {
      if (!mpi_available()) GTEST_SKIP() << "this build has no MPI (libopenmpi-dev)";
      if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
      if (run_tool("mpirun --version").output.find("Open MPI") == std::string::npos) {
        GTEST_SKIP() << "the namespace cluster drives Open MPI's mpirun (its rsh agent and MCA "
                        "options); this mpirun is another MPI's";
      }
    } else if (!gloo_available()) {
      GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
    }
    const ToolResult check = run_tool(cluster_script() + " check");
    if (check.exit_code == 77) GTEST_SKIP() << "no namespace cluster here: " << check.output;
    ASSERT_EQ(check.exit_code, 0) << check.output;
    XTRAIN_SKIP_WITHOUT_FASHION_MNIST();
    write_fashion_mnist_subset("train", 2000, source_);
  }

  // Whether the tests start their ranks with mpirun (else: one process per
  // node that meets the others in a shared directory, Gloo).
  virtual bool uses_mpi() const { return true; }

  void TearDown() override {
    if (up_) run_tool(cluster_script() + " --name " + name_ + " down");
  }

  // Makes the cluster of `nodes` nodes (again), each link at `rate` if given.
  void up(int nodes, const std::string& options = "") {
    if (up_) run_tool(cluster_script() + " --name " + name_ + " down");
    const ToolResult made = run_tool(cluster_script() + " --name " + name_ + " up " +
                                     std::to_string(nodes) + " --owner " +
                                     std::to_string(::getpid()) + " " + options);
    ASSERT_EQ(made.exit_code, 0) << made.output;
    up_ = true;
  }

  std::string cluster(const std::string& command) const {
    return cluster_script() + " --name " + name_ + " " + command;
  }

  // `xtrain train` on every node of the cluster: one rank per node, under
  // `timeout` so that a hang fails the test instead of blocking it.
  std::string mpirun(int ranks, const std::string& train_arguments, int limit_seconds = 120) const {
    return "timeout " + std::to_string(limit_seconds) + " " +
           cluster("mpirun -np " + std::to_string(ranks) + " env OMP_NUM_THREADS=1 " +
                   tool_path("xtrain") + " train " + train_arguments);
  }

  // LeNet (models/lenet) with batch `batch` on the subset; snapshots to `name`.
  std::string solver(const std::string& name, int batch, int max_iter,
                     const std::string& extra = "") {
    const std::string model =
        read_text((std::filesystem::path(XTRAIN_SOURCE_DIR) / "models/lenet/lenet_train_test.prototxt")
                      .string());
    std::string net = std::regex_replace(model, std::regex("data/fashion_mnist/t\\w+_lmdb"), source_);
    net = std::regex_replace(net, std::regex("batch_size: 64"), "batch_size: " + std::to_string(batch));
    const std::string net_path = dir_.write(name + "_net.prototxt", net);
    return dir_.write(name + "_solver.prototxt",
                      "net: '" + net_path +
                          "'\nbase_lr: 0.01\nmomentum: 0.9\nweight_decay: 0.0005\n"
                          "lr_policy: 'inv'\ngamma: 0.0001\npower: 0.75\ndisplay: 1\n"
                          "max_iter: " + std::to_string(max_iter) +
                          "\nrandom_seed: 1701\nsolver_mode: CPU\nsnapshot_prefix: '" +
                          dir_.file(name) + "'\n" + extra);
  }

  NetParameter weights(const std::string& name, int iteration) const {
    NetParameter model;
    read_proto_from_binary_file(
        dir_.file(name) + "_iter_" + std::to_string(iteration) + ".caffemodel", &model);
    return model;
  }

  std::string name_ = "xt" + std::to_string(::getpid());
  bool up_ = false;
  TempDir dir_{"netns_cluster"};
  std::string source_ = dir_.file("fashion_lmdb");
};

}  // namespace xtrain::testing
