// End to end on real data: LeNet learns Fashion-MNIST (Debian's
// dataset-fashion-mnist, or XTRAIN_FASHION_MNIST_DIR; the tests skip without
// it), through the library and through the CLI with Caffe's stock LeNet files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>

#include "device_test_support.hpp"
#include "fashion_mnist_files.hpp"
#include "report_render_support.hpp"
#include "report_test_support.hpp"
#include "tool_runner.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/idx_file.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace xtrain::testing {
namespace {

constexpr int kTrainImages = 2000;
constexpr int kTestImages = 1000;

class LenetFashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fashion_mnist_missing_reason().empty()) return;
    if (suite_skips_for_lack_of_gpu()) return;
    workdir_ = std::make_unique<TempDir>("lenet_e2e");
    write_fashion_mnist_subset("train", kTrainImages,
                               workdir_->file("data/fashion_mnist/train_lmdb"));
    write_fashion_mnist_subset("t10k", kTestImages, workdir_->file("data/fashion_mnist/test_lmdb"));
  }
  static void TearDownTestSuite() { workdir_.reset(); }
  // Runs after the device check: a GPU instance without a GPU skips (or fails
  // under XTRAIN_REQUIRE_GPU=1) for that reason first.
  void SetUp() override {
    XTRAIN_SKIP_WITHOUT_FASHION_MNIST();
    ASSERT_TRUE(workdir_);
  }
  static std::unique_ptr<TempDir> workdir_;
};
std::unique_ptr<TempDir> LenetFashionMnist::workdir_;

XTRAIN_DEVICE_TEST_F(LenetFashionMnist, LibraryTrainsWellAboveChance) {
  NetParameter net = read_net_params_from_text_file(std::string(XTRAIN_SOURCE_DIR) +
                                                    "/models/lenet/lenet_train_test.prototxt");
  for (LayerParameter& layer : *net.mutable_layer()) {
    if (layer.type() != "Data") continue;
    const bool train = layer.include(0).phase() == TRAIN;
    layer.mutable_data_param()->set_source(
        workdir_->file(train ? "data/fashion_mnist/train_lmdb" : "data/fashion_mnist/test_lmdb"));
  }
  SolverParameter solver = read_solver_params_from_text_file(std::string(XTRAIN_SOURCE_DIR) +
                                                             "/models/lenet/lenet_solver.prototxt");
  solver.clear_net();
  *solver.mutable_net_param() = net;
  solver.set_max_iter(300);
  solver.set_test_iter(0, kTestImages / 100);
  solver.set_test_interval(300);
  solver.set_test_initialization(false);
  solver.set_snapshot(0);
  solver.set_snapshot_after_train(false);
  solver.set_display(0);
  SolverOptions options;
  options.verbose_nets = false;
  options.device = current_device();
  std::unique_ptr<Solver> trainer = create_solver(solver, options);
  trainer->solve();
  ASSERT_EQ(trainer->last_test_iter(), 300);
  float accuracy = -1;
  for (const auto& [name, value] : trainer->last_test_results()[0]) {
    if (name == "accuracy") accuracy = value;
  }
  // Chance is 0.1; 300 iterations of LeNet reach about 0.75 here.
  EXPECT_GT(accuracy, 0.65f);
  EXPECT_LT(trainer->smoothed_loss(), 1.0f);
}

double last_value(const std::string& output, const std::string& pattern) {
  std::smatch match;
  double value = -1;
  std::string::const_iterator start = output.begin();
  const std::regex re(pattern);
  while (std::regex_search(start, output.end(), match, re)) {
    value = std::stod(match[1]);
    start = match.suffix().first;
  }
  return value;
}

// The report xtrain writes beside the snapshots, as a browser shows it
// (headless Chromium): curves drawn, and their last points those of the log.
void expect_report_shows_the_log(const std::string& log, const std::string& report) {
  ASSERT_TRUE(std::filesystem::exists(report)) << report;
  const auto points = report_last_points(read_text_file(report));
  ASSERT_TRUE(points.count("train loss") && points.count("test #0 accuracy")) << report;
  const double loss = last_value(log, R"(Iteration \d+, loss = ([0-9.e+-]+))");
  const double accuracy = last_value(log, R"(Test net output #0: accuracy = ([0-9.e+-]+))");
  EXPECT_NEAR(points.at("train loss").value, loss, 1e-5 * std::max(1.0, loss));
  EXPECT_EQ(points.at("train loss").iteration, 100);
  EXPECT_NEAR(points.at("test #0 accuracy").value, accuracy, 1e-6);
  EXPECT_EQ(points.at("test #0 accuracy").iteration, 100);

  const std::string chromium = find_chromium();
  if (chromium.empty()) return;  // tools/report_render_test says why it skips
  std::string chromium_log;
  const cv::Mat image = render_page(chromium, report, report + ".png", &chromium_log);
  ASSERT_FALSE(image.empty()) << chromium_log;
  EXPECT_GT(non_white_pixels(image), image.rows * image.cols / 50);
  // The train loss curve (red) and test curves (blue) in the upper charts.
  EXPECT_GT(pixels_of_colour(image, 0xd6, 0x27, 0x28, 150, 800), 300);
  EXPECT_GT(pixels_of_colour(image, 0x1f, 0x77, 0xb4, 150, 800), 500);
}

XTRAIN_DEVICE_TEST_F(LenetFashionMnist, CaffeStockFilesTrainResumeAndTestThroughTheCli) {
  // A Caffe user's layout: examples/mnist/ with the stock files, run from the
  // root; only the LMDB sources, snapshot_prefix and solver_mode differ.
  const std::string fixtures = std::string(XTRAIN_SOURCE_DIR) + "/tests/fixtures/caffe_stock_lenet";
  std::filesystem::create_directories(workdir_->file("examples/mnist"));
  for (const char* name : {"lenet_solver.prototxt", "lenet_train_test.prototxt"}) {
    std::filesystem::copy_file(fixtures + "/" + name,
                               workdir_->file(std::string("examples/mnist/") + name),
                               std::filesystem::copy_options::overwrite_existing);
  }
  const std::string xtrain = tool_path("xtrain");
  const std::string on_device = current_device().is_gpu() ? " --gpu=0" : "";
  const ToolResult trained = run_tool(
      xtrain + " train --solver=examples/mnist/lenet_solver.prototxt --max_iter=100" + on_device,
      workdir_->path());
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("Iteration 100, loss = "), std::string::npos) << trained.output;
  EXPECT_NE(trained.output.find("Iteration 0, Testing net (#0)"), std::string::npos);
  const double accuracy = last_value(trained.output, R"(Test net output #0: accuracy = ([0-9.]+))");
  EXPECT_GT(accuracy, 0.5) << trained.output;
  EXPECT_TRUE(std::filesystem::exists(workdir_->file("snapshots/lenet_iter_100.caffemodel")));
  EXPECT_TRUE(std::filesystem::exists(workdir_->file("snapshots/lenet_iter_100.solverstate")));
  expect_report_shows_the_log(trained.output, workdir_->file("snapshots/lenet_report.html"));

  const ToolResult resumed =
      run_tool(xtrain +
                   " train --solver=examples/mnist/lenet_solver.prototxt --max_iter=120 "
                   "--snapshot=snapshots/lenet_iter_100.solverstate" +
                   on_device,
               workdir_->path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(std::filesystem::exists(workdir_->file("snapshots/lenet_iter_120.caffemodel")));

  const ToolResult tested =
      run_tool(xtrain +
                   " test --model=examples/mnist/lenet_train_test.prototxt "
                   "--weights=snapshots/lenet_iter_120.caffemodel --iterations=10" +
                   on_device,
               workdir_->path());
  ASSERT_EQ(tested.exit_code, 0) << tested.output;
  const double test_accuracy = last_value(tested.output, R"(\] accuracy = ([0-9.]+))");
  EXPECT_GT(test_accuracy, 0.5) << tested.output;
}

}  // namespace
}  // namespace xtrain::testing
