// The data wait: how long forward waits for the Data layer's prefetch,
// measured per layer, reported by the net, the solver and xtrain time.
#include "xtrain/data_wait.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "data/data_layer.hpp"
#include "data_layer_fixture.hpp"
#include "pattern_images.hpp"
#include "tool_runner.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

using namespace data_layer_fixture;

// ---------------------------------------------------------------------------
// Data wait
// ---------------------------------------------------------------------------

// A reader slower than its consumer (large PNGs, one thread, one batch
// ahead): forward waits nearly all the time. With the batches loaded ahead,
// it hardly waits.
TEST(DataLayer, DataWaitIsMeasuredAndTaken) {
  TempDir dir("data_layer");
  testing::write_encoded_lmdb(
      dir.file("db"), 8, [](int i) { return encode_mat(pattern_mat(3, 256, 256, i), ".png"); },
      [](int i) { return i; });
  DataLayer layer(data_param(dir.file("db"), 4, "data_param { decode_threads: 1 prefetch: 1 }"));
  Tops tops;
  layer.setup({}, tops.both());
  EXPECT_EQ(layer.take_data_wait_seconds(), 0.0);
  layer.forward({}, tops.both());  // starts the threads
  EXPECT_GT(layer.take_data_wait_seconds(), 0.0);
  const auto start = Clock::now();
  for (int i = 0; i < 4; ++i) layer.forward({}, tops.both());
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double waited = layer.take_data_wait_seconds();
  EXPECT_GT(waited, 0.5 * wall);
  EXPECT_LE(waited, wall);
  EXPECT_LT(layer.take_data_wait_seconds(), 1e-3);  // taken: counting starts again

  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (layer.batches_read() < 5 + 1 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // and decoded
  layer.take_data_wait_seconds();
  layer.forward({}, tops.both());
  EXPECT_LT(layer.take_data_wait_seconds(), 0.05);
}

TEST(DataLayer, NetReportsTheWaitOfItsDataLayers) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 10, DatumShape{1, 1, 2});
  NetParameter with_data;
  *with_data.add_layer() = data_param(dir.file("db"), 5);
  NetParameter without_data;
  read_proto_from_text_string(
      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 1 } } }",
      &without_data);
  with_data.mutable_state()->set_phase(TRAIN);
  without_data.mutable_state()->set_phase(TRAIN);
  Net net(with_data);
  EXPECT_TRUE(reports_data_wait(net));
  net.forward();  // the first batch is always waited for
  const double waited = take_data_wait_seconds(net);
  EXPECT_GT(waited, 0.0);
  EXPECT_LT(waited, 10.0);
  EXPECT_FALSE(reports_data_wait(Net(without_data)));
}

// The solver's display shows the share of time spent waiting, on a line of
// its own that Caffe's parse_log ignores; `xtrain time` prints it per layer.
TEST(DataLayer, SolverAndTimeShowTheDataWait) {
  TempDir dir("data_layer");
  write_db(dir.file("db"), 20, DatumShape{1, 4, 4});
  dir.write("net.prototxt",
            "layer { name: 'data' type: 'Data' top: 'data' top: 'label' "
            "  data_param { source: '" +
                dir.file("db") +
                "' batch_size: 4 backend: LMDB } }\n"
                "layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip' "
                "  inner_product_param { num_output: 120 weight_filler { type: 'xavier' } } }\n"
                "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' "
                "  top: 'loss' }\n");
  dir.write("solver.prototxt", "net: '" + dir.file("net.prototxt") +
                                   "' base_lr: 0.01 lr_policy: 'fixed' max_iter: 6 display: 2 "
                                   "snapshot_after_train: false solver_mode: CPU\n");
  const auto train = testing::run_tool(testing::tool_path("xtrain") +
                                       " train --solver=" + dir.file("solver.prototxt"));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  // Caffe's parse_log regexes still match the display line.
  EXPECT_TRUE(std::regex_search(
      train.output,
      std::regex(R"(Iteration 2 \([0-9.e+]+ iter/s, [0-9.e+-]+s/2 iters\), loss = )")))
      << train.output;
  const std::regex wait_line(
      R"(\]     Data wait: ([0-9]+\.[0-9])% of the time since the last display)");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(train.output, match, wait_line)) << train.output;
  const double share = std::stod(match[1]);
  EXPECT_GE(share, 0.0);
  EXPECT_LE(share, 100.0);

  const auto time =
      testing::run_tool(testing::tool_path("xtrain") + " time --model=" + dir.file("net.prototxt") +
                        " --iterations=3");
  ASSERT_EQ(time.exit_code, 0) << time.output;
  EXPECT_TRUE(std::regex_search(
      time.output,
      std::regex(R"(data wait of data: [0-9.]+ ms per iteration \([0-9.]+% of the time\))")))
      << time.output;
}

}  // namespace
}  // namespace xtrain
