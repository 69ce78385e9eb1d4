// A short training through `xtrain train`, for the tests of what it leaves
// behind: its log, <prefix>_metrics.jsonl and <prefix>_report.html. A
// LeNet-like net on DummyData (random images and labels: a few seconds).
#pragma once

#include <string>

#include "test_net_text.hpp"
#include "tool_runner.hpp"

namespace xtrain::testing {

inline std::string tiny_lenet_net() {
  return R"(name: "TinyLeNet"
)" + testing::random_data_and_labels({8, 1, 12, 12}, "type: 'uniform' min: 0 max: 3.99") +
         R"(
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 8 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1"
        inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" top: "loss" }
layer { name: "accuracy" type: "Accuracy" bottom: "ip1" bottom: "label" top: "accuracy"
        include { phase: TEST } }
)";
}

// Writes the net and a solver into `dir` and trains `max_iter` iterations
// (display 10, test every 20, snapshot every 30) with `extra_flags`; the
// snapshots and report are <dir>/tiny_*.
inline ToolResult train_tiny_lenet(const TempDir& dir, int max_iter,
                                   const std::string& extra_flags = "") {
  const std::string net = dir.write("tiny_lenet.prototxt", tiny_lenet_net());
  const std::string solver = dir.write(
      "tiny_solver.prototxt", "net: \"" + net +
                                  "\"\ntest_iter: 2\ntest_interval: 20\nbase_lr: 0.01\n"
                                  "lr_policy: \"inv\"\ngamma: 0.01\npower: 0.75\nmomentum: 0.9\n"
                                  "display: 10\nmax_iter: " +
                                  std::to_string(max_iter) + "\nsnapshot: 30\nsnapshot_prefix: \"" +
                                  dir.file("tiny") + "\"\nrandom_seed: 1\nsolver_mode: CPU\n");
  return run_tool(tool_path("xtrain") + " train --solver=" + solver + " " + extra_flags + " > " +
                      dir.file("train.log") + " 2>&1; status=$?; cat " + dir.file("train.log") +
                      "; exit $status",
                  dir.path());
}

}  // namespace xtrain::testing
